package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeModule lays out a module from name → content.
func writeModule(t testing.TB, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	files["cue.mod/module.cue"] = "module: \"example.com/t@v0\"\nlanguage: version: \"v0.17.0\"\n"
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const sweepModule = `package s

import "github.com/rigorbench/rigor/schema"

base: schema.#Experiment & {
	model: path: "/m.gguf"
	engine: {family: "ik_llama.cpp", source: path: "/bin"}
	bench: {p: 0, n: *64 | int}
	flags: {ngl: 99, ub: *32 | int, t: *4 | int, ctk: "f16"}
}
grid: base & {sweep: {bench: n: [64, 128], flags: {ub: [16, 64], t: [2]}}}
`

func TestLoad_sweep(t *testing.T) {
	root := writeModule(t, map[string]string{"experiments/s/s.cue": sweepModule})
	set, err := Load(Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Problems) > 0 {
		t.Fatalf("problems: %v", set.Problems[0])
	}
	var grid *Experiment
	for _, e := range set.Experiments {
		if e.ID == "s/grid" {
			grid = e
		}
	}
	if grid == nil {
		t.Fatal("no s/grid")
	}
	var ids []string
	for _, p := range grid.Points {
		ids = append(ids, p.ID)
	}
	want := []string{
		"s/grid[ub=16,t=2,bench.n=64]", "s/grid[ub=16,t=2,bench.n=128]",
		"s/grid[ub=64,t=2,bench.n=64]", "s/grid[ub=64,t=2,bench.n=128]",
	}
	if strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Errorf("points:\ngot  %q\nwant %q", ids, want)
	}
	p := grid.Points[1]
	var argv []string
	for _, a := range append(p.Bench, p.Flags...) {
		argv = append(argv, a.Argv()...)
	}
	if got, want := strings.Join(argv, " "), "-p 0 -n 128 -ngl 99 -ub 16 -ctk f16 -t 2"; got != want {
		t.Errorf("argv of %s = %q, want %q", p.ID, got, want)
	}
	if p.Spec.Flags["ub"] == nil || RenderValue(p.Spec.Flags["ub"]) != "16" {
		t.Errorf("decoded flags.ub = %v, want 16", p.Spec.Flags["ub"])
	}
	if sw := p.SweptMap(); RenderValue(sw["flags.ub"]) != "16" || RenderValue(sw["bench.n"]) != "128" {
		t.Errorf("SweptMap = %v", sw)
	}
	// Points differ, so do their digests; the same point loaded again has the same digest.
	if grid.Points[0].Digest == grid.Points[1].Digest {
		t.Error("two points share a digest")
	}
	set2, _ := Load(Options{Root: root, Patterns: []string{"s/grid"}})
	if set2.Experiments[0].Points[1].Digest != p.Digest {
		t.Error("digest changed between two loads")
	}
}

func TestLoad_digestIgnoresLayout(t *testing.T) {
	a := writeModule(t, map[string]string{"experiments/s/s.cue": sweepModule})
	reordered := `package s

import "github.com/rigorbench/rigor/schema"

// the same experiments, written differently
grid: base & {sweep: {flags: {t: [2], ub: [16, 64]}, bench: n: [64, 128]}}
base: schema.#Experiment & {
	flags: {ctk: "f16", t: *4 | int, ub: *32 | int, ngl: 99}
	bench: {n: *64 | int, p: 0}
	engine: {source: path: "/bin", family: "ik_llama.cpp"}
	model: path: "/m.gguf"
}
`
	b := writeModule(t, map[string]string{"experiments/s/a.cue": reordered})
	sa, _ := Load(Options{Root: a, Patterns: []string{"s/base"}})
	sb, _ := Load(Options{Root: b, Patterns: []string{"s/base"}})
	if len(sa.Experiments) != 1 || len(sb.Experiments) != 1 {
		t.Fatalf("loaded %d and %d experiments", len(sa.Experiments), len(sb.Experiments))
	}
	da, db := sa.Experiments[0].Points[0].Digest, sb.Experiments[0].Points[0].Digest
	if da != db {
		t.Errorf("reformatting changed the digest: %s vs %s", da, db)
	}
}

func TestLoad_oneBrokenDoesNotHideOthers(t *testing.T) {
	root := writeModule(t, map[string]string{
		"experiments/s/s.cue": sweepModule + "bad: base & {flags: nkvoo: 1}\nworse: base & {bench: p: 5}\n",
		"experiments/z/z.cue": "package z\n\nthis is not cue\n",
	})
	set, err := Load(Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	broken := map[string]bool{}
	for _, e := range set.Experiments {
		broken[e.ID] = e.Broken
	}
	for id, want := range map[string]bool{"s/base": false, "s/grid": false, "s/bad": true, "s/worse": true} {
		if got, ok := broken[id]; !ok || got != want {
			t.Errorf("%s: broken=%v (present %v), want %v", id, got, ok, want)
		}
	}
	var msgs []string
	for _, p := range set.Problems {
		msgs = append(msgs, p.Error())
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{`has no flag "nkvoo"`, "bench.p is set to 0", "z/z.cue:3:"} {
		if !strings.Contains(all, want) {
			t.Errorf("problems lack %q:\n%s", want, all)
		}
	}
	if len(set.Problems) != 3 {
		t.Errorf("%d problems, want 3 (each once):\n%s", len(set.Problems), all)
	}
}

// An experiment written without schema.#Experiment is still checked
// against it.
func TestLoad_withoutSchemaImport(t *testing.T) {
	root := writeModule(t, map[string]string{"experiments/s/s.cue": `package s

plain: {model: path: "/m.gguf", engine: {family: "llama.cpp", source: path: "/bin"}, flags: nkvoo: 1}
fine: {model: path: "/m.gguf", engine: {family: "llama.cpp", source: path: "/bin"}, flags: nkvo: 1}
`})
	set, err := Load(Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Problems) != 1 || !strings.Contains(set.Problems[0].Error(), `has no flag "nkvoo"`) {
		for _, p := range set.Problems {
			t.Log(p.Error())
		}
		t.Fatalf("want one problem about nkvoo, got %d", len(set.Problems))
	}
	for _, e := range set.Experiments {
		if e.ID == "s/fine" && (e.Broken || len(e.Points) != 1) {
			t.Errorf("s/fine: broken=%v points=%d", e.Broken, len(e.Points))
		}
	}
}

// TestLoad_release loads a module of three packages with and without
// Release: the same experiments, points, digests, positions and problems,
// the CUE values dropped, and Check called while they are there.
func TestLoad_release(t *testing.T) {
	broken := "package b\n\nimport \"github.com/rigorbench/rigor/schema\"\n\nx: schema.#Experiment & {model: path: \"/m.gguf\", engine: {family: \"ik_llama.cpp\", source: path: \"/bin\"}, flags: nkvo: \"0\"}\n"
	root := writeModule(t, map[string]string{
		"experiments/s/s.cue": sweepModule,
		"experiments/t/t.cue": strings.ReplaceAll(sweepModule, "package s", "package t"),
		"experiments/b/b.cue": broken,
	})
	kept, err := Load(Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	var checked []string
	released, err := Load(Options{Root: root, Release: true, Check: func(s *Set, e *Experiment) {
		if !e.Value.Exists() {
			t.Errorf("Check(%s): the CUE value is gone already", e.ID)
		}
		checked = append(checked, e.ID)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(kept.Experiments) != len(released.Experiments) || len(kept.Experiments) < 5 {
		t.Fatalf("%d experiments kept, %d released", len(kept.Experiments), len(released.Experiments))
	}
	for i, a := range kept.Experiments {
		b := released.Experiments[i]
		if a.ID != b.ID || a.Broken != b.Broken || a.Pos.Position() != b.Pos.Position() || len(a.Points) != len(b.Points) {
			t.Errorf("experiment %d: kept %s broken=%v at %v with %d points, released %s broken=%v at %v with %d points",
				i, a.ID, a.Broken, a.Pos.Position(), len(a.Points), b.ID, b.Broken, b.Pos.Position(), len(b.Points))
			continue
		}
		if b.Value.Exists() || b.Requires.Exists() {
			t.Errorf("%s: the CUE values are kept", b.ID)
		}
		for j, p := range a.Points {
			q := b.Points[j]
			if p.ID != q.ID || p.Digest != q.Digest || q.Value.Exists() {
				t.Errorf("point %s %s: released %s %s (value kept: %v)", p.ID, p.Digest, q.ID, q.Digest, q.Value.Exists())
			}
		}
	}
	if fmt.Sprint(kept.Problems) != fmt.Sprint(released.Problems) || len(released.Problems) == 0 {
		t.Errorf("problems differ:\n%v\n%v", kept.Problems, released.Problems)
	}
	if want := len(kept.Experiments) - 1; len(checked) != want {
		t.Errorf("Check called for %v, want the %d experiments without problems", checked, want)
	}
}

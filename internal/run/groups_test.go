package run

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rigorbench/rigor/internal/engine/llamacpp"
	"github.com/rigorbench/rigor/internal/spec"
)

// One llama-bench process serves a sweep only when every axis is a flag
// llama-bench sweeps itself.
func TestGroups(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"cue.mod/module.cue": "module: \"example.com/g@v0\"\nlanguage: version: \"v0.17.0\"\n",
		"experiments/g/g.cue": `package g

import "github.com/rigorbench/rigor/schema"

_b: schema.#Experiment & {
	model: path: "/m.gguf"
	engine: {family: "ik_llama.cpp", source: path: "/bin"}
	bench: {p: 32, n: *16 | int}
	flags: {ngl: 99, ub: *32 | int, t: *2 | int, w: *1 | int}
}
ubt:   _b & {sweep: flags: {ub: [16, 32], t: [1, 2]}}
warm:  _b & {sweep: flags: w: [0, 1]}
gen:   _b & {sweep: bench: n: [16, 32]}
envs:  _b & {sweep: env: X: ["a", "b"]}
mixed: _b & {sweep: {flags: ub: [16, 32], env: X: ["a", "b"]}}
`,
	}
	for name, content := range files {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(content), 0o644)
	}
	set, err := spec.Load(spec.Options{Root: root})
	if err != nil || len(set.Problems) > 0 {
		t.Fatalf("load: %v %v", err, set.Problems)
	}
	want := map[string]int{"g/ubt": 1, "g/warm": 2, "g/gen": 2, "g/envs": 2, "g/mixed": 4}
	for _, x := range set.Experiments {
		n, ok := want[x.ID]
		if !ok {
			continue
		}
		if got := len(Groups(llamacpp.Engine{Fork: x.Spec.Engine.Family}, x.Points)); got != n {
			t.Errorf("%s (%d points): %d executions, want %d", x.ID, len(x.Points), got, n)
		}
	}
}

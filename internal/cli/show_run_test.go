package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestShowPlanIsWhatRunStarts: for an experiment, a point of a sweep the
// engine runs in one process, and a point of a sweep it does not, the
// bench processes 'rigor show ID --json' plans are exactly the ones
// 'rigor run ID' starts, argv for argv, as the engine logs them (issue 24
// item 15: show 'X[ub=16]' printed -ub 16,32 while run started -ub 16).
func TestShowPlanIsWhatRunStarts(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("RIGOR_CACHE", filepath.Join(dir, "cache"))
	t.Setenv("RIGOR_RIG_FILE", filepath.Join(dir, "rig.json"))
	mod := filepath.Join(dir, "mod")
	log := filepath.Join(mod, "bin", "argv.log")
	files := map[string]string{
		"rig.json":               `{"hostname": "ci", "accelerators_per_node": 0, "host_processor_model_name": "Test CPU", "host_processor_core_count": 2, "host_memory_capacity_gb": 16, "operating_system": "Debian GNU/Linux 12", "kernel": "6.1.0", "arch": "linux/amd64"}`,
		"mod/cue.mod/module.cue": "module: \"example.com/m@v0\"\nlanguage: version: \"v0.17.0\"\n",
		"mod/models/m.gguf":      "GGUF pretend model",
		// The engine logs its argv and $A, one a line and a blank line
		// after, and fails: every run started is a failed record.
		"mod/bin/llama-bench": "#!/bin/sh\n{ printf '%s\\n' \"$0\" \"$@\" \"A=$A\"; echo; } >> \"$(dirname \"$0\")/argv.log\"\nexit 1\n",
		"mod/experiments/s/s.cue": `package s

import "github.com/rigorbench/rigor/schema"

_base: schema.#Experiment & {
	model: path: "models/m.gguf"
	engine: {family: "llama.cpp", source: path: "bin"}
	bench: {p: 16, n: 8, r: 2}
}
one: _base
ub: _base & {sweep: flags: {ub: [16, 32], t: [1, 2]}}
env: _base & {sweep: env: A: ["1", "2"]}
`,
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rigor := func(args ...string) (string, int) {
		var out, errb bytes.Buffer
		code := Run(append([]string{"-C", mod}, args...), &out, &errb)
		return out.String() + errb.String(), code
	}
	if out, code := rigor("lock", "s"); code != 0 {
		t.Fatalf("lock: exit %d\n%s", code, out)
	}
	for _, ids := range [][]string{
		{"s/one"}, {"s/ub"}, {"s/ub[ub=16,t=2]"}, {"s/env"}, {"s/env[env.A=2]"},
	} {
		var want [][]string
		for _, id := range ids {
			var out bytes.Buffer
			if code := Run([]string{"-C", mod, "show", id, "--json"}, &out, &out); code != 0 {
				t.Fatalf("show %s: exit %d\n%s", id, code, out.String())
			}
			var shown showOut
			if err := json.Unmarshal(out.Bytes(), &shown); err != nil {
				t.Fatal(err)
			}
			for _, p := range shown.Points {
				for _, proc := range p.Plan.Processes {
					// A plan several points share is shown with each.
					argv := append(slices.Clone(proc.Argv), "A="+proc.Env["A"])
					if proc.Role == "bench" && !slices.ContainsFunc(want, func(a []string) bool { return slices.Equal(a, argv) }) {
						want = append(want, argv)
					}
				}
			}
		}
		os.Remove(log)
		if out, code := rigor(append([]string{"run", "--no-commit"}, ids...)...); code != 2 {
			t.Fatalf("run %v: exit %d, want 2 (failed runs)\n%s", ids, code, out)
		}
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		var got [][]string
		for _, argv := range strings.Split(strings.TrimSuffix(string(b), "\n\n"), "\n\n") {
			got = append(got, strings.Split(argv, "\n"))
		}
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("%v: show plans\n  %q\nrun started\n  %q", ids, want, got)
		}
	}
}

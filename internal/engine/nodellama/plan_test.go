package nodellama

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/engine/enginetest"
	"github.com/rigorbench/rigor/internal/spec"
)

const planExperiments = `
_base: schema.#Experiment & {
	model: path: "/models/tiny.gguf"
	engine: {family: "node-llama-cpp", source: npm: "3.22.1"}
}

plain: _base

full: _base & {
	bench: {p: 32, n: 16, r: 3, pg: [[8, 4], [16, 2]], d: 64}
	flags: {t: 2, b: 64, c: 1024, ngl: 0, w: 2}
	extraArgs: ["--api", "public"]
}

swept: _base & {
	bench: {p: 32, r: 2}
	sweep: {flags: t: [1, 2], bench: n: [8, 16]}
}

gp: _base & {bench: gp: [[32, 8]]}

reservedR: _base & {extraArgs: ["-r", "9"]}

`

func TestPlan_Argv(t *testing.T) {
	points := enginetest.LoadPackage(t, "nl", planExperiments)
	in := engine.Inputs{BinDir: "/cache/engines/node-llama-cpp/abc", Model: "/models/tiny.gguf"}
	cases := []struct {
		id   string
		in   engine.Inputs
		want string
	}{
		{"nl/plain", in, "node /cache/engines/node-llama-cpp/abc/rigor-bench.mjs --model /models/tiny.gguf"},
		{"nl/plain", engine.Inputs{}, "node <engine>/rigor-bench.mjs --model /models/tiny.gguf"},
		{"nl/full", in, "node /cache/engines/node-llama-cpp/abc/rigor-bench.mjs --model /models/tiny.gguf -p 32 -n 16 -r 3 -pg 8,4 -pg 16,2 -d 64 --threads 2 --batch-size 64 --context-size 1024 --gpu-layers 0 --warmup 2 --api public"},
		{"nl/swept[t=1,bench.n=8]", in, "node /cache/engines/node-llama-cpp/abc/rigor-bench.mjs --model /models/tiny.gguf -p 32 -n 8 -r 2 --threads 1"},
		{"nl/swept[t=2,bench.n=16]", in, "node /cache/engines/node-llama-cpp/abc/rigor-bench.mjs --model /models/tiny.gguf -p 32 -n 16 -r 2 --threads 2"},
	}
	for _, c := range cases {
		p, ok := points[c.id]
		if !ok {
			t.Fatalf("no point %s; have %v", c.id, keys(points))
		}
		plan, err := Engine{}.Plan(p, c.in)
		if err != nil {
			t.Fatalf("Plan(%s): %v", c.id, err)
		}
		if len(plan.Processes) != 1 {
			t.Fatalf("Plan(%s): got %d processes, want 1", c.id, len(plan.Processes))
		}
		pr := plan.Processes[0]
		if got := strings.Join(pr.Argv, " "); got != c.want {
			t.Errorf("Plan(%s) argv:\ngot  %s\nwant %s", c.id, got, c.want)
		}
		if pr.Role != "bench" || pr.Dir != c.in.BinDir || plan.Family != spec.FamilyNodeLlama {
			t.Errorf("Plan(%s): got role %q dir %q family %q", c.id, pr.Role, pr.Dir, plan.Family)
		}
	}
}

func TestPlan_Rejects(t *testing.T) {
	points := enginetest.LoadPackage(t, "nl", planExperiments)
	_, err := Engine{}.Plan(points["nl/gp"], engine.Inputs{})
	if err == nil || !strings.Contains(err.Error(), "bench.gp: not supported by node-llama-cpp") {
		t.Errorf("Plan(gp): got %v, want bench.gp not supported", err)
	}
	_, err = Engine{}.Plan(points["nl/reservedR"], engine.Inputs{})
	var re *engine.ReservedArgError
	if !errors.As(err, &re) || re.Arg != "-r" {
		t.Errorf("Plan(reservedR): got %v, want a ReservedArgError for -r", err)
	}
}

// TestPlan_RunnerParsesArgv feeds every planned argv to the runner's own
// argument parser (in node, without node-llama-cpp: the runner imports it
// only when it runs), so the plan and the runner cannot drift apart.
func TestPlan_RunnerParsesArgv(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		enginetest.NeedTool(t, "node")
	}
	dir := t.TempDir()
	runner := filepath.Join(dir, RunnerFile)
	if err := os.WriteFile(runner, runnerJS, 0o644); err != nil {
		t.Fatal(err)
	}
	parse := func(args []string) (map[string]any, string) {
		t.Helper()
		a, _ := json.Marshal(args)
		script := `import {parseArgs, tests, label} from ` + jsString("file://"+filepath.ToSlash(runner)) + `;
try { const o = parseArgs(JSON.parse(process.argv[1])); o.labels = tests(o).map(label); console.log(JSON.stringify(o)); }
catch (e) { console.log(JSON.stringify({error: e.message})); }`
		out, err := exec.Command(node, "--input-type=module", "-e", script, string(a)).CombinedOutput()
		if err != nil {
			t.Fatalf("node: %v: %s", err, out)
		}
		var m map[string]any
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("runner parse output %q: %v", out, err)
		}
		if e, ok := m["error"].(string); ok {
			return nil, e
		}
		return m, ""
	}
	points := enginetest.LoadPackage(t, "nl", planExperiments)
	plan, err := Engine{}.Plan(points["nl/full"], engine.Inputs{BinDir: dir, Model: "/models/tiny.gguf"})
	if err != nil {
		t.Fatal(err)
	}
	o, perr := parse(plan.Processes[0].Argv[2:])
	if perr != "" {
		t.Fatalf("runner rejected the planned argv %q: %s", plan.Processes[0].Argv, perr)
	}
	got, _ := json.Marshal(o)
	want := `{"api":"public","batch":[64],"ctx":[1024],"d":[64],"labels":["pp32 @ d64","tg16 @ d64","pp8+tg4 @ d64","pp16+tg2 @ d64"],"model":"/models/tiny.gguf","n":[16],"ngl":[0],"p":[32],"pg":[[8,4],[16,2]],"r":3,"threads":[2],"warmup":2}`
	if string(got) != want {
		t.Errorf("runner parsed the planned argv as\n%s\nwant\n%s", got, want)
	}

	// Defaults, comma lists (a sweep within one process) and errors.
	for _, c := range []struct {
		args []string
		want string // a JSON subset, or the error
	}{
		{[]string{"--model", "m"}, `"labels":["pp512","tg128"]`},
		{[]string{"--model", "m", "-p", "0", "-n", "8,16", "--threads", "1,2"}, `"labels":["tg8","tg16"]`},
		{[]string{"--model", "m", "-p", "0", "-n", "0", "-pg", "4,2"}, `"labels":["pp4+tg2"]`},
		{[]string{"--model", "m", "-x"}, "unknown argument: -x"},
		{[]string{"--model", "m", "-p"}, "invalid parameter for argument: -p (missing value)"},
		{[]string{"--model", "m", "-p", "1.5"}, `invalid parameter for argument: -p ("1.5" is not a list of integers)`},
		{[]string{"--model", "m", "-r", "0"}, "invalid parameter for argument: -r (0 is below 1)"},
		{[]string{"--model", "m", "-pg", "4"}, "invalid parameter for argument: -pg (want pp,tg)"},
		{[]string{"--model", "m", "--api", "fast"}, "invalid parameter for argument: --api (want addon or public)"},
		{[]string{"-p", "1"}, "invalid parameter for argument: --model (required)"},
	} {
		o, perr := parse(c.args)
		got := perr
		if perr == "" {
			b, _ := json.Marshal(o)
			got = string(b)
		}
		if !strings.Contains(got, c.want) {
			t.Errorf("runner args %q: got %s, want %s", c.args, got, c.want)
		}
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

package nodellama

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/engine/enginetest"
	"github.com/rigorbench/rigor/internal/gguf"
	"github.com/rigorbench/rigor/internal/results"
)

// The version the integration test installs from the npm registry.
const testVersion = "3.22.1"

// realInstall installs node-llama-cpp from the registry into cache, or
// skips the test when node or npm is missing.
func realInstall(t *testing.T, cache string) *Installation {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			enginetest.NeedTool(t, tool)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	inst, err := Install(ctx, InstallOptions{Cache: cache, Version: testVersion, Progress: func(s string) { t.Log(s) }})
	if err != nil {
		var ie *InstallError
		if errors.As(err, &ie) {
			t.Fatalf("Install: %v\nhint: %s\nnpm: %s", err, ie.Advice, ie.Output)
		}
		t.Fatalf("Install: %v", err)
	}
	return inst
}

// writeModel writes a synthetic model.
func writeModel(t testing.TB, path string, s gguf.SyntheticSpec) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := gguf.WriteSynthetic(f, s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// tinySpec has the shape of fixtures/models/tiny-llama.gguf.
var tinySpec = gguf.SyntheticSpec{Arch: "llama", Layers: 2, Embd: 256, Heads: 4, KVHeads: 4, FF: 512, Vocab: 512, Ctx: 2048, Type: "f16"}

// runPlanned runs a plan's bench process as rigor will: exactly its argv,
// in its directory.
func runPlanned(t *testing.T, p engine.Process) (stdout, stderr []byte, exit int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.Argv[0], p.Argv[1:]...)
	cmd.Dir = p.Dir
	if len(p.Env) > 0 {
		cmd.Env = os.Environ()
		for k, v := range p.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("running %v: %v", p.Argv, err)
	}
	return o.Bytes(), e.Bytes(), cmd.ProcessState.ExitCode()
}

// TestIntegration installs node-llama-cpp for real, writes a synthetic
// model, plans and runs the runner, and parses what it printed; then a
// model the engine refuses. It needs node, npm and the npm registry.
func TestIntegration(t *testing.T) {
	cache := t.TempDir()
	inst := realInstall(t, cache)
	if inst.Cached || inst.NodeVersion == "" || inst.Packages[Package].Integrity == "" {
		t.Errorf("fresh install: got Cached %v NodeVersion %q packages %+v", inst.Cached, inst.NodeVersion, inst.Packages)
	}
	// The lock will pin what was just installed: a second Install with
	// those integrities is a different key (pinned), installs again… so
	// check the cached path with the same (empty) pins instead.
	again, err := Install(context.Background(), InstallOptions{Cache: cache, Version: testVersion})
	if err != nil || !again.Cached || again.Dir != inst.Dir {
		t.Fatalf("second Install: got %+v, %v; want the cached entry", again, err)
	}

	dir := t.TempDir()
	model := filepath.Join(dir, "tiny.gguf")
	writeModel(t, model, tinySpec)
	points := enginetest.LoadPackage(t, "nl", `
run: schema.#Experiment & {
	model: path: "/unused.gguf"
	engine: {family: "node-llama-cpp", source: npm: "3.22.1"}
	bench: {p: 32, n: 16, r: 2}
	flags: {t: 1, w: 1}
}
`)
	plan, err := Engine{}.Plan(points["nl/run"], engine.Inputs{BinDir: inst.Dir, Model: model})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	stdout, stderr, exit := runPlanned(t, plan.Processes[0])
	t.Logf("runner took %v", time.Since(start).Round(time.Millisecond))
	o := ParseOutput(stdout, stderr, exit)
	if o.Status != results.StatusOK {
		t.Fatalf("runner: status %s: %s\nstderr:\n%s\nstdout:\n%s", o.Status, o.Error, stderr, stdout)
	}
	var got []string
	for _, m := range o.Metrics {
		got = append(got, m.Key())
		if len(m.Samples) != 2 || m.Value <= 0 || math.IsInf(m.Value, 0) {
			t.Errorf("%s: got value %v samples %v, want 2 positive samples", m.Key(), m.Value, m.Samples)
		}
	}
	want := "tokSPrompt pp32|engineTokSPrompt pp32|tokSOut tg16|engineTokSOut tg16"
	if strings.Join(got, "|") != want {
		t.Errorf("metrics: got %s, want %s", strings.Join(got, "|"), want)
	}
	for _, r := range o.Rows {
		if r.ModelType != "llama ?B F16" || r.ModelNParams != 1574144 || r.NThreads != 1 || r.Fields["node_llama_cpp_version"] != testVersion {
			t.Errorf("row %s: got type %q params %d threads %d version %v", r.Test, r.ModelType, r.ModelNParams, r.NThreads, r.Fields["node_llama_cpp_version"])
		}
		// Where the time outside llama_decode went: one call per prompt
		// batch and per generated token, and a figure per repetition.
		calls, _ := number(r.Fields["eval_calls"])
		idle, _ := number(r.Fields["idle_call_ns"])
		if want := float64(min(r.NPrompt, 1) + r.NGen); calls != want || idle <= 0 || len(sampleList(r, "outside_samples_ns")) != 2 {
			t.Errorf("row %s: eval_calls %v (want %v), idle_call_ns %v, outside_samples_ns %v", r.Test, r.Fields["eval_calls"], want, r.Fields["idle_call_ns"], r.Fields["outside_samples_ns"])
		}
		if strings.Contains(string(stderr), "n_tokens == 0") || strings.Contains(string(stderr), "failed to decode") {
			t.Errorf("the empty calls' complaints reached stderr:\n%s", stderr)
		}
		if _, err := os.Stat("/proc/self/task"); err == nil && len(sampleList(r, "sched_wait_samples_ns")) != 2 {
			t.Errorf("row %s: sched_wait_samples_ns %v, want 2 (Linux)", r.Test, r.Fields["sched_wait_samples_ns"])
		}
	}
	// The figures agree within Agreement, or the outcome says why (no
	// timing is asserted: a busy machine passes with its reason).
	checkExplained(t, o)
	for _, w := range o.Warnings {
		t.Log(w)
	}

	// A model the engine refuses: a failed outcome that says why.
	bad := filepath.Join(dir, "notgguf.gguf")
	if err := os.WriteFile(bad, []byte("this is not a model\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, err = Engine{}.Plan(points["nl/run"], engine.Inputs{BinDir: inst.Dir, Model: bad})
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, exit = runPlanned(t, plan.Processes[0])
	o = ParseOutput(stdout, stderr, exit)
	wantErr := fmt.Sprintf("failed to load model '%s': Invalid GGUF magic", bad)
	if o.Status != results.StatusFailed || !strings.HasPrefix(o.Error, wantErr) {
		t.Errorf("refused model: got %s %q, want failed %q…", o.Status, o.Error, wantErr)
	}
}

// TestMeasure is the measurement behind BENCHMARKS.md's node-llama-cpp
// section; it runs only with RIGOR_NODELLAMA_MEASURE=1:
//
//	RIGOR_NODELLAMA_MEASURE=1 go test -run TestMeasure -v -timeout 30m ./engine/nodellama
//
// RIGOR_NODELLAMA_CACHE names an engine cache to reuse (default: a
// temporary one); RIGOR_NODELLAMA_ROUNDS the rounds (default 5). On the
// quick start's two models (tiny and small, one thread, pp32 and tg16, 5
// repetitions after a warm-up) each round runs every variant once, in
// turn, starting each round one variant further (the order matters on a
// busy machine), so that load that comes and goes is shared: the runner as
// rigor plans it (addon), the same with libuv's pool at one thread
// (addon+pool1; node's default is four) and the public sequence API. Each run prints the 1-minute load, the
// runner's tok/s and llama.cpp's (means of the repetitions), their ratio,
// the time outside llama_decode per call into node-llama-cpp and the time
// the runner's threads waited for a CPU per repetition; the end prints the
// median and the lowest ratio over the rounds.
func TestMeasure(t *testing.T) {
	if os.Getenv("RIGOR_NODELLAMA_MEASURE") == "" {
		t.Skip("set RIGOR_NODELLAMA_MEASURE=1 to measure")
	}
	cache := os.Getenv("RIGOR_NODELLAMA_CACHE")
	if cache == "" {
		cache = t.TempDir()
	}
	rounds := 5
	if n, err := strconv.Atoi(os.Getenv("RIGOR_NODELLAMA_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	inst := realInstall(t, cache)
	dir := t.TempDir()
	models := []struct {
		name string
		s    gguf.SyntheticSpec
	}{
		{"tiny", tinySpec},
		{"small", gguf.SyntheticSpec{Arch: "llama", Layers: 8, Embd: 512, Heads: 8, KVHeads: 8, FF: 1536, Vocab: 4096, Ctx: 2048, Type: "f16"}},
	}
	variants := []struct {
		name string
		args []string
		env  []string
	}{
		{"addon", []string{"--api", "addon"}, nil},
		{"addon+pool1", []string{"--api", "addon"}, []string{"UV_THREADPOOL_SIZE=1"}},
		{"public", []string{"--api", "public"}, nil},
	}
	t.Logf("node %s, node-llama-cpp %s, runner %s, %d rounds", inst.NodeVersion, inst.Version, RunnerDigest()[:12], rounds)
	for _, m := range models {
		path := filepath.Join(dir, m.name+".gguf")
		writeModel(t, path, m.s)
		t.Logf("%s: %s, %d bytes", m.name, m.s.Name(), fileSize(path))
	}
	t.Logf("%-5s %-5s %-11s %-5s %5s %12s %12s %6s %14s %11s %14s", "round", "model", "variant", "test", "load", "runner tok/s", "engine tok/s", "ratio", "outside/call", "empty call", "CPU wait/rep")
	ratios := map[string][]float64{}
	var keys []string
	for round := 1; round <= rounds; round++ {
		for _, m := range models {
			for i := range variants {
				v := variants[(i+round-1)%len(variants)]
				load := loadAvg()
				argv := append([]string{"node", inst.Runner, "--model", filepath.Join(dir, m.name+".gguf"), "-p", "32", "-n", "16", "-r", "5",
					"--threads", "1", "--warmup", "1"}, v.args...)
				stdout, stderr, exit := runPlanned(t, engine.Process{Dir: inst.Dir, Argv: argv, Env: envMap(v.env)})
				o := ParseOutput(stdout, stderr, exit)
				if o.Status != results.StatusOK {
					t.Fatalf("%v: %s %s\n%s", argv, o.Status, o.Error, stderr)
				}
				checkExplained(t, o)
				for _, r := range o.Rows {
					rm := r.Metrics()
					em, ok := engineMetric(r)
					if len(rm) == 0 || !ok {
						continue
					}
					ratio := em.Value / rm[0].Value
					key := m.name + " " + v.name + " " + r.Test
					if _, seen := ratios[key]; !seen {
						keys = append(keys, key)
					}
					ratios[key] = append(ratios[key], ratio)
					perCall, idle, wait := "-", "-", "-"
					if calls, ok := number(r.Fields["eval_calls"]); ok && calls > 0 {
						perCall = fmt.Sprintf("%.0f µs", meanOf(sampleList(r, "outside_samples_ns"))/calls/1e3)
					}
					if ns, ok := number(r.Fields["idle_call_ns"]); ok {
						idle = fmt.Sprintf("%.0f µs", ns/1e3)
					}
					if w := sampleList(r, "sched_wait_samples_ns"); len(w) > 0 {
						wait = fmt.Sprintf("%.2f ms", meanOf(w)/1e6)
					}
					t.Logf("%-5d %-5s %-11s %-5s %5s %12.0f %12.0f %6.2f %14s %11s %14s", round, m.name, v.name, r.Test, load, rm[0].Value, em.Value, ratio, perCall, idle, wait)
				}
			}
		}
	}
	t.Logf("%-24s %8s %8s  (engine tok/s over runner tok/s, %d rounds)", "model variant test", "median", "lowest", rounds)
	for _, k := range keys {
		r := ratios[k]
		t.Logf("%-24s %8.2f %8.2f", k, median(r), slices.Min(r))
	}
}

// loadAvg is the 1-minute load average, "?" where unreadable.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

// envMap turns NAME=value pairs into a process environment map.
func envMap(kv []string) map[string]string {
	if len(kv) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, e := range kv {
		k, v, _ := strings.Cut(e, "=")
		out[k] = v
	}
	return out
}

func fileSize(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return -1
	}
	return fi.Size()
}

func median(s []float64) float64 {
	c := append([]float64(nil), s...)
	sort.Float64s(c)
	if len(c) == 0 {
		return 0
	}
	return c[len(c)/2]
}

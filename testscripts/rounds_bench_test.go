package testscripts

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/engine/llamacpp/testengine"
	"github.com/rigorbench/rigor/internal/hoststate"
)

// TestBenchRoundsFalsePositives measures what BENCHMARKS.md reports for
// issue 18: the rate of false "better"/"worse" verdicts of A-vs-A
// comparisons (two experiments with the same configuration, the cmake-built
// test engine) while a load generator turns a CPU hog on and off at random,
// with one run a side and with --rounds 5. It asserts nothing about the
// figures; it prints them. Opt in, as it takes minutes:
//
//	RIGOR_BENCH_ROUNDS=20 [RIGOR_BENCH_PN=p,n] go test ./testscripts -run TestBenchRoundsFalsePositives -v -timeout 40m
func TestBenchRoundsFalsePositives(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("RIGOR_BENCH_ROUNDS"))
	if n <= 0 {
		t.Skip("set RIGOR_BENCH_ROUNDS=N to measure N comparisons each way")
	}
	if _, err := exec.LookPath("cmake"); err != nil {
		t.Skip("cmake is not installed")
	}
	work := t.TempDir()
	bin := filepath.Join(work, "rigor")
	build := exec.Command("go", "build", "-o", bin, "../cmd/rigor")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building rigor: %v\n%s", err, out)
	}
	if _, err := testengine.Write(filepath.Join(work, "engine"), testengine.Options{}); err != nil {
		t.Fatal(err)
	}
	// The workload: RIGOR_BENCH_PN="p,n" (default 64,32: a few
	// milliseconds of work per repetition).
	pn := strings.Split(os.Getenv("RIGOR_BENCH_PN")+",", ",")
	if pn[0] == "" {
		pn = []string{"64", "32"}
	}
	mod := filepath.Join(work, "mod")
	files := map[string]string{
		"cue.mod/module.cue": "module: \"example.com/mod@v0\"\nlanguage: version: \"v0.17.0\"\n",
		"models/m.gguf":      "GGUF pretend model bytes\n",
		"experiments/aa/aa.cue": `package aa

import "github.com/rigorbench/rigor/schema"

_base: schema.#Experiment & {
	model: path: "models/m.gguf"
	engine: {family: "llama.cpp", source: {git: "../engine", ref: "v2"}}
	bench: {p: PP, n: NN, r: 5}
	flags: {ngl: 0, t: 1}
}
a: _base
b: _base
`,
	}
	files["experiments/aa/aa.cue"] = strings.NewReplacer("PP", pn[0], "NN", pn[1]).Replace(files["experiments/aa/aa.cue"])
	for name, body := range files {
		p := filepath.Join(mod, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "HOME="+work, "XDG_CACHE_HOME="+filepath.Join(work, ".cache"),
		"RIGOR_CACHE="+filepath.Join(work, ".cache", "rigor"), "CUE_CACHE_DIR="+filepath.Join(work, ".cache", "cue"), "NO_COLOR=1")
	run := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		if args[0] == "rigor" {
			cmd.Path = bin
		}
		cmd.Dir, cmd.Env = mod, env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
		}
		return stdout.Bytes()
	}
	run("git", "init", "-q")
	run("git", "config", "user.email", "t@example.com")
	run("git", "config", "user.name", "tester")
	run("rigor", "lock", "aa")
	run("rigor", "run", "aa/a", "--no-commit") // builds the engine

	// The load generator: a CPU hog (one core) on and off for random
	// spells of 0.2–3 s each, from a fixed seed; its spells are kept to
	// tell which runs it overlapped.
	gen := &hogLog{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(18, 5))
		spell := func() time.Duration { return time.Duration(200+rng.IntN(2800)) * time.Millisecond }
		for {
			select {
			case <-stop:
				return
			case <-time.After(spell()):
			}
			hog := exec.Command("sh", "-c", "while :; do :; done")
			hog.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := hog.Start(); err != nil {
				return
			}
			i := gen.on(time.Now())
			select {
			case <-stop:
			case <-time.After(spell()):
			}
			syscall.Kill(-hog.Process.Pid, syscall.SIGKILL)
			hog.Wait()
			gen.off(i, time.Now())
		}
	}()

	type verdicts struct{ compared, false, anyFalse, comparisons int }
	tally := map[string]*verdicts{"one run a side": {}, "--rounds 5": {}}
	warned, differed, differedWarned := 0, 0, 0
	var loads []float64
	diff := func(mode string) (*benchDiff, []string) {
		out := run("rigor", "diff", "aa/a", "aa/b", "--format", "json")
		if f := os.Getenv("RIGOR_BENCH_DUMP"); f != "" {
			fh, _ := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			fh.Write(out)
			fh.Close()
		}
		var d benchDiff
		if err := json.Unmarshal(out, &d); err != nil {
			t.Fatalf("diff --format json: %v\n%s", err, out)
		}
		v := tally[mode]
		v.comparisons++
		anyFalse := false
		var verdicts []string
		for _, tb := range d.Tables {
			for _, r := range tb.Rows {
				v.compared++
				verdicts = append(verdicts, tb.Metric+" "+tb.Test+" "+r.Verdict+" "+r.DecidedBy)
				if r.Verdict == "better" || r.Verdict == "worse" {
					v.false++
					anyFalse = true
				}
			}
		}
		if anyFalse {
			v.anyFalse++
		}
		return &d, verdicts
	}
	start := time.Now()
	for i := range n {
		// One run a side.
		run("rigor", "run", "aa/a", "--no-commit")
		run("rigor", "run", "aa/b", "--no-commit")
		d, vs := diff("one run a side")
		recA, recB := latest(t, mod, "a"), latest(t, mod, "b")
		hogA, hogB := gen.share(recA.Start, recA.End), gen.share(recB.Start, recB.End)
		loads = append(loads, recA.Machine.Peak.Load1, recB.Machine.Peak.Load1)
		machineWarning := false
		var named []string
		for _, w := range d.Warnings {
			if strings.Contains(w.Message, "machine") {
				named = append(named, w.Message)
			}
			if strings.Contains(w.Message, "machine states") {
				machineWarning = true
			}
		}
		if machineWarning {
			warned++
		}
		// The hog ran during most of one run and little of the other.
		if (hogA > 0.5) != (hogB > 0.5) {
			differed++
			if machineWarning {
				differedWarned++
			}
		}
		t.Logf("%2d one run a side: hog %.0f%% vs %.0f%% of the run, other cores %.2f vs %.2f, engine+rigor CPU %.2f vs %.2f of the wall, machine warning %v: %s",
			i+1, 100*hogA, 100*hogB, *recA.Machine.OtherCores, *recB.Machine.OtherCores,
			recA.Machine.EngineCPUSeconds/recA.Machine.WallSeconds, recB.Machine.EngineCPUSeconds/recB.Machine.WallSeconds,
			machineWarning, strings.Join(vs, "; "))
		for _, w := range named {
			t.Logf("   warning: %s", w)
		}

		// Five rounds, in one invocation.
		run("rigor", "run", "aa/a", "aa/b", "--rounds", "5", "--no-commit")
		_, vs = diff("--rounds 5")
		t.Logf("%2d --rounds 5: %s", i+1, strings.Join(vs, "; "))
	}
	close(stop)
	wg.Wait()
	sort.Float64s(loads)
	for _, mode := range []string{"one run a side", "--rounds 5"} {
		v := tally[mode]
		t.Logf("%s: %d comparisons, %d metric verdicts, %d false better/worse (%.1f%%); comparisons with any false verdict: %d (%.1f%%)",
			mode, v.comparisons, v.compared, v.false, 100*float64(v.false)/float64(max(v.compared, 1)), v.anyFalse, 100*float64(v.anyFalse)/float64(max(v.comparisons, 1)))
	}
	t.Logf("one run a side: the hog ran during most of one run and little of the other in %d of %d comparisons; diff named the machine states in %d of those (in %d comparisons overall)",
		differed, n, differedWarned, warned)
	t.Logf("load1 at its peak during the runs: min %.1f, median %.1f, max %.1f; hog on %.0f%% of the time; %s in all",
		loads[0], loads[len(loads)/2], loads[len(loads)-1], 100*gen.share(start, time.Now()), time.Since(start).Round(time.Second))
}

type benchDiff struct {
	Tables []struct {
		Metric string `json:"metric"`
		Test   string `json:"test"`
		Rows   []struct {
			Verdict   string  `json:"verdict"`
			DecidedBy string  `json:"decidedBy"`
			Delta     float64 `json:"deltaPercent"`
			P         float64 `json:"p"`
		} `json:"rows"`
	} `json:"tables"`
	Warnings []struct {
		Message string `json:"message"`
	} `json:"warnings"`
}

type benchRecord struct {
	ID         string           `json:"id"`
	Start, End time.Time        `json:"-"`
	StartS     time.Time        `json:"start"`
	EndS       time.Time        `json:"end"`
	Machine    *hoststate.State `json:"machine"`
}

// latest reads the newest record of aa/<name>.
func latest(t *testing.T, mod, name string) *benchRecord {
	t.Helper()
	// The latest by start time, as diff picks it: a run takes a fraction
	// of a second here, so several runs share the second in their ids and
	// the ids' order is not the runs' order.
	paths, _ := filepath.Glob(filepath.Join(mod, "results", "aa", name, "*.json"))
	var best *benchRecord
	var bestPath string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var r benchRecord
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		if best == nil || r.StartS.After(best.StartS) {
			best, bestPath = &r, p
		}
	}
	if best == nil {
		t.Fatalf("no record of aa/%s", name)
	}
	best.Start, best.End = best.StartS, best.EndS
	if best.Machine == nil || best.Machine.Peak == nil || best.Machine.OtherCores == nil {
		t.Fatalf("%s: no machine state", bestPath)
	}
	return best
}

// hogLog holds the spells the hog ran.
type hogLog struct {
	mu     sync.Mutex
	spells [][2]time.Time
}

func (h *hogLog) on(at time.Time) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.spells = append(h.spells, [2]time.Time{at, {}})
	return len(h.spells) - 1
}

func (h *hogLog) off(i int, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.spells[i][1] = at
}

// share is the part of [from, to] the hog ran.
func (h *hogLog) share(from, to time.Time) float64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	total := to.Sub(from)
	if total <= 0 {
		return 0
	}
	var on time.Duration
	for _, s := range h.spells {
		end := s[1]
		if end.IsZero() {
			end = time.Now()
		}
		a, b := max(s[0].UnixNano(), from.UnixNano()), min(end.UnixNano(), to.UnixNano())
		if b > a {
			on += time.Duration(b - a)
		}
	}
	return float64(on) / float64(total)
}

package testscripts

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// How the scripts share the machine (TESTING.md, "How long the tests
// take"). A script spends much of its time waiting rather than computing:
// on engines that sleep or time out on purpose, servers, processes
// starting, git, npm and cmake. So more scripts run at once than the
// machine has cores, and the longest start first: go test starts parallel
// subtests in no particular order, and a long script started last runs on
// alone at the end.

// parallelM sets the gate's slots before the tests run: -parallel if
// given, else twice GOMAXPROCS and at least 4 (go test's default,
// GOMAXPROCS, leaves a core idle whenever both running scripts wait), and
// then raises go test's own limit out of the gate's way. Only the scripts
// and the tour run in parallel in this package, and they pass the gate. The scripts use
// distinct ports and each has its own $WORK, HOME and caches, so any
// number may run at once.
type parallelM struct{ m *testing.M }

func (p parallelM) Run() int {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	gate.slots = max(4, 2*runtime.GOMAXPROCS(0))
	if f := flag.Lookup("test.parallel"); given && f != nil {
		gate.slots, _ = strconv.Atoi(f.Value.String())
	}
	// Every script passes go test's limit and waits at the gate, which
	// then chooses among all of them.
	flag.Set("test.parallel", "1000")
	return p.m.Run()
}

// runOrdered is testscript.Run with the scripts admitted by the gate.
func runOrdered(t *testing.T, p testscript.Params) {
	if d, ok := t.Deadline(); ok && p.Deadline.IsZero() {
		p.Deadline = d
	}
	testscript.RunT(gatedT{t}, p)
}

// gatedT is testscript's view of a *testing.T whose parallel subtests wait
// for the gate.
type gatedT struct{ *testing.T }

func (t gatedT) Run(name string, f func(testscript.T)) {
	t.T.Run(name, func(t *testing.T) { f(gatedT{t}) })
}

func (t gatedT) Verbose() bool { return testing.Verbose() }

func (t gatedT) Parallel() {
	t.T.Parallel()
	waited := gate.acquire(scriptWeight(t.Name()))
	t.Cleanup(gate.release)
	if waited > time.Second {
		t.Logf("waited %s for a slot (-parallel %d)", waited.Round(time.Millisecond), gate.slots)
	}
}

// gate admits the scripts of this test process.
var gate = &slotGate{slots: 4, collect: 100 * time.Millisecond}

// slotGate admits the heaviest waiting caller whenever one of its slots
// is free. Callers arrive within a few milliseconds of each other (the
// scripts, once their parent test returns); the gate collects arrivals
// for a moment before it admits the first, so that the order is the
// weights', not the arrivals'.
type slotGate struct {
	slots   int
	collect time.Duration

	mu      sync.Mutex
	cond    *sync.Cond
	running int
	opened  bool
	waiting []int // weights of the waiting callers
}

// acquire waits for a slot and returns how long it waited.
func (g *slotGate) acquire(weight int) time.Duration {
	start := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cond == nil {
		g.cond = sync.NewCond(&g.mu)
		time.AfterFunc(g.collect, func() {
			g.mu.Lock()
			g.opened = true
			g.mu.Unlock()
			g.cond.Broadcast()
		})
	}
	g.waiting = append(g.waiting, weight)
	for !g.opened || g.running >= max(g.slots, 1) || weight < g.heaviest() {
		g.cond.Wait()
	}
	for i, w := range g.waiting {
		if w == weight {
			g.waiting = append(g.waiting[:i], g.waiting[i+1:]...)
			break
		}
	}
	g.running++
	// The next heaviest may take another free slot.
	g.cond.Broadcast()
	return time.Since(start)
}

func (g *slotGate) heaviest() int {
	h := -1
	for _, w := range g.waiting {
		h = max(h, w)
	}
	return h
}

// release frees the slot of an admitted caller.
func (g *slotGate) release() {
	g.mu.Lock()
	g.running--
	g.mu.Unlock()
	g.cond.Broadcast()
}

// TestSlotGate: callers that arrive together are admitted heaviest first,
// never more than slots at once.
func TestSlotGate(t *testing.T) {
	g := &slotGate{slots: 2, collect: 50 * time.Millisecond}
	weights := []int{1, 7, 3, 9, 5, 3}
	admitted := make(chan int)
	done := make(chan bool)
	for _, w := range weights {
		go func() {
			g.acquire(w)
			admitted <- w
			<-done
			g.release()
		}()
	}
	var order []int
	order = append(order, <-admitted, <-admitted)
	for len(order) < len(weights) {
		select {
		case w := <-admitted:
			t.Fatalf("%d admitted while two callers hold both slots (admitted so far %v)", w, order)
		case <-time.After(50 * time.Millisecond):
		}
		done <- true // one of the two leaves
		order = append(order, <-admitted)
	}
	done <- true
	done <- true
	if !(order[0] == 9 && order[1] == 7 || order[0] == 7 && order[1] == 9) {
		t.Errorf("admitted %v: the first two should be 9 and 7", order)
	}
	if want := []int{5, 3, 3, 1}; !slices.Equal(order[2:], want) {
		t.Errorf("admitted %v: after the first two, want %v", order, want)
	}
}

// weights of the parallel subtests by name (TestScripts/NAME): how long
// each takes, in seconds. Unknown names weigh 0.
var (
	weightsMu sync.Mutex
	weights   = map[string]int{}
)

func scriptWeight(test string) int {
	weightsMu.Lock()
	defer weightsMu.Unlock()
	return weights[test]
}

func setWeight(test string, w int) {
	weightsMu.Lock()
	weights[test] = w
	weightsMu.Unlock()
}

// measuredSeconds are the scripts that took longest in a run of the
// package (`go test -race -json ./testscripts/`, each script's time less
// its wait for a slot; BENCHMARKS.md, issue 14), and the Slurm scripts as
// CI runs them. Only the order matters: a stale figure makes a script
// start a little early or late, never fail. Scripts not listed are
// estimated from what they need (guess).
var measuredSeconds = map[string]int{
	"slurm_quickstart": 60, "slurm_requires": 20,
	"quickstart": 45, "run_engine": 32, "build_engine": 29, "serve_node": 24,
	"serve_llama": 23, "run_rounds": 20, "run_binary_drift": 19,
	"report_diff_plot": 17, "serve_vllm": 16, "lock_errors": 14,
	"lock_online_npm": 13, "import_errors": 11, "run_faults": 10, "run_model_edit": 17,
	"bisect": 55,
	// issue 28, timed under load 25 (115 s and 18 s) and scaled to the
	// others' idle figures by quickstart's
	"quality_node": 55, "quality_llama": 9,
}

// guess is the weight of a script that measuredSeconds does not list:
// waiting for Slurm jobs, installing node-llama-cpp from npm or building
// the test engine with cmake takes longest.
func guess(script []byte) int {
	switch {
	case bytes.Contains(script, []byte("[!slurm]")):
		return 30
	case bytes.Contains(script, []byte("[!node]")), bytes.Contains(script, []byte("[!npm]")):
		return 20
	case bytes.Contains(script, []byte("[!cmake]")):
		return 15
	}
	return 5
}

// weighScripts weighs the scripts in dir, run as subtests of parent.
func weighScripts(parent, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	if err != nil {
		return err
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".txtar")
		w, ok := measuredSeconds[name]
		if !ok {
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			w = guess(b)
		}
		setWeight(parent+"/"+name, w)
	}
	return nil
}

package testscripts

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// How the scripts share the machine (TESTING.md, "How long the tests
// take"). Most of a script's time is spent waiting rather than computing:
// on engines that sleep or time out on purpose, servers, processes
// starting, git, npm and cmake. So more scripts run at once than the
// machine has cores, and the longest start first: go test starts parallel
// subtests in no particular order, and a long script started last runs on
// alone at the end.

// slots is how many scripts (and the README's tour) run at once: -parallel
// if given, else twice GOMAXPROCS and at least 4. go test's default,
// GOMAXPROCS, leaves a core idle whenever both running scripts wait. The
// scripts use distinct ports and each has its own $WORK, HOME and caches,
// so any number may run at once.
var slots = 4

// parallelM sets slots and hands the scheduling to runOrdered: without
// -parallel, go test's own limit is raised out of the way.
type parallelM struct{ m *testing.M }

func (p parallelM) Run() int {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if f := flag.Lookup("test.parallel"); given && f != nil {
		slots, _ = strconv.Atoi(f.Value.String())
	} else {
		slots = max(4, 2*runtime.GOMAXPROCS(0))
		flag.Set("test.parallel", "1000")
	}
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
		t.Logf("waited %s for a slot (-parallel %d)", waited.Round(time.Millisecond), slots)
	}
}

// gate admits the heaviest waiting script whenever a slot is free. The
// scripts all arrive within a few milliseconds of each other once their
// parents return; the gate collects arrivals for a moment before it
// admits the first, so that the order is the weights', not the arrivals'.
var gate = &slotGate{}

type slotGate struct {
	mu      sync.Mutex
	cond    *sync.Cond
	running int
	opened  bool
	waiting []int // weights of the waiting scripts
}

const gateCollect = 100 * time.Millisecond

func (g *slotGate) acquire(weight int) time.Duration {
	start := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cond == nil {
		g.cond = sync.NewCond(&g.mu)
		time.AfterFunc(gateCollect, func() {
			g.mu.Lock()
			g.opened = true
			g.mu.Unlock()
			g.cond.Broadcast()
		})
	}
	g.waiting = append(g.waiting, weight)
	for !g.opened || g.running >= slots || weight < g.heaviest() {
		g.cond.Wait()
	}
	for i, w := range g.waiting {
		if w == weight {
			g.waiting = append(g.waiting[:i], g.waiting[i+1:]...)
			break
		}
	}
	g.running++
	return time.Since(start)
}

func (g *slotGate) heaviest() int {
	h := -1
	for _, w := range g.waiting {
		h = max(h, w)
	}
	return h
}

func (g *slotGate) release() {
	g.mu.Lock()
	g.running--
	g.mu.Unlock()
	g.cond.Broadcast()
}

// weights of the parallel subtests by name (TestScripts/NAME): those that
// wait for Slurm jobs, install node-llama-cpp from npm, or build the test
// engine with cmake take the longest. Unknown names weigh 0.
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

// weighScripts weighs the scripts in dir, run as subtests of parent.
func weighScripts(parent, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	if err != nil {
		return err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		w := 0
		for _, c := range []struct {
			cond string
			w    int
		}{{"[!slurm]", 4}, {"[!node]", 2}, {"[!cmake]", 2}} {
			if bytes.Contains(b, []byte(c.cond)) {
				w += c.w
			}
		}
		setWeight(parent+"/"+strings.TrimSuffix(filepath.Base(f), ".txtar"), w)
	}
	return nil
}

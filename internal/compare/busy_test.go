package compare

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/compare/stats"
	"github.com/rigorbench/rigor/internal/hoststate"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/rig"
)

// A simulated drifting machine, the case of issues 18 and 25: a CPU hog
// turns on and off at random; while it is on, an engine process runs at
// 50–70% of its speed, and every repetition inside the process shares
// that. Each process's state follows the previous one's with probability
// 0.7, as a hog that runs for a while does. Between processes the speed
// also varies by a 2% run-to-run noise (page cache, placement).
type hogSim struct {
	rng   *rand.Rand
	on    bool
	quiet bool // no hog at all
}

func (h *hogSim) process(center float64, reps int) ([]float64, *hoststate.State) {
	if !h.quiet && h.rng.Float64() > 0.7 {
		h.on = !h.on
	}
	f := 1 + 0.02*h.rng.NormFloat64()
	st := &hoststate.State{Cores: 2, Before: &hoststate.Sample{Load1: 0.3}, Peak: &hoststate.Sample{Load1: 0.4}}
	other := 0.02
	if h.on && !h.quiet {
		f *= 0.5 + 0.2*h.rng.Float64()
		st.Peak.Load1, other = 3.1, 1.6
	}
	st.OtherCores = &other
	x := make([]float64, reps)
	for i := range x {
		x[i] = center * f * (1 + 0.005*h.rng.NormFloat64())
	}
	return x, st
}

// simRun is one run of three metrics that the machine's speed moves
// together, as llama-bench's do, on one host and lock. serve makes them
// a serve run's: the samples are requests, the value their mean.
func simRun(h *hogSim, id, exp, inv string, round int, start time.Time, center float64, serve bool) results.Run {
	x, st := h.process(center, 5)
	r := results.Run{ID: id, Experiment: exp, Point: exp, Status: "ok", Invocation: inv, Round: round, Start: start, Machine: st,
		LockDigest: "sha256:lock-" + exp, Rig: &rig.Rig{Hostname: "sim", HostProcessorModelName: "sim cpu"}}
	if serve {
		reqs := make([]float64, 40)
		for i := range reqs {
			reqs[i] = 1000 / x[i%len(x)] * (1 + 0.3*h.rng.NormFloat64())
		}
		r.Metrics = []results.Metric{
			{Name: "tokSOut", Test: "serve", Unit: "tok/s", Direction: "higher", Value: x[0]},
			{Name: "ttftMs", Test: "serve", Unit: "ms", Direction: "lower", Value: stats.Mean(reqs), Samples: reqs},
			{Name: "tpotMs", Test: "serve", Unit: "ms", Direction: "lower", Value: stats.Mean(reqs) / 10, Samples: scaled(reqs, 0.1)},
		}
		return r
	}
	r.Metrics = []results.Metric{
		{Name: "tokSOut", Test: "tg64", Unit: "tok/s", Direction: "higher", Samples: x},
		{Name: "tokSPrompt", Test: "pp512", Unit: "tok/s", Direction: "higher", Samples: scaled(x, 20)},
		{Name: "engineTokSOut", Test: "tg64", Unit: "tok/s", Direction: "higher", Samples: scaled(x, 1.01)},
	}
	return r
}

func scaled(x []float64, f float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v * f
	}
	return out
}

// verdicts counts the rows of a report that claim a change.
func verdicts(rep *Report) int {
	n := 0
	for _, t := range rep.Tables {
		for _, r := range t.Rows {
			if r.Verdict == Better || r.Verdict == Worse || r.Verdict == Changed {
				n++
			}
		}
	}
	return n
}

// forms builds one comparison of each form of issue 25 on the simulated
// machine, B's speed factor times A's: one run a side; three runs a side
// from two invocations without history; the same with five earlier
// invocations of each side's lock as history; paired rounds (K = 5);
// serve runs, one a side and in paired rounds.
type form struct {
	name string
	make func(h *hogSim, trial int, factor float64) (Side, Side, Options)
}

var forms = []form{
	{"one run a side", func(h *hogSim, i int, f float64) (Side, Side, Options) {
		t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
		a := simRun(h, "a", "x/a", fmt.Sprint("ia", i), 0, t0, 100, false)
		b := simRun(h, "b", "x/b", fmt.Sprint("ib", i), 0, t0.Add(time.Minute), 100*f, false)
		return Side{"a", []results.Run{a}}, Side{"b", []results.Run{b}}, Options{}
	}},
	{"3 runs from two invocations, no history", func(h *hogSim, i int, f float64) (Side, Side, Options) {
		a, b := invocationRuns(h, i, f)
		return Side{"a", a}, Side{"b", b}, Options{}
	}},
	{"3 runs from two invocations, with history", func(h *hogSim, i int, f float64) (Side, Side, Options) {
		var hist []results.Run
		t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		for k := range 5 {
			for _, exp := range []string{"x/a", "x/b"} {
				inv := fmt.Sprintf("h%d-%d-%s", i, k, exp)
				for j := range 3 {
					hist = append(hist, simRun(h, fmt.Sprint(inv, j), exp, inv, 0, t0.Add(time.Duration(k)*time.Hour), 100, false))
				}
			}
		}
		a, b := invocationRuns(h, i, f)
		return Side{"a", a}, Side{"b", b}, Options{History: append(hist, append(a, b...)...)}
	}},
	{"paired rounds K=5", func(h *hogSim, i int, f float64) (Side, Side, Options) {
		a, b := simRounds(h, i, f, false)
		return Side{"a", a}, Side{"b", b}, Options{}
	}},
	{"serve, one run a side", func(h *hogSim, i int, f float64) (Side, Side, Options) {
		t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
		a := simRun(h, "a", "x/a", fmt.Sprint("ia", i), 0, t0, 100, true)
		b := simRun(h, "b", "x/b", fmt.Sprint("ib", i), 0, t0.Add(time.Minute), 100*f, true)
		return Side{"a", []results.Run{a}}, Side{"b", []results.Run{b}}, Options{}
	}},
	{"serve, paired rounds K=5", func(h *hogSim, i int, f float64) (Side, Side, Options) {
		a, b := simRounds(h, i, f, true)
		return Side{"a", a}, Side{"b", b}, Options{}
	}},
	// The form of TestBenchVerdicts' "invocations": one run a side, each
	// its own invocation, after 3 to 8 earlier one-run invocations of
	// each side (the least history a test takes, and a growing one).
	{"1 run from two invocations, with history", func(h *hogSim, i int, f float64) (Side, Side, Options) {
		var hist []results.Run
		t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		for k := range 3 + i%6 {
			for _, exp := range []string{"x/a", "x/b"} {
				inv := fmt.Sprintf("h%d-%d-%s", i, k, exp)
				hist = append(hist, simRun(h, inv, exp, inv, 0, t0.Add(time.Duration(k)*time.Hour), 100, false))
			}
		}
		t1 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
		a := simRun(h, "a", "x/a", fmt.Sprint("ia", i), 0, t1, 100, false)
		b := simRun(h, "b", "x/b", fmt.Sprint("ib", i), 0, t1.Add(time.Minute), 100*f, false)
		return Side{"a", []results.Run{a}}, Side{"b", []results.Run{b}}, Options{History: append(hist, a, b)}
	}},
}

func invocationRuns(h *hogSim, i int, f float64) (a, b []results.Run) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for j := range 3 {
		a = append(a, simRun(h, fmt.Sprint("a", j), "x/a", fmt.Sprint("ia", i), 0, t0.Add(time.Duration(j)*time.Minute), 100, false))
	}
	for j := range 3 {
		b = append(b, simRun(h, fmt.Sprint("b", j), "x/b", fmt.Sprint("ib", i), 0, t0.Add(time.Hour+time.Duration(j)*time.Minute), 100*f, false))
	}
	return a, b
}

func simRounds(h *hogSim, i int, f float64, serve bool) (a, b []results.Run) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	inv := fmt.Sprint("inv", i)
	for k := 1; k <= 5; k++ {
		start := t0.Add(time.Duration(k) * time.Minute)
		// The order within a round is shuffled, as rigor run does.
		ra := func() { a = append(a, simRun(h, fmt.Sprint("a", k), "x/a", inv, k, start, 100, serve)) }
		rb := func() {
			b = append(b, simRun(h, fmt.Sprint("b", k), "x/b", inv, k, start.Add(time.Second), 100*f, serve))
		}
		if h.rng.IntN(2) == 0 {
			ra()
			rb()
		} else {
			rb()
			ra()
		}
	}
	return a, b
}

// TestCompare_AvsA compares A against A (the same engine, the same speed)
// 250 times in each form of issue 25 on the drifting machine, and counts
// the diffs with any better/worse verdict over all their metrics: at most
// 5% per form. Before issue 25, one run a side gave 30–40% false
// verdicts (the repetitions were tested), paired rounds ~5% per metric
// (Holm per metric only), serve runs tested their requests.
func TestCompare_AvsA(t *testing.T) {
	const trials = 250
	for fi, f := range forms {
		h := &hogSim{rng: rand.New(rand.NewPCG(25, uint64(fi)))}
		bad := 0
		for i := range trials {
			a, b, opts := f.make(h, i, 1)
			rep, err := Compare(a, b, opts)
			if err != nil {
				t.Fatal(err)
			}
			if verdicts(rep) > 0 {
				bad++
			}
			// Only the designs that separate change from drift are tested.
			testable := strings.Contains(f.name, "paired") || strings.Contains(f.name, "with history")
			for _, tb := range rep.Tables {
				for _, r := range tb.Rows {
					if got := !math.IsNaN(r.P); got != testable {
						t.Fatalf("%s, trial %d: %s tested %v (by %q, verdict %q), want %v", f.name, i, tb.Metric, got, r.Test, r.Verdict, testable)
					}
				}
			}
			if !testable && rep.Untested == "" {
				t.Fatalf("%s: no line saying what would make it testable", f.name)
			}
		}
		rate := float64(bad) / trials
		t.Logf("%-45s false verdicts in %d A-vs-A diffs: %d (%.3f)", f.name, trials, bad, rate)
		if rate > 0.05 {
			t.Errorf("%s: %.3f of A-vs-A diffs had a better/worse verdict, want ≤ 0.05", f.name, rate)
		}
	}
}

// TestCompare_power: a real 15% speed-up is found (tokSOut "better") in
// at least 80% of comparisons with paired rounds, K = 5, on a quiet
// machine.
func TestCompare_power(t *testing.T) {
	const trials = 250
	h := &hogSim{rng: rand.New(rand.NewPCG(25, 15)), quiet: true}
	found := 0
	for i := range trials {
		a, b := simRounds(h, i, 1.15, false)
		rep, err := Compare(Side{"a", a}, Side{"b", b}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Tables[0].Metric != "tokSOut tg64" {
			t.Fatalf("first table %s, want the figure to quote first", rep.Tables[0].Metric)
		}
		if rep.Tables[0].Rows[0].Verdict == Better {
			found++
		}
	}
	rate := float64(found) / trials
	t.Logf("a 15%% change found with paired rounds K=5 on a quiet machine: %d of %d (%.3f)", found, trials, rate)
	if rate < 0.8 {
		t.Errorf("power %.3f, want ≥ 0.8", rate)
	}
}

// TestCompare_historyPower: sides from separate invocations (3 runs a
// side) with a noise estimate from history find a 15% change on a quiet
// machine: 73 of 100 at the default history level 0.01 (99 of 100 at
// 0.05, before the history form was held to a stricter level than paired
// rounds). The power goal, ≥ 80%, is paired rounds' (TestCompare_power).
func TestCompare_historyPower(t *testing.T) {
	const trials = 100
	h := &hogSim{rng: rand.New(rand.NewPCG(25, 16)), quiet: true}
	found := 0
	for i := range trials {
		a, b, opts := forms[2].make(h, i, 1.15)
		rep, err := Compare(a, b, opts)
		if err != nil {
			t.Fatal(err)
		}
		if r := rep.Tables[0].Rows[0]; r.Verdict == Better && r.Test == DecideHistory {
			found++
		}
	}
	t.Logf("a 15%% change found from separate invocations with history on a quiet machine: %d of %d", found, trials)
	if found < trials*2/3 {
		t.Errorf("power %d/%d, want ≥ 2/3", found, trials)
	}
}

// TestCompare_historyLevel: the test of separate invocations against
// their history holds its level. On A against A with Gaussian run noise
// (no hog) its raw p-values are uniform: about 5% of the diffs' tokSOut
// rows below 0.05 and 1% below 0.01, with 3 to 8 earlier one-run
// invocations a side (4 to 14 degrees of freedom). A z where the t
// belongs, or degrees of freedom counted too high, gives up to 9% below 0.05;
// a noise estimate that left out a side's spread, less than 3%. This is
// what the real A-vs-A of BENCHMARKS.md checks on the machine (issue 25:
// 7 false verdicts in 130 diffs, 11 of 200 rows below 0.05).
func TestCompare_historyLevel(t *testing.T) {
	const trials = 1000
	h := &hogSim{rng: rand.New(rand.NewPCG(25, 17)), quiet: true}
	f := forms[len(forms)-1]
	if !strings.HasPrefix(f.name, "1 run from two invocations, with history") {
		t.Fatalf("last form %q, want the one-run-a-side history form", f.name)
	}
	below05, below01 := 0, 0
	for i := range trials {
		a, b, opts := f.make(h, i, 1)
		rep, err := Compare(a, b, opts)
		if err != nil {
			t.Fatal(err)
		}
		r := rep.Tables[0].Rows[0]
		if rep.Tables[0].Metric != "tokSOut tg64" || r.Test != DecideHistory {
			t.Fatalf("trial %d: first row %s tested by %q, want tokSOut tg64 by %s", i, rep.Tables[0].Metric, r.Test, DecideHistory)
		}
		if r.P < 0.05 {
			below05++
		}
		if r.P < 0.01 {
			below01++
		}
	}
	p05, p01 := float64(below05)/trials, float64(below01)/trials
	t.Logf("A against A, %d diffs from separate invocations with history: p < 0.05 in %.3f, p < 0.01 in %.3f", trials, p05, p01)
	// About three binomial standard deviations either side (0.0069 and
	// 0.0031); the z instead of the t gives 0.09 and 0.04.
	if p05 < 0.03 || p05 > 0.07 {
		t.Errorf("p < 0.05 in %.3f of A-vs-A diffs, want 0.03–0.07: the test does not hold its level", p05)
	}
	if p01 < 0.001 || p01 > 0.02 {
		t.Errorf("p < 0.01 in %.3f of A-vs-A diffs, want 0.001–0.02: the test does not hold its level", p01)
	}
}

// TestCompare_historyAlpha: a diff from separate invocations tested on
// their history is held to Options.HistoryAlpha (0.01 by default, a fifth
// of α). On A against A with Gaussian run noise its three metrics move
// together, so Holm over them holds about α/3: 0.6% of diffs with a
// verdict at the default, 1.8% with HistoryAlpha raised to α itself (the
// level that gave 7 false diffs of 130 on the real engine, whose rows
// move less together).
func TestCompare_historyAlpha(t *testing.T) {
	const trials = 1000
	f := forms[len(forms)-1]
	count := func(historyAlpha float64) (bad int) {
		h := &hogSim{rng: rand.New(rand.NewPCG(25, 18)), quiet: true}
		for i := range trials {
			a, b, opts := f.make(h, i, 1)
			opts.HistoryAlpha = historyAlpha
			rep, err := Compare(a, b, opts)
			if err != nil {
				t.Fatal(err)
			}
			if rep.HistoryAlpha != cmp.Or(historyAlpha, 0.01) {
				t.Fatalf("report's history level %g, want %g", rep.HistoryAlpha, cmp.Or(historyAlpha, 0.01))
			}
			if verdicts(rep) > 0 {
				bad++
			}
		}
		return bad
	}
	strict, loose := count(0), count(0.05)
	t.Logf("A against A, %d diffs with history: a verdict in %d at the default history level, %d at 0.05", trials, strict, loose)
	if strict > trials/100 {
		t.Errorf("%d of %d A-vs-A diffs with a verdict at the default history level, want ≤ 1%%", strict, trials)
	}
	if loose < 2*strict || loose == 0 {
		t.Errorf("%d diffs with a verdict at history level 0.05 against %d at the default: the level does not reach the test", loose, strict)
	}
	if _, err := Compare(Side{"a", nil}, Side{"b", nil}, Options{HistoryAlpha: 0.1}); err == nil || !strings.Contains(err.Error(), "history alpha 0.1") {
		t.Errorf("history alpha above alpha: error %v, want one naming it", err)
	}
}

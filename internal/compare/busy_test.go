package compare

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/machine"
	"github.com/rigorbench/rigor/internal/results"
)

// A simulated busy machine, the case of issue 18: a CPU hog turns on and
// off at random; while it is on, an engine process runs at 50–70% of its
// speed, and every repetition inside the process shares that. Each
// process's state follows the previous one's with probability 0.7, as a
// hog that runs for a while does.
type hogSim struct {
	rng *rand.Rand
	on  bool
}

func (h *hogSim) process(center float64, reps int) ([]float64, *machine.State) {
	if h.rng.Float64() > 0.7 {
		h.on = !h.on
	}
	f := 1.0
	st := &machine.State{Cores: 2, Before: &machine.Sample{Load1: 0.3}, Peak: &machine.Sample{Load1: 0.4}}
	other := 0.02
	if h.on {
		f = 0.5 + 0.2*h.rng.Float64()
		st.Peak.Load1, other = 3.1, 1.6
	}
	st.OtherCores = &other
	x := make([]float64, reps)
	for i := range x {
		x[i] = center * f * (1 + 0.005*h.rng.NormFloat64())
	}
	return x, st
}

func simRun(id, exp, inv string, round int, start time.Time, samples []float64, st *machine.State) results.Run {
	return results.Run{ID: id, Experiment: exp, Point: exp, Status: "ok", Invocation: inv, Round: round, Start: start, Machine: st,
		Metrics: []results.Metric{{Name: "tokSOut", Test: "tg64", Unit: "tok/s", Direction: "higher", Samples: samples}}}
}

// TestCompare_busyMachineFalsePositives compares A against A (the same
// engine, the same speed) 400 times each way on the simulated machine:
//
//   - one run a side, 5 repetitions each (rigor without rounds): the
//     repetitions are the samples, and whenever the hog's state differed
//     between the two runs the exact rank test calls a difference. Every
//     such false verdict comes with a warning naming the machine states.
//   - 5 rounds a side in one invocation (--rounds 5): the runs pair up by
//     round and the paired test keeps false verdicts at α.
func TestCompare_busyMachineFalsePositives(t *testing.T) {
	const trials = 400
	rng := rand.New(rand.NewPCG(18, 2026))
	h := &hogSim{rng: rng}
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	falseSingle, falseRounds, changed, unexplained := 0, 0, 0, 0
	for i := 0; i < trials; i++ {
		// without rounds
		xa, sa := h.process(100, 5)
		xb, sb := h.process(100, 5)
		a := simRun("a", "x/a", "", 0, t0, xa, sa)
		b := simRun("b", "x/b", "", 0, t0.Add(time.Minute), xb, sb)
		rep, err := Compare(Side{"a", []results.Run{a}}, Side{"b", []results.Run{b}}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if v := rep.Tables[0].Rows[0].Verdict; v == Better || v == Worse {
			falseSingle++
			// When the machine's state differed, the warnings name it.
			differed := false
			for _, w := range rep.Warnings {
				differed = differed || (w.Kind == WarnMachine && strings.HasPrefix(w.Message, "A and B ran under different machine states: load "))
			}
			if *sa.OtherCores != *sb.OtherCores {
				changed++
				if !differed {
					unexplained++
				}
			}
		}
		// with rounds: A and B alternate within each round
		var ra, rb []results.Run
		inv := fmt.Sprintf("inv%d", i)
		for k := 1; k <= 5; k++ {
			xa, sa := h.process(100, 5)
			xb, sb := h.process(100, 5)
			start := t0.Add(time.Duration(k) * time.Minute)
			ra = append(ra, simRun(fmt.Sprintf("a%d", k), "x/a", inv, k, start, xa, sa))
			rb = append(rb, simRun(fmt.Sprintf("b%d", k), "x/b", inv, k, start.Add(time.Second), xb, sb))
		}
		rep, err = Compare(Side{"a", ra}, Side{"b", rb}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		row := rep.Tables[0].Rows[0]
		if row.Test != DecidePairedT {
			t.Fatalf("trial %d: rounds decided by %s, want the paired test", i, row.Test)
		}
		if row.Verdict == Better || row.Verdict == Worse {
			falseRounds++
		}
	}
	single, rounds := float64(falseSingle)/trials, float64(falseRounds)/trials
	t.Logf("false better/worse verdicts in %d A-vs-A comparisons: %.3f with one run a side (%d of them between different machine states, every one named), %.3f with 5 rounds", trials, single, changed, rounds)
	// Binomial sd at 0.05 over 400 trials is 0.011; 0.08 is nearly three sd.
	if rounds > 0.08 {
		t.Errorf("with rounds: false-positive rate %.3f, want ≤ 0.08 (α = 0.05)", rounds)
	}
	if single < 0.2 {
		t.Errorf("one run a side: false-positive rate %.3f; the simulation no longer shows the problem it models", single)
	}
	if unexplained > 0 {
		t.Errorf("%d of %d false verdicts between runs under different machine states came without a warning naming them", unexplained, changed)
	}
}

package bisect

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

// model is a machine measuring a history of commits: the commits from
// first on are effect slower (tok/s, higher is better), every run varies
// by noise (the standard deviation of its log) on its own, and the whole
// round by drift (the machine's load, which every run of the round
// shares).
type model struct {
	commits, first       int
	effect, noise, drift float64
	rng                  *rand.Rand
}

func (m model) value(i int, roundLoad float64) float64 {
	v := 100.0
	if i >= m.first {
		v *= 1 - m.effect
	}
	return v * math.Exp(roundLoad+m.noise*m.rng.NormFloat64())
}

// bisect runs one simulated bisect to its end, as the CLI does: it asks
// Next, measures what it asks for, adds the round and asks again.
type simResult struct {
	out    Outcome
	builds int // commits measured besides the endpoints
	rounds int // rounds of all phases
}

func simulate(m model, rule Rule) simResult {
	st := &State{Commits: make([]Commit, m.commits)}
	for i := range st.Commits {
		st.Commits[i].Hash = fmt.Sprintf("c%02d", i)
	}
	var res simResult
	for {
		a := Next(st, rule)
		if a.Kind == Done {
			res.out = a.Outcome
			res.builds = len(st.Steps)
			return res
		}
		load := m.drift * m.rng.NormFloat64()
		r := Round{Good: m.value(0, load), Bad: m.value(m.commits-1, load)}
		res.rounds++
		if a.Kind == MeasureEndpoints {
			st.Endpoints = append(st.Endpoints, r)
			continue
		}
		r.Commit = m.value(a.Index, load)
		k := len(st.Steps) - 1
		if k < 0 || st.Steps[k].Commit != st.Commits[a.Index].Hash || st.Steps[k].Verdict != "" {
			st.Steps = append(st.Steps, Step{Commit: st.Commits[a.Index].Hash})
			k++
		}
		st.Steps[k].Rounds = append(st.Steps[k].Rounds, r)
	}
}

// TestSimulation is the decision rule against a model of noisy runs
// (issue 29): 30 commits, runs with 5% noise each and a machine whose
// load moves every round's figures together by 10%. With a 5% effect at a
// random commit, the first bad commit must be found in at least 95% of
// 1,000 bisects; with no effect, at least 95% must end without naming a
// commit. RIGOR_BISECT_SIM=1 prints the figures BENCHMARKS.md holds.
func TestSimulation(t *testing.T) {
	const sims = 1000
	rule := Rule{}
	type figures struct {
		found, noChange, couldNot, wrong int
		builds, rounds                   []int
	}
	run := func(effect float64, seed uint64) figures {
		var f figures
		rng := rand.New(rand.NewPCG(seed, 29))
		for s := 0; s < sims; s++ {
			first := 1 + rng.IntN(29)
			m := model{commits: 30, first: first, effect: effect, noise: 0.05, drift: 0.10, rng: rng}
			r := simulate(m, rule)
			switch {
			case r.out.Ending == Found && r.out.First == first:
				f.found++
			case r.out.Ending == Found:
				f.wrong++
			case r.out.Ending == NoChangeEnding:
				f.noChange++
			default:
				f.couldNot++
			}
			f.builds = append(f.builds, r.builds)
			f.rounds = append(f.rounds, r.rounds)
		}
		return f
	}
	eff := run(0.05, 1)
	null := run(0, 2)
	report := func(name string, f figures) string {
		return fmt.Sprintf("%s: found %d, wrong commit %d, no change %d, could not split %d; commits built besides the endpoints: median %d, max %d; rounds: median %d, max %d",
			name, f.found, f.wrong, f.noChange, f.couldNot, median(f.builds), maxOf(f.builds), median(f.rounds), maxOf(f.rounds))
	}
	t.Log(report("5% effect", eff))
	t.Log(report("no effect", null))
	if os.Getenv("RIGOR_BISECT_SIM") != "" {
		fmt.Println(report("5% effect, 5% noise", eff))
		fmt.Println(report("no effect, 5% noise", null))
	}
	if eff.found < sims*95/100 {
		t.Errorf("5%% effect, 5%% noise: the first bad commit was found in %d of %d bisects, want ≥ 95%%", eff.found, sims)
	}
	if null.wrong+null.found > sims*5/100 {
		t.Errorf("no effect: %d of %d bisects named a commit, want ≤ 5%%", null.wrong+null.found, sims)
	}
}

func median(x []int) int {
	s := append([]int(nil), x...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}

func maxOf(x []int) int {
	m := 0
	for _, v := range x {
		m = max(m, v)
	}
	return m
}

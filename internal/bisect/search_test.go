package bisect

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// rounds returns n rounds in which good runs at 100, bad at 80 and the
// commit at v, with a little noise that repeats.
func rounds(n int, v float64) []Round {
	jit := []float64{1.00, 1.01, 0.99, 1.005, 0.995}
	var rs []Round
	for i := 0; i < n; i++ {
		j := jit[i%len(jit)]
		rs = append(rs, Round{Good: 100 * jit[(i+1)%len(jit)], Bad: 80 * jit[(i+3)%len(jit)], Commit: v * j})
	}
	return rs
}

func history(n int) *State {
	st := &State{}
	for i := 0; i < n; i++ {
		st.Commits = append(st.Commits, Commit{Hash: fmt.Sprintf("c%d", i)})
	}
	return st
}

// TestNext_skips: a commit that cannot be measured is passed over for
// its nearest neighbour, as git bisect skip does; when only skipped
// commits are left between the last good and the first bad, the search
// ends with the range and the skipped commits, never a guess.
func TestNext_skips(t *testing.T) {
	rule := Rule{MinRounds: 5, MaxRounds: 10}
	st := history(5) // c0 good … c4 bad; the change is at c2
	if a := Next(st, rule); a.Kind != MeasureEndpoints {
		t.Fatalf("first action %v, want the endpoints", a.Kind)
	}
	st.Endpoints = rounds(5, 0)
	a := Next(st, rule)
	if a.Kind != MeasureStep || a.Index != 2 {
		t.Fatalf("after the endpoints: %+v, want a step at c2", a)
	}
	st.Steps = append(st.Steps, Step{Commit: "c2", Verdict: Skip, Reason: "the build failed"})
	a = Next(st, rule)
	if a.Kind != MeasureStep || a.Index != 1 {
		t.Fatalf("after skipping c2: %+v, want c1 (the nearest, lower first)", a)
	}
	st.Steps = append(st.Steps, Step{Commit: "c1", Rounds: rounds(5, 100)})
	a = Next(st, rule)
	if st.Steps[1].Verdict != Good {
		t.Fatalf("c1 with good's figures: %q, want good", st.Steps[1].Verdict)
	}
	if a.Kind != MeasureStep || a.Index != 3 {
		t.Fatalf("after c1 good: %+v, want c3", a)
	}
	st.Steps = append(st.Steps, Step{Commit: "c3", Rounds: rounds(5, 80)})
	a = Next(st, rule)
	if st.Steps[2].Verdict != Bad {
		t.Fatalf("c3 with bad's figures: %q, want bad", st.Steps[2].Verdict)
	}
	if a.Kind != Done || a.Outcome.Ending != CouldNotSplit || a.Outcome.LastGood != 1 || a.Outcome.FirstBad != 3 || !slices.Equal(a.Outcome.Skipped, []int{2}) {
		t.Fatalf("only c2, skipped, between c1 good and c3 bad: %+v, want could not split c1..c3", a.Outcome)
	}
	// Without the skip, c2 decides it.
	st.Steps[0] = Step{Commit: "c2", Rounds: rounds(5, 80)}
	st.Steps[1].Verdict, st.Steps[2].Verdict = "", ""
	for i := range st.Steps {
		st.Steps[i].Verdict = DecideStep(st.Steps[i].Rounds, false, rule).Verdict
	}
	a = Next(st, rule)
	if a.Kind != Done || a.Outcome.Ending != Found || a.Outcome.First != 2 {
		t.Fatalf("c2 bad, c1 good: %+v, want c2 found", a.Outcome)
	}
}

// TestNext_undecided: a step that the rounds cannot decide by MaxRounds
// ends the search with its range; one between the endpoints (a part of
// the change) ends it at once.
func TestNext_undecided(t *testing.T) {
	rule := Rule{MinRounds: 5, MaxRounds: 6}
	st := history(3)
	st.Endpoints = rounds(5, 0)
	// c1 at 90 differs from both endpoints.
	st.Steps = []Step{{Commit: "c1", Rounds: rounds(5, 90)}}
	a := Next(st, rule)
	if a.Kind != Done || a.Outcome.Ending != CouldNotSplit || a.Outcome.Undecided != 1 {
		t.Fatalf("a commit between the endpoints: %+v, want could not split at c1", a)
	}
	// The endpoints alike: no change, after MaxRounds.
	st = history(3)
	st.Endpoints = nil
	for i := 0; i < 6; i++ {
		st.Endpoints = append(st.Endpoints, Round{Good: 100 + float64(i%3), Bad: 100 + float64((i+1)%3)})
	}
	if a := Next(st, rule); a.Kind != Done || a.Outcome.Ending != NoChangeEnding {
		t.Fatalf("endpoints alike: %+v, want no change", a)
	}
	if a := Next(&State{Commits: st.Commits, Endpoints: st.Endpoints[:5]}, rule); a.Kind != MeasureEndpoints {
		t.Fatalf("endpoints alike after 5 of 6 rounds: %+v, want another round", a)
	}
}

// TestChangeAt: the change at the first bad commit is measured between
// the last good commit and it, each against good in its own rounds; at
// the endpoints, the step's own pairs.
func TestChangeAt(t *testing.T) {
	st := history(4)
	st.Steps = []Step{{Commit: "c1", Rounds: rounds(5, 100)}, {Commit: "c2", Rounds: rounds(5, 80)}}
	c := ChangeAt(st, 1, 2)
	if c.Percent > -19 || c.Percent < -21 || !(c.Low < c.Percent && c.Percent < c.High) || c.Rounds != 10 {
		t.Errorf("c1 at 100, c2 at 80: %+v, want -20%% within its interval over 10 rounds", c)
	}
	// c1 is the first bad commit after good: its own pairs against good.
	c = ChangeAt(st, 0, 1)
	if c.Rounds != 5 || math.Abs(c.Percent) > 1 {
		t.Errorf("c1 against good: %+v, want ~0%% over 5 rounds", c)
	}
	// The first bad is the bad endpoint: the last good step against bad.
	c = ChangeAt(st, 2, 3)
	if c.Rounds != 5 || math.Abs(c.Percent) > 1 {
		t.Errorf("bad against c2 (both at 80): %+v, want ~0%%", c)
	}
}

// TestDecideStep_nearOneSide: a commit that differs from both endpoints
// but sits near one (a small change of its own beside the one bisected)
// takes that side; one near the middle is undecided.
func TestDecideStep_nearOneSide(t *testing.T) {
	rule := Rule{MinRounds: 5, MaxRounds: 30}
	for _, tc := range []struct {
		v    float64
		want Verdict
	}{{98, Good}, {82, Bad}, {90, Undecided}} {
		d := DecideStep(rounds(20, tc.v), false, rule)
		if d.Verdict != tc.want || !d.VsGood.Significant || !d.VsBad.Significant {
			t.Errorf("commit at %v between good 100 and bad 80: %s (position %.2f, against good p %.2g, against bad p %.2g), want %s with both significant",
				tc.v, d.Verdict, d.Position, d.VsGood.P, d.VsBad.P, tc.want)
		}
	}
}

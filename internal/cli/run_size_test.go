package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/spec"
)

// TestSizeOf: what a run starts is counted as the plan groups it, and its
// ETA is each execution's latest earlier ok run times the rounds; runs
// that failed and points that never ran are not guessed at.
func TestSizeOf(t *testing.T) {
	x := &spec.Experiment{ID: "v/x"}
	x.Spec.Engine.Family = "vllm" // no Sweeper: one process per point
	for _, id := range []string{"v/x[a=1]", "v/x[a=2]", "v/x[a=3]"} {
		x.Points = append(x.Points, &spec.Point{ID: id})
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := func(point, status string, start, took time.Duration) *results.Run {
		return &results.Run{Point: point, Status: status, Start: t0.Add(start), End: t0.Add(start + took)}
	}
	previous := []*results.Run{
		rec("v/x[a=1]", results.StatusOK, 0, time.Hour),
		rec("v/x[a=1]", results.StatusOK, 2*time.Hour, 10*time.Minute), // the latest counts
		rec("v/x[a=2]", results.StatusOK, 0, 20*time.Minute),
		rec("v/x[a=3]", "failed", 0, time.Second), // not an estimate
	}
	xs := []*runExperiment{{x: x, points: x.Points}}
	s, err := sizeOf(xs, 1_000_000_000, previous)
	if err != nil {
		t.Fatal(err)
	}
	if s.runs() != 3e9 || s.processes() != 3e9 || s.unknown != 1 {
		t.Errorf("runs %v processes %v unknown %d, want 3e9, 3e9, 1", s.runs(), s.processes(), s.unknown)
	}
	// 30 minutes a round, a billion rounds: no overflow.
	if want := 1800 * 1e9; s.eta != want {
		t.Errorf("eta %v s, want %v", s.eta, want)
	}
	limits := askLimits{runs: askRuns, eta: askETA}
	if !limits.over(s) {
		t.Error("a billion rounds is not over the limits")
	}
	got := s.describe(limits)
	want := "3000000000 runs (3 points × 1000000000 rounds) in 3000000000 processes (more than 1000), ETA at least 500 million hours (over 24h) from the latest earlier run of each (1 of 3 executions never ran and is not counted)"
	if got != want {
		t.Errorf("describe:\n got %s\nwant %s", got, want)
	}

	// Under the run limit, over the time limit.
	s, _ = sizeOf([]*runExperiment{{x: x, points: x.Points[:2]}}, 50, previous)
	if !limits.over(s) || !strings.Contains(s.describe(limits), "ETA about 25h (over 24h) from the latest earlier run of each") {
		t.Errorf("50 rounds of 30 minutes: over %v, %s", limits.over(s), s.describe(limits))
	}
	s, _ = sizeOf([]*runExperiment{{x: x, points: x.Points[:2]}}, 40, previous)
	if limits.over(s) {
		t.Errorf("40 rounds of 30 minutes (20h) are over the limits: %s", s.describe(limits))
	}
}

// TestConfirmSize_terminal: on a terminal the user's answer decides; the
// question names the count and the ETA it used.
func TestConfirmSize_terminal(t *testing.T) {
	x := &spec.Experiment{ID: "v/x"}
	x.Spec.Engine.Family = "vllm"
	x.Points = []*spec.Point{{ID: "v/x"}}
	xs := []*runExperiment{{x: x, points: x.Points}}
	for _, tc := range []struct {
		answer string
		start  bool
	}{{"y\n", true}, {"YES\n", true}, {"n\n", false}, {"\n", false}, {"", false}} {
		var stderr strings.Builder
		e := &env{stderr: &stderr, stdin: strings.NewReader(tc.answer), isTerminal: func() bool { return true },
			config: &config{Getenv: func(string) string { return "" }}}
		c := &runCmd{}
		c.Rounds = 2000
		err := c.confirmSize(e, xs, nil)
		if (err == nil) != tc.start {
			t.Errorf("answer %q: err %v, want started %v", tc.answer, err, tc.start)
		}
		if !strings.Contains(stderr.String(), "rigor: this run starts 2000 runs (1 point × 2000 rounds) in 2000 processes (more than 1000), ETA unknown (none of them ran before).\nrigor: start it? [y/N] ") {
			t.Errorf("answer %q: the question was %q", tc.answer, stderr.String())
		}
	}
	// --yes does not ask.
	e := &env{stdin: strings.NewReader(""), isTerminal: func() bool { t.Error("asked with --yes"); return true }}
	c := &runCmd{Yes: true}
	c.Rounds = 2000
	if err := c.confirmSize(e, xs, nil); err != nil {
		t.Error(err)
	}
}

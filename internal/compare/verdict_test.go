package compare

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/hoststate"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/rig"
)

// TestHistoryNoise_runsPerInvocation: history invocations of five runs
// (rounds) estimate the noise of one run, not of a mean of five, so that
// sides of one run an invocation are not tested against a spread five
// times too small (the real A-vs-A bench of issue 25 mixed both and gave
// 3 false verdicts in 30).
func TestHistoryNoise_runsPerInvocation(t *testing.T) {
	var hist []results.Run
	host := &rig.Rig{Hostname: "h", HostProcessorModelName: "c"}
	dev := []float64{-0.05, 0.05, -0.05, 0.05, 0} // each invocation's runs, in log units
	for inv := range 4 {
		for k, d := range dev {
			v := 100 * math.Exp(d*float64(1-2*(inv%2)))
			hist = append(hist, results.Run{ID: fmt.Sprint(inv, k), Experiment: "x/a", Point: "x/a", Status: "ok",
				Invocation: fmt.Sprint("inv", inv), Round: k + 1, LockDigest: "l", Rig: host,
				Metrics: []results.Metric{{Name: "tokSOut", Test: "tg", Unit: "tok/s", Direction: "higher", Samples: []float64{v}}}})
		}
	}
	sd := buildSide(Side{Runs: []results.Run{{ID: "s", Experiment: "x/a", Point: "x/a", Status: "ok", Invocation: "now", LockDigest: "l", Rig: host,
		Metrics: []results.Metric{{Name: "tokSOut", Test: "tg", Unit: "tok/s", Direction: "higher", Samples: []float64{100}}}}}}, "A", Options{})
	est := historyNoise(hist, []*side{sd})["\x00tokSOut tg"]
	// One run's deviation is 0.04 in log units (root mean square of dev);
	// the invocation means are all 1.0 (no spread between invocations).
	if est.df != 3 || math.Abs(est.sd()-math.Sqrt(4.0/3*0.002)) > 1e-9 {
		t.Errorf("estimate sd %g df %d, want %g (one run's spread, 4 invocations over df 3) and 3", est.sd(), est.df, math.Sqrt(4.0/3*0.002))
	}
}

// TestConfounder: a change that the machine's state explains is named:
// other processes' share of the cores, or, on a busy machine, the share
// of the wall time the engine got the CPU (what the real A-vs-A bench of
// issue 25 saw: 0.17 against 0.09 on a saturated 2-core machine).
func TestConfounder(t *testing.T) {
	st := func(other, engine float64) *hoststate.State {
		return &hoststate.State{Cores: 2, OtherCores: &other, WallSeconds: 10, EngineCPUSeconds: engine * 10, Peak: &hoststate.Sample{At: time.Time{}, Load1: 30}}
	}
	row := func(delta float64, a, b *hoststate.State) *Row {
		return &Row{Delta: delta, runsA: []*results.Run{{Machine: a}}, runsB: []*results.Run{{Machine: b}}}
	}
	cases := []struct {
		name string
		row  *Row
		dir  string
		want string
	}{
		{"engine starved on B, B slower", row(-35, st(1.8, 0.17), st(1.9, 0.09)), results.HigherIsBetter, "engine got 0.09 of the wall time on the CPU during B's runs against 0.17"},
		{"engine starved on B, B faster", row(+35, st(1.8, 0.17), st(1.9, 0.09)), results.HigherIsBetter, ""},
		{"latency: starved B is slower", row(+40, st(1.8, 0.17), st(1.9, 0.09)), results.LowerIsBetter, "engine got 0.09"},
		{"hog on B", row(-50, st(0.02, 1), st(1.6, 0.5)), results.HigherIsBetter, "other processes took 1.6 of 2 cores during B's runs against 0.0 of 2"},
		{"quiet machine, same states", row(-15, st(0.02, 1), st(0.02, 0.87)), results.HigherIsBetter, ""},
	}
	for _, c := range cases {
		got := confounder(c.row, c.dir)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

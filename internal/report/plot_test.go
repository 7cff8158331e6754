package report

import (
	"fmt"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/compare"
	"github.com/rigorbench/rigor/internal/results"
	"gonum.org/v1/plot"
)

// minuteRuns are runs of one experiment a couple of minutes apart, with
// the tokSOut samples given, and one failed run among them.
func minuteRuns(samples ...[]float64) []results.Run {
	t0 := time.Date(2026, 6, 1, 10, 3, 0, 0, time.UTC)
	var runs []results.Run
	for i, x := range samples {
		start := t0.Add(time.Duration(i) * 2 * time.Minute)
		r := results.Run{Schema: 1, ID: fmt.Sprintf("20260601T10%02d00Z-%04d", 3+2*i, i), Experiment: "e/x", Point: "e/x",
			Start: start, End: start.Add(time.Minute), Status: results.StatusOK,
			Metrics: []results.Metric{{Name: "tokSOut", Test: "tg16", Unit: "tok/s", Direction: "higher", Samples: x}}}
		if x == nil {
			r.Status, r.Error, r.Metrics = results.StatusFailed, "boom", nil
		}
		runs = append(runs, r)
	}
	return runs
}

// Runs minutes apart get x tick labels; a rate's interval is computed on
// the log scale and the axis is clipped at 0, so neither bars nor the
// failed run's cross go below 0 tok/s.
func TestHistoryFigure_minutesAndZero(t *testing.T) {
	runs := minuteRuns([]float64{1, 100, 2}, []float64{40, 45, 50}, nil, []float64{3, 90, 5})
	f := HistoryFigure(compare.Log(runs), runs)
	p := f.Plots[0]
	labels := 0
	for _, tk := range p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max) {
		if tk.Label != "" {
			labels++
		}
	}
	if labels < 2 {
		t.Errorf("%d x tick labels over runs 6 minutes apart, want at least 2", labels)
	}
	if p.Y.Min < 0 {
		t.Errorf("the y axis starts at %g tok/s, below 0", p.Y.Min)
	}
	if _, ok := p.Y.Scale.(plot.LogScale); ok {
		t.Errorf("a log axis for values within 100×")
	}
}

// Values 1000× apart get a log y axis.
func TestHistoryFigure_wideRange(t *testing.T) {
	runs := minuteRuns([]float64{1, 1.1, 0.9}, []float64{1000, 1100, 900})
	f := HistoryFigure(compare.Log(runs), runs)
	p := f.Plots[0]
	if _, ok := p.Y.Scale.(plot.LogScale); !ok {
		t.Errorf("y scale %T for values 1000× apart, want a log scale", p.Y.Scale)
	}
	if p.Y.Min <= 0 {
		t.Errorf("log axis from %g", p.Y.Min)
	}
}

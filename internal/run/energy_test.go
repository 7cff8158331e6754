package run

import (
	"math"
	"strings"
	"testing"

	"github.com/rigorbench/rigor/internal/hoststate"
	"github.com/rigorbench/rigor/internal/metric"
	"github.com/rigorbench/rigor/internal/results"
)

func TestTestTokens(t *testing.T) {
	for test, want := range map[string]float64{
		"tg64": 64, "pp512": 512, "pp512+tg128": 640, "tg128@pp4096": 128, "tg64 @ d512": 64,
		"throughput": 0, "": 0, "tgx": 0,
	} {
		if got := testTokens(test); got != want {
			t.Errorf("testTokens(%q) = %v, want %v", test, got, want)
		}
	}
}

func TestEnergyMetrics(t *testing.T) {
	ms := []results.Metric{
		{Name: metric.TokSOut, Test: "tg64", Value: 32, Samples: []float64{30, 34}, WarmupSamples: []float64{16}},
		{Name: metric.EngineTokSOut, Test: "tg64", Value: 40, Samples: []float64{40, 40}},
		{Name: metric.TokSPrompt, Test: "pp512", Value: 256, Samples: []float64{256}},
	}
	// 64/16 + 64/30 + 64/34 + 512/256: the engine counter is the same repetitions.
	if got, want := timedSeconds(ms), 4+64.0/30+64.0/34+2; math.Abs(got-want) > 1e-9 {
		t.Errorf("timedSeconds = %v, want %v", got, want)
	}
	if got := timedSeconds([]results.Metric{{Name: metric.TokSOut, Test: "throughput", Value: 9}}); got != 0 {
		t.Errorf("a test without tokens: got %v, want 0 (the section is unknown)", got)
	}
	te := &hoststate.TimedEnergy{Seconds: 10, Joules: 1600, AvgW: 160, From: timedFrom, Domains: []string{"gpu0 (counter)", "package-0 (counter)"}}
	got := energyMetrics(ms, te)
	if len(got) != 4 {
		t.Fatalf("got %d metrics, want tok/J and J for tg64 and pp512: %+v", len(got), got)
	}
	out, e := got[0], got[1]
	if out.Name != metric.TokPerJOut || out.Unit != "tok/J" || out.Value != 0.2 || out.Samples[1] != 34.0/160 || out.Direction != metric.Higher {
		t.Errorf("tok/J: got %+v", out)
	}
	if !strings.Contains(out.Derived, "160 W") || !strings.Contains(out.Derived, "gpu0 (counter) + package-0 (counter)") {
		t.Errorf("tok/J says how: %q", out.Derived)
	}
	if e.Name != metric.EnergyJ || e.Value != 320 || e.Samples[0] != 160*64.0/30 || e.Direction != metric.Lower {
		t.Errorf("J per repetition: got %+v", e)
	}
	if got := energyMetrics(ms, nil); got != nil {
		t.Errorf("nothing measured: got %+v, want none", got)
	}
}

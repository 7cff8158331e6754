package compare

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/results"
)

// syntheticRuns builds n runs of one sweep: points points, three metrics of
// three samples each, a spec per point, the engine commit moving every 500
// runs, as a results repository grows.
func syntheticRuns(n, points int, side string, gain float64) []results.Run {
	runs := make([]results.Run, n)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, b := sweepSides()
	tmpl := a.Runs[0]
	if side == "B" {
		tmpl = b.Runs[0]
	}
	for i := range runs {
		p := i % points
		r := tmpl
		r.ID = fmt.Sprintf("%s-%05d", side, i)
		r.Start = base.Add(time.Duration(i) * time.Minute)
		r.Swept = map[string]any{"flags.ub": float64(8 * (p + 1))}
		r.Spec = specJSON(map[string]any{"ngl": 99, "ub": 8 * (p + 1), "fa": 1}, nil)
		r.Engine.Commit = fmt.Sprintf("%040x", i/500)
		c := 50 + float64(p)/10
		r.Metrics = []results.Metric{
			{Name: "tokSOut", Test: "tg128", Unit: "tok/s", Direction: "higher", Samples: samples(c*gain, 1, 3, i)},
			{Name: "tokSPrompt", Test: "pp512", Unit: "tok/s", Direction: "higher", Samples: samples(20*c, 1, 3, i+1)},
			{Name: "ttftMs", Unit: "ms", Direction: "lower", Samples: samples(400-c, 2, 3, i+2)},
		}
		runs[i] = r
	}
	return runs
}

// reportCPU adds the process CPU time per iteration as "cpu-ns/op", the
// figure to read on a shared, loaded machine.
func reportCPU(b *testing.B, start time.Duration, ok bool) {
	if end, ok2 := processCPU(); ok && ok2 && b.N > 0 {
		b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkCompare10000 compares, without rendering, two sides of 5000 runs each: 100 points ×
// 50 runs a side, 150 samples per metric, point and side.
func BenchmarkCompare10000(b *testing.B) {
	sa := Side{"A", syntheticRuns(5000, 100, "A", 1)}
	sb := Side{"B", syntheticRuns(5000, 100, "B", 1.02)}
	cpu0, cpuOK := processCPU()
	for b.Loop() {
		if _, err := Compare(sa, sb, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0, cpuOK)
}

// BenchmarkCompare10000Small compares 10,000 runs spread over 1000 points
// a side, 5 runs each: 15 samples per cell, the exact test's worst case.
func BenchmarkCompare10000Small(b *testing.B) {
	sa := Side{"A", syntheticRuns(5000, 1000, "A", 1)}
	sb := Side{"B", syntheticRuns(5000, 1000, "B", 1.02)}
	cpu0, cpuOK := processCPU()
	for b.Loop() {
		if _, err := Compare(sa, sb, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0, cpuOK)
}

// BenchmarkDecodeCompare10000 includes decoding the 10,000 records from
// JSON, the part of `rigor diff` the results store does.
func BenchmarkDecodeCompare10000(b *testing.B) {
	enc := func(runs []results.Run) [][]byte {
		out := make([][]byte, len(runs))
		for i, r := range runs {
			out[i], _ = json.Marshal(r)
		}
		return out
	}
	ja := enc(syntheticRuns(5000, 100, "A", 1))
	jb := enc(syntheticRuns(5000, 100, "B", 1.02))
	dec := func(raw [][]byte) []results.Run {
		out := make([]results.Run, len(raw))
		for i, r := range raw {
			if err := json.Unmarshal(r, &out[i]); err != nil {
				b.Fatal(err)
			}
		}
		return out
	}
	cpu0, cpuOK := processCPU()
	for b.Loop() {
		if _, err := Compare(Side{"A", dec(ja)}, Side{"B", dec(jb)}, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0, cpuOK)
}

// BenchmarkLog10000 builds the history (the renderers are timed by
// internal/cli's BenchmarkDiffLog10000, whole commands) of 10,000 runs of a
// 10-point sweep.
func BenchmarkLog10000(b *testing.B) {
	runs := syntheticRuns(10000, 10, "A", 1)
	cpu0, cpuOK := processCPU()
	for b.Loop() {
		Log(runs)
	}
	reportCPU(b, cpu0, cpuOK)
}

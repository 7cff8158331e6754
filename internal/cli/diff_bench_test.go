//go:build unix

package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/rig"
)

// benchModule makes a module whose results/ holds 10,000 records: two
// sweeps (bench/a, bench/b) of 50 points with 5,000 runs each, every run
// with three metrics of three samples, the engine commit moving every 500
// runs, as a results repository of a busy rig grows.
func benchModule(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "cue.mod"), 0o755); err != nil {
		b.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "cue.mod", "module.cue"), []byte("module: \"example.com/b@v0\"\nlanguage: version: \"v0.17.0\"\n"), 0o644)
	store := results.Open(dir)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 10000 {
		exp, gain := "bench/a", 1.0
		if i%2 == 1 {
			exp, gain = "bench/b", 1.02
		}
		p := i / 2 % 50
		start := t0.Add(time.Duration(i) * time.Minute)
		c := (50 + float64(p)/10) * gain
		spec, _ := json.Marshal(map[string]any{"flags": map[string]any{"ngl": 99, "ub": 8 * (p + 1)}, "bench": map[string]any{"r": 3},
			"model": map[string]any{"hf": "example/Demo-GGUF", "quant": "Q4_K_M"}})
		r := &results.Run{Schema: 1, ID: fmt.Sprintf("%s-%05d", start.Format("20060102T150405Z"), i), Experiment: exp,
			Point: fmt.Sprintf("%s[ub=%d]", exp, 8*(p+1)), Swept: map[string]any{"flags.ub": 8 * (p + 1)}, Spec: spec,
			Engine: results.Engine{Family: "llama.cpp", Commit: fmt.Sprintf("%040x", i/500)},
			Model:  results.Model{Quant: "Q4_K_M", Files: []results.File{{Path: "m.gguf", SHA256: fmt.Sprintf("%064x", 7)}}},
			Rig:    &rig.Rig{AcceleratorModelName: "NVIDIA GeForce RTX 4090", AcceleratorsPerNode: 2, AcceleratorDriverVersion: "580.82.07"},
			Start:  start, End: start.Add(3 * time.Minute), Status: results.StatusOK,
			Metrics: []results.Metric{
				{Name: "tokSOut", Test: "tg128", Unit: "tok/s", Direction: "higher", Samples: []float64{c, c * 1.004, c * 0.997}},
				{Name: "tokSPrompt", Test: "pp512", Unit: "tok/s", Direction: "higher", Samples: []float64{20 * c, 20.1 * c, 19.9 * c}},
				{Name: "ttftMs", Unit: "ms", Direction: "lower", Samples: []float64{400 - c, 401 - c, 399 - c}},
			}}
		data, err := results.Encode(r)
		if err != nil {
			b.Fatal(err)
		}
		path := store.RecordPath(exp, r.ID)
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// BenchmarkDiffLog10000 runs whole commands, loading included, over a
// results directory of 10,000 records.
func BenchmarkDiffLog10000(b *testing.B) {
	dir := benchModule(b)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"diff-latest", []string{"diff", "bench/a", "bench/b"}},
		{"diff-all", []string{"diff", "bench/a", "bench/b", "--all"}},
		{"log", []string{"log", "bench/a"}},
		{"results", []string{"results"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			cpu0 := cpuTime()
			for b.Loop() {
				if code := Run(append([]string{"-C", dir}, c.args...), io.Discard, io.Discard); code != 0 {
					b.Fatalf("rigor %v: exit %d", c.args, code)
				}
			}
			// CPU time is the figure to read on a shared, loaded machine.
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime is the process's user plus system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

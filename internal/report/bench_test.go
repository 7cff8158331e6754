//go:build unix

package report

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/results"
)

// BenchmarkReport10000 is `rigor report -o DIR` over a results directory
// of 10,000 records shaped like a year of use (realisticRepo): load every
// record, build every page and plot, write the site. It reports the
// largest page.
func BenchmarkReport10000(b *testing.B) {
	root := b.TempDir()
	store := results.Open(root)
	for _, r := range genRuns(realisticRepo(), 1) {
		data, err := results.Encode(r)
		if err != nil {
			b.Fatal(err)
		}
		p := store.RecordPath(r.Experiment, r.ID)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	out := filepath.Join(b.TempDir(), "site")
	largest := 0
	cpu0 := cpuTime()
	for b.Loop() {
		runs, warnings, err := store.List(results.Filter{})
		if err != nil || len(warnings) > 0 || len(runs) != 10000 {
			b.Fatalf("listing: %d runs, %v, %v", len(runs), warnings, err)
		}
		site, err := Build(runs, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := site.Write(out); err != nil {
			b.Fatal(err)
		}
		for _, p := range site.Pages {
			largest = max(largest, len(p.HTML))
		}
	}
	// CPU time is the figure to read on a shared, loaded machine.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(largest), "max-page-bytes")
}

// cpuTime is the process's user plus system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkBuild10000 is the building alone, the records already in
// memory: the history, diffs, plots and pages of 10,000 runs.
func BenchmarkBuild10000(b *testing.B) {
	runs := genRuns(realisticRepo(), 1)
	cpu0 := cpuTime()
	for b.Loop() {
		if _, err := Build(runs, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

//go:build unix

package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"
	"weak"

	"github.com/rigorbench/rigor/internal/results"
)

// TestReportGroups_keepNoSummaries: the full report's experiments keep
// nothing of the index's listing of every run once it is dropped (issue
// 30: at 100,000 records the listing's summaries stayed alive for the
// speed-vs-quality peers while the pages were drawn). Counted with weak
// pointers after a collection, not by memory. The peers an experiment's
// view reads are still the latest run of each point of the other
// experiments of its package.
func TestReportGroups_keepNoSummaries(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "cue.mod"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "cue.mod", "module.cue"), []byte("module: \"example.com/s@v0\"\nlanguage: version: \"v0.17.0\"\n"), 0o644)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	latest := map[string][]string{} // experiment → the ids of its points' latest runs
	for i := range 3 {
		exp := fmt.Sprintf("lab/e%d", i)
		ids := writeRuns(t, dir, exp, 20, t0.Add(time.Duration(i)*time.Second), 100*i)
		latest[exp] = ids[len(ids)-5:] // 5 points, a run a minute
	}
	store := results.Open(dir)
	sums, _, err := store.Summaries(results.Filter{})
	if err != nil || len(sums) != 60 {
		t.Fatalf("listed %d runs (%v), want 60", len(sums), err)
	}
	weaks := make([]weak.Pointer[results.Summary], len(sums))
	for i, x := range sums {
		weaks[i] = weak.Make(x)
	}
	var lw loadWarnings
	groups, err := reportGroups(store, sums, &lw)
	if err != nil {
		t.Fatal(err)
	}
	sums = nil
	runtime.GC()
	runtime.GC()
	alive := 0
	for _, w := range weaks {
		if w.Value() != nil {
			alive++
		}
	}
	if alive != 0 {
		t.Errorf("with the listing dropped, the report's experiments keep %d of its 60 summaries, want none", alive)
	}
	for _, g := range groups {
		runs, err := g.Peers()
		if err != nil {
			t.Fatal(err)
		}
		var got, want []string
		for _, r := range runs {
			got = append(got, r.ID)
		}
		for exp, ids := range latest {
			if exp != g.ID {
				want = append(want, ids...)
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: peers %v, want the latest run of each point of the others %v", g.ID, got, want)
		}
	}
	runtime.KeepAlive(groups)
}

package report

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/rigorbench/rigor/internal/results"
)

// TestWriteGroups_streams: each experiment's pages are on disk before the
// next experiment's runs are listed, so that the report holds the pages of
// the experiments being drawn, not the site's (issue 30); one worker makes
// the order certain. The site then holds every page, and the index.
func TestWriteGroups_streams(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	runs := genRuns(realisticRepo(), 0.02)
	byExp := map[string][]*results.Run{}
	for _, r := range runs {
		byExp[r.Experiment] = append(byExp[r.Experiment], r)
	}
	parent := t.TempDir()
	out := filepath.Join(parent, "site")
	// The pages on disk so far, in the directory being written beside out.
	onDisk := func() int {
		n := 0
		filepath.WalkDir(parent, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.Contains(p, string(filepath.Separator)+"experiments"+string(filepath.Separator)) {
				n++
			}
			return err
		})
		return n
	}
	var groups []Group
	listed := 0
	for id, rs := range byExp {
		full := map[*results.Summary]*results.Run{}
		groups = append(groups, Group{ID: id, Runs: len(rs),
			Summaries: func() ([]*results.Summary, error) {
				// The experiments before this one were written.
				if n := onDisk(); n != listed {
					t.Errorf("when the runs of experiment %d were listed, %d experiment pages were on disk, want %d", listed+1, n, listed)
				}
				listed++
				var sums []*results.Summary
				for _, r := range rs {
					x := results.Summarize(r)
					full[x] = r
					sums = append(sums, x)
				}
				return sums, nil
			},
			Load: func(x *results.Summary) (*results.Run, error) { return full[x], nil }})
	}
	site, err := WriteGroups(out, groups, nil, Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if listed != len(byExp) || site.Experiments != len(byExp) || site.Runs != len(runs) {
		t.Errorf("listed %d experiments, the site has %d of %d runs; want %d experiments, %d runs", listed, site.Experiments, site.Runs, len(byExp), len(runs))
	}
	// The same pages as the site built in memory.
	want, err := Build(runs, Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range want.Pages {
		got, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(p.Path)))
		if err != nil || string(got) != string(p.HTML) {
			t.Errorf("%s: written %d bytes (%v), built in memory %d", p.Path, len(got), err, len(p.HTML))
		}
	}
}

// TestWriteGroups_drawBudget: the experiments drawn at once hold at most
// drawBudget runs between them, and an experiment of more runs is drawn
// alone, however many CPUs there are: the report's memory is bounded by
// its largest experiment, not by the store (issue 30: at 100,000 records
// two sweeps of 10,000 runs were drawn at once, one per CPU). An
// experiment is being drawn from when its runs are listed until its page
// is on disk (counts, not times). The pages are those built in memory.
func TestWriteGroups_drawBudget(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	defer func(b int) { drawBudget = b }(drawBudget)
	drawBudget = 50
	runs := genRuns(realisticRepo(), 0.02)
	byExp := map[string][]*results.Run{}
	for _, r := range runs {
		byExp[r.Experiment] = append(byExp[r.Experiment], r)
	}
	parent := t.TempDir()
	out := filepath.Join(parent, "site")
	// Whether an experiment's page is on disk, in the directory being
	// written beside out.
	written := func(id string) bool {
		m, _ := filepath.Glob(filepath.Join(parent, ".site.*.tmp", "experiments", filepath.FromSlash(id)+".html"))
		return len(m) > 0
	}
	var mu sync.Mutex
	listed := map[string]int{} // experiment → its runs, once listed
	largest, most := 0, 0
	var groups []Group
	for id, rs := range byExp {
		largest = max(largest, len(rs))
		full := map[*results.Summary]*results.Run{}
		groups = append(groups, Group{ID: id, Runs: len(rs),
			Summaries: func() ([]*results.Summary, error) {
				mu.Lock()
				defer mu.Unlock()
				listed[id] = len(rs)
				drawing, n := []string{}, 0
				for other, k := range listed {
					if other == id || !written(other) {
						drawing = append(drawing, other)
						n += k
					}
				}
				most = max(most, n)
				if n > drawBudget && len(drawing) > 1 {
					t.Errorf("%d runs of %d experiments drawn at once (%v), want at most %d, or one experiment alone", n, len(drawing), drawing, drawBudget)
				}
				var sums []*results.Summary
				for _, r := range rs {
					x := results.Summarize(r)
					full[x] = r
					sums = append(sums, x)
				}
				return sums, nil
			},
			Load: func(x *results.Summary) (*results.Run, error) { mu.Lock(); defer mu.Unlock(); return full[x], nil }})
	}
	if largest <= drawBudget {
		t.Fatalf("the largest experiment has %d runs: it must have more than the budget, %d", largest, drawBudget)
	}
	site, err := WriteGroups(out, groups, nil, Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("at most %d runs drawn at once (budget %d, largest experiment %d)", most, drawBudget, largest)
	if len(listed) != len(byExp) || site.Runs != len(runs) {
		t.Errorf("listed %d experiments, the site has %d runs; want %d, %d", len(listed), site.Runs, len(byExp), len(runs))
	}
	want, err := Build(runs, Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range want.Pages {
		got, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(p.Path)))
		if err != nil || string(got) != string(p.HTML) {
			t.Errorf("%s: written %d bytes (%v), built in memory %d", p.Path, len(got), err, len(p.HTML))
		}
	}
}

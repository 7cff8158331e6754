//go:build unix

package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/rig"
)

// writeRuns writes n records of a 5-point sweep of experiment exp into the
// module at dir, starting at t0, a minute apart, with ids made from seq.
func writeRuns(t testing.TB, dir, exp string, n int, t0 time.Time, seq int) []string {
	t.Helper()
	store := results.Open(dir)
	var ids []string
	for i := range n {
		p := i % 5
		start := t0.Add(time.Duration(i) * time.Minute)
		c := 50 + float64(p)
		spec, _ := json.Marshal(map[string]any{"flags": map[string]any{"ngl": 99, "ub": 8 * (p + 1)}, "bench": map[string]any{"r": 3},
			"model": map[string]any{"hf": "example/Demo-GGUF", "quant": "Q4_K_M"}})
		r := &results.Run{Schema: 1, ID: fmt.Sprintf("%s-%06d", start.Format("20060102T150405Z"), seq+i), Experiment: exp,
			Point: fmt.Sprintf("%s[ub=%d]", exp, 8*(p+1)), Swept: map[string]any{"flags.ub": 8 * (p + 1)}, Spec: spec,
			Engine: results.Engine{Family: "llama.cpp", Commit: fmt.Sprintf("%040x", 1)},
			Model:  results.Model{Quant: "Q4_K_M", Files: []results.File{{Path: "m.gguf", SHA256: fmt.Sprintf("%064x", 7)}}},
			Rig:    &rig.Rig{AcceleratorModelName: "NVIDIA GeForce RTX 4090", AcceleratorsPerNode: 2},
			Start:  start, End: start.Add(3 * time.Minute), Status: results.StatusOK,
			Metrics: []results.Metric{
				{Name: "tokSOut", Test: "tg128", Unit: "tok/s", Direction: "higher", Samples: []float64{c, c * 1.004, c * 0.997}},
			}}
		data, err := results.Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		path := store.RecordPath(exp, r.ID)
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	return ids
}

// TestPerExperimentReads_independentOfOtherRecords runs the verbs that
// concern one experiment or two runs in a store where that experiment
// sits beside 200 and then 2,000 records of other experiments, and
// asserts by counts (records read, their bytes, directory entries
// listed), not times, that what each verb reads does not grow with the
// other records (issue 30).
func TestPerExperimentReads_independentOfOtherRecords(t *testing.T) {
	type cost struct{ records, bytes, dirEntries int64 }
	siblings := map[int]int{} // others → directories beside lab/target in lab/
	measure := func(others int) map[string]cost {
		dir, ids, sib := scaleStore(t, others)
		siblings[others] = sib
		out := map[string]cost{}
		for _, c := range scaleVerbs(dir, ids) {
			r0 := results.Reads()
			stdout, stderr, code := runCLI(t, append([]string{"-C", dir}, c.args...)...)
			if code != 0 && code != 1 {
				t.Fatalf("rigor %v: exit %d\n%s%s", c.args, code, stdout, stderr)
			}
			r1 := results.Reads()
			out[c.name] = cost{r1.Records - r0.Records, r1.Bytes - r0.Bytes, r1.DirEntries - r0.DirEntries}
		}
		return out
	}
	small, large := measure(200), measure(2000)
	for name, s := range small {
		l := large[name]
		t.Logf("%s: 200 others: %+v; 2,000 others: %+v", name, s, l)
		// The index may hold the target's summaries in the larger store
		// (its records have aged past the racy window while the others
		// were written) and read fewer: more is what must not happen.
		if l.records > s.records || l.bytes > s.bytes {
			t.Errorf("%s read %d records (%d bytes) beside 200 records of other experiments, %d (%d bytes) beside 2,000: it must read only its own",
				name, s.records, s.bytes, l.records, l.bytes)
		}
		// A glob lists the directories it could match: each sibling of
		// lab/target in lab/ is one entry, its records are not listed.
		if name == "report-glob" {
			if more := siblings[2000] - siblings[200]; l.dirEntries-s.dirEntries > int64(more) {
				t.Errorf("%s listed %d directory entries beside 200 records of other experiments, %d beside 2,000: more than the %d directories added beside it",
					name, s.dirEntries, l.dirEntries, more)
			}
			continue
		}
		// A run id names no experiment: the first lookup in a store whose
		// run-id map is missing lists every directory (not a record is
		// read); once the map is written, none.
		if name == "diff-runs-again" && (s.dirEntries != 0 || l.dirEntries != 0) {
			t.Errorf("%s listed %d directory entries beside 200 records of other experiments, %d beside 2,000: the index's run-id map must find them",
				name, s.dirEntries, l.dirEntries)
		}
		if name != "diff-runs" && l.dirEntries != s.dirEntries {
			t.Errorf("%s listed %d directory entries beside 200 records of other experiments, %d beside 2,000: it must list only its experiment's",
				name, s.dirEntries, l.dirEntries)
		}
	}
}

// scaleStore is a module whose results hold lab/target (20 runs) beside
// others records of other experiments, 50 runs each, in lab/ and
// elsewhere, interleaved in time; it returns lab/target's run ids and how
// many directories sit beside lab/target in lab/.
func scaleStore(t testing.TB, others int) (dir string, ids []string, siblings int) {
	dir = t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "cue.mod"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "cue.mod", "module.cue"), []byte("module: \"example.com/s@v0\"\nlanguage: version: \"v0.17.0\"\n"), 0o644)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ids = writeRuns(t, dir, "lab/target", 20, t0, 0)
	for i := 0; i*50 < others; i++ {
		exp := fmt.Sprintf("other%02d/e%02d", i%7, i)
		if i%3 == 0 {
			exp = fmt.Sprintf("lab/o%02d", i)
			siblings++
		}
		writeRuns(t, dir, exp, 50, t0.Add(time.Duration(i)*time.Second), 1000+i*50)
	}
	return dir, ids, siblings
}

type scaleVerb struct {
	name string
	args []string
}

// scaleVerbs are the verbs that concern one experiment or two runs, in a
// store made by scaleStore.
func scaleVerbs(dir string, ids []string) []scaleVerb {
	return []scaleVerb{
		{"report", []string{"report", "lab/target", "-o", filepath.Join(dir, "site")}},
		{"report-glob", []string{"report", "lab/tar*", "-o", filepath.Join(dir, "site2")}},
		{"diff-runs", []string{"diff", ids[0], ids[5]}},
		// The records were written beside rigor, not by it: the first
		// lookup lists the store and writes the index's run-id map,
		// the next finds both ids through it.
		{"diff-runs-again", []string{"diff", ids[0], ids[5]}},
		{"diff-experiment", []string{"diff", "lab/target", "lab/target"}},
		{"log", []string{"log", "lab/target"}},
		{"results", []string{"results", "lab/target"}},
	}
}

// BenchmarkPerExperimentVerbs runs each verb of scaleVerbs at two store
// sizes (200 and 2,000 records of other experiments) and reports what it
// read per run beside its time: records, bytes and directory entries
// (TestPerExperimentReads_independentOfOtherRecords asserts those counts
// do not grow; issue 30).
//
//	go test -run '^$' -bench PerExperimentVerbs ./internal/cli
func BenchmarkPerExperimentVerbs(b *testing.B) {
	for _, others := range []int{200, 2000} {
		dir, ids, _ := scaleStore(b, others)
		// The index warm, as it is between runs: the records past its racy
		// window, summarized, and the run-id map written.
		time.Sleep(2100 * time.Millisecond)
		for _, args := range [][]string{{"results"}, {"diff", ids[0], ids[5]}} {
			var out, errb strings.Builder
			Run(append([]string{"-C", dir}, args...), &out, &errb)
		}
		for _, c := range scaleVerbs(dir, ids) {
			if c.name == "diff-runs" {
				continue // the first lookup only; diff-runs-again is the verb
			}
			b.Run(fmt.Sprintf("%s/others=%d", c.name, others), func(b *testing.B) {
				r0 := results.Reads()
				for b.Loop() {
					var out, errb strings.Builder
					if code := Run(append([]string{"-C", dir}, c.args...), &out, &errb); code != 0 && code != 1 {
						b.Fatalf("rigor %v: exit %d\n%s", c.args, code, errb.String())
					}
				}
				r1 := results.Reads()
				n := float64(b.N)
				b.ReportMetric(float64(r1.Records-r0.Records)/n, "records/op")
				b.ReportMetric(float64(r1.Bytes-r0.Bytes)/n, "bytes-read/op")
				b.ReportMetric(float64(r1.DirEntries-r0.DirEntries)/n, "dir-entries/op")
			})
		}
	}
}

// TestReport_unchangedWritesNothing: a second report of an unchanged
// store into the same directory writes no file: every file keeps its
// inode (a rewrite renames a new file into place), the manifest included
// (issue 30).
func TestReport_unchangedWritesNothing(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "cue.mod"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "cue.mod", "module.cue"), []byte("module: \"example.com/s@v0\"\nlanguage: version: \"v0.17.0\"\n"), 0o644)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	writeRuns(t, dir, "lab/a", 12, t0, 0)
	writeRuns(t, dir, "lab/b", 12, t0.Add(time.Second), 100)
	// Past the index's racy window (2 s) before the first report: a record
	// younger than that has no stat key, so its experiment has no cache
	// key and the first report's cache holds no entry for it; a second
	// report after the window rightly writes a cache that does. Without
	// this wait the test passed only while both reports ran within 2 s of
	// the writes, and failed on a loaded machine.
	time.Sleep(2100 * time.Millisecond)
	site := filepath.Join(dir, "site")
	inodes := func() map[string]uint64 {
		out := map[string]uint64{}
		filepath.WalkDir(site, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				t.Fatal(err)
			}
			if !d.IsDir() {
				fi, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				out[p] = fi.Sys().(*syscall.Stat_t).Ino
			}
			return nil
		})
		return out
	}
	for i := range 2 {
		if stdout, stderr, code := runCLI(t, "-C", dir, "report", "-o", site); code != 0 {
			t.Fatalf("report %d: exit %d\n%s%s", i+1, code, stdout, stderr)
		}
		if i == 0 {
			before := inodes()
			defer func() {
				after := inodes()
				if len(before) < 3 {
					t.Fatalf("the first report wrote %d files", len(before))
				}
				for p, ino := range before {
					if after[p] != ino {
						t.Errorf("%s was written again by a report of the same runs", p)
					}
				}
				if len(after) != len(before) {
					t.Errorf("the second report left %d files, the first %d", len(after), len(before))
				}
			}()
		}
	}
}

// TestReport_incremental: the full report reads only the records of the
// experiments that changed since the earlier report in the same directory
// (counts, not times): none when nothing changed, one experiment's when a
// run was added to it; the other experiments' pages are not written
// again, and the new run's experiment page is (issue 30).
func TestReport_incremental(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "cue.mod"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "cue.mod", "module.cue"), []byte("module: \"example.com/s@v0\"\nlanguage: version: \"v0.17.0\"\n"), 0o644)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 8 {
		writeRuns(t, dir, fmt.Sprintf("lab/e%d", i), 10, t0.Add(time.Duration(i)*time.Second), 100*i)
	}
	// The index trusts a record's stat only once it is older than its racy
	// window (2 s): until then the experiment is built every time.
	time.Sleep(2100 * time.Millisecond)
	site := filepath.Join(dir, "site")
	report := func() (records int64, out string) {
		r0 := results.Reads()
		stdout, stderr, code := runCLI(t, "-C", dir, "report", "-o", site)
		if code != 0 {
			t.Fatalf("report: exit %d\n%s%s", code, stdout, stderr)
		}
		return results.Reads().Records - r0.Records, stdout
	}
	ino := func(rel string) uint64 {
		fi, err := os.Stat(filepath.Join(site, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	first, out1 := report()
	if first < 80 {
		t.Fatalf("the first report read %d records, want all 80", first)
	}
	e0, e5 := ino("experiments/lab/e0.html"), ino("experiments/lab/e5.html")
	second, out2 := report()
	if second != 0 || out2 != out1 {
		t.Errorf("a report of an unchanged store read %d records (want 0) and said %q (the first: %q)", second, out2, out1)
	}
	// One run more in lab/e5.
	writeRuns(t, dir, "lab/e5", 1, t0.Add(time.Hour), 900)
	time.Sleep(2100 * time.Millisecond)
	third, out3 := report()
	// The new record is read once by the index (to summarize it), then
	// lab/e5's pages are built from the index, reading only the runs its
	// diff page compares: the latest and the previous run of each of its
	// 5 points (no drift to show).
	if third != 11 {
		t.Errorf("after a run was added to lab/e5 the report read %d records, want 11: the new one for the index, then the 10 lab/e5's diff page compares", third)
	}
	if !strings.Contains(out3, "(81 runs)") {
		t.Errorf("the report says %q, want 81 runs", out3)
	}
	if ino("experiments/lab/e0.html") != e0 {
		t.Errorf("lab/e0's page was written again though its runs did not change")
	}
	if ino("experiments/lab/e5.html") == e5 {
		t.Errorf("lab/e5's page was not written again though it has a new run")
	}
	page, _ := os.ReadFile(filepath.Join(site, "experiments", "lab", "e5.html"))
	if !strings.Contains(string(page), "20260101T010000Z") && !strings.Contains(string(page), "2026-01-01 01:00") {
		t.Errorf("lab/e5's page does not show the new run")
	}
	// A page deleted by hand is built again, not trusted to the cache.
	os.Remove(filepath.Join(site, "experiments", "lab", "e0.html"))
	if n, _ := report(); n != 10 {
		t.Errorf("with lab/e0's page deleted the report read %d records, want the 10 its diff page compares", n)
	}
	if _, err := os.Stat(filepath.Join(site, "experiments", "lab", "e0.html")); err != nil {
		t.Errorf("lab/e0's page was not written again: %v", err)
	}
}

// TestReport_readsWhatPagesNeed: with the index warm, a first full report
// (into a new directory) builds every page from the index's summaries
// and reads a record only where a page needs it whole: here the latest
// and the previous run of each point, which the diff pages compare; not
// the other runs (counts, not times; issue 30).
func TestReport_readsWhatPagesNeed(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "cue.mod"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "cue.mod", "module.cue"), []byte("module: \"example.com/s@v0\"\nlanguage: version: \"v0.17.0\"\n"), 0o644)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 3 {
		writeRuns(t, dir, fmt.Sprintf("lab/e%d", i), 50, t0.Add(time.Duration(i)*time.Second), 100*i)
	}
	time.Sleep(2100 * time.Millisecond) // past the index's racy window
	if _, stderr, code := runCLI(t, "-C", dir, "results"); code != 0 {
		t.Fatal(stderr)
	}
	for i, site := range []string{"site", "site2"} {
		r0 := results.Reads()
		stdout, stderr, code := runCLI(t, "-C", dir, "report", "-o", filepath.Join(dir, site))
		if code != 0 {
			t.Fatalf("report: exit %d\n%s%s", code, stdout, stderr)
		}
		if !strings.Contains(stdout, "(150 runs)") {
			t.Errorf("the report says %q, want 150 runs", stdout)
		}
		// 3 experiments of 5 points, 10 runs each.
		if n := results.Reads().Records - r0.Records; n != 30 {
			t.Errorf("report %d into a new directory read %d of the 150 records, want 30: the latest and the previous run of each point", i+1, n)
		}
	}
	a, _ := os.ReadFile(filepath.Join(dir, "site", "experiments", "lab", "e1.html"))
	if !strings.Contains(string(a), "50 runs") {
		t.Errorf("lab/e1's page does not show its 50 runs")
	}
}

// TestReport_indexPagesAreTheRecords': the full report builds its pages
// from the index's summaries, a report of patterns from the records
// themselves: the pages are the same, byte for byte, for runs with drift
// (an engine commit that changes), a failed run, a metric's direction
// and a sweep.
func TestReport_indexPagesAreTheRecords(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "cue.mod"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "cue.mod", "module.cue"), []byte("module: \"example.com/s@v0\"\nlanguage: version: \"v0.17.0\"\n"), 0o644)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	store := results.Open(dir)
	ids := writeRuns(t, dir, "lab/a", 25, t0, 0)
	writeRuns(t, dir, "lab/b", 10, t0.Add(time.Second), 100)
	for i, id := range ids {
		if i < 12 && i != 7 {
			continue
		}
		p := store.RecordPath("lab/a", id)
		r, err := results.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		if i >= 12 {
			r.Engine.Commit = fmt.Sprintf("%040x", 2)
			r.Metrics = append(r.Metrics, results.Metric{Name: "customLoss", Unit: "nats", Direction: "lower", Value: 12, Samples: []float64{11, 12, 13}})
		}
		if i == 7 {
			r.Status, r.Error, r.Metrics = results.StatusFailed, "exit 1", nil
		}
		data, err := results.Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2100 * time.Millisecond) // past the index's racy window
	for _, args := range [][]string{{"results"}, {"report", "-o", filepath.Join(dir, "index-site")}, {"report", "lab", "-o", filepath.Join(dir, "record-site")}} {
		if stdout, stderr, code := runCLI(t, append([]string{"-C", dir}, args...)...); code != 0 {
			t.Fatalf("rigor %v: exit %d\n%s%s", args, code, stdout, stderr)
		}
	}
	n := 0
	filepath.WalkDir(filepath.Join(dir, "record-site"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".html") {
			return err
		}
		rel, _ := filepath.Rel(filepath.Join(dir, "record-site"), p)
		want, _ := os.ReadFile(p)
		got, err := os.ReadFile(filepath.Join(dir, "index-site", rel))
		if err != nil {
			t.Errorf("the full report lacks %s: %v", rel, err)
			return nil
		}
		if string(got) != string(want) {
			t.Errorf("%s built from the index differs from the one built from the records:\n%s", rel, firstDiff(string(got), string(want)))
		}
		n++
		return nil
	})
	if n != 7 {
		t.Errorf("compared %d pages, want 7: the index and lab/a's and lab/b's experiment, sweep and diff pages", n)
	}
	page, _ := os.ReadFile(filepath.Join(dir, "index-site", "experiments", "lab", "a.html"))
	for _, want := range []string{"customLoss", "nats, lower is better", "drift", "exit 1"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("lab/a's page does not show %q", want)
		}
	}
}

// firstDiff shows where two texts first differ.
func firstDiff(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-80)
	return fmt.Sprintf("got  …%s…\nwant …%s…", a[lo:min(len(a), i+80)], b[lo:min(len(b), i+80)])
}

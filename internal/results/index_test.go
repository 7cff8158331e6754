package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// agedIndex makes every file old enough for the index to keep its entry.
func agedIndex(t *testing.T) {
	t.Helper()
	old := indexNow
	indexNow = func() time.Time { return time.Now().Add(time.Hour) }
	t.Cleanup(func() { indexNow = old })
}

func writeRecords(t *testing.T, s *Store, exp string, n int, from int) []*Run {
	t.Helper()
	var runs []*Run
	for i := from; i < from+n; i++ {
		start := t0.Add(time.Duration(i) * time.Minute)
		r := testRun(fmt.Sprintf("%s-%04d", start.Format("20060102T150405Z"), i), exp, start, float64(50+i), float64(51+i))
		if _, err := s.Write(r, map[string][]byte{"stdout": []byte("x\n")}); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	return runs
}

// checkSummaries compares the index's summaries, and its summaries with
// details, with the records read from scratch.
func checkSummaries(t *testing.T, s *Store, f Filter) []*Summary {
	t.Helper()
	runs, _, err := s.List(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []*Summary
	for _, detail := range []bool{false, true} {
		sums, warns, err := s.summaries(f, detail)
		if err != nil || len(warns) > 0 {
			t.Fatalf("Summaries(%+v, detail %v): %v, warnings %v", f, detail, err, warns)
		}
		if len(sums) != len(runs) {
			t.Fatalf("Summaries(%+v, detail %v) = %d summaries, List = %d runs", f, detail, len(sums), len(runs))
		}
		for i, r := range runs {
			want := Summarize(r)
			want.Path = s.RecordPath(r.Experiment, r.ID)
			if !detail {
				want.Detail = nil
			}
			got, _ := json.Marshal(sums[i])
			exp, _ := json.Marshal(want)
			if string(got) != string(exp) || sums[i].Path != want.Path {
				t.Errorf("summary %d (detail %v):\ngot  %s %s\nwant %s %s", i, detail, got, sums[i].Path, exp, want.Path)
			}
		}
		if !detail {
			out = sums
		}
	}
	return out
}

func segmentOf(t *testing.T, s *Store, dir string) *segment {
	t.Helper()
	data, err := os.ReadFile(s.indexPath(dir))
	if err != nil {
		t.Fatalf("reading the segment of %s: %v", dir, err)
	}
	seg, ok := decodeSegment(data, dir, true)
	if !ok {
		t.Fatalf("the segment of %s does not parse:\n%s", dir, data)
	}
	return seg
}

func TestIndexBuildsAndIsUsed(t *testing.T) {
	agedIndex(t)
	s := Open(t.TempDir())
	writeRecords(t, s, "a/x", 3, 0)
	writeRecords(t, s, "b", 2, 3)
	checkSummaries(t, s, Filter{})
	if seg := segmentOf(t, s, "a/x"); len(seg.Records) != 3 {
		t.Fatalf("segment of a/x holds %d records, want 3", len(seg.Records))
	}
	if _, err := os.Stat(filepath.Join(s.Dir, indexDir, ".gitignore")); err != nil {
		t.Errorf("the index does not ignore itself in git: %v", err)
	}

	// A summary planted in the segment, with the file's true stat, is
	// what the next listing shows: the records are not read again.
	seg := segmentOf(t, s, "b")
	seg.Records[0].Summary.Status = "planted"
	s.writeSegment("b", seg)
	sums, _, err := s.Summaries(Filter{Experiment: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if sums[0].Status != "planted" {
		t.Errorf("status %q: the record was read although its stat matched the index", sums[0].Status)
	}
}

func TestIndexStaleEntry(t *testing.T) {
	agedIndex(t)
	s := Open(t.TempDir())
	runs := writeRecords(t, s, "e", 3, 0)
	checkSummaries(t, s, Filter{})

	// Edit a record in place, keeping its size and modification time:
	// the change time still gives it away.
	p := s.RecordPath("e", runs[1].ID)
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	orig, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(orig, []byte(`"status": "ok"`))
	if i < 0 {
		t.Fatalf("no status in %s", orig)
	}
	edited := bytes.Clone(orig)
	copy(edited[i:], `"status": "ko"`)
	if err := os.WriteFile(p, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	_, warns, err := s.Summaries(Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var le *LoadError
	if len(warns) != 1 || !errors.As(warns[0], &le) || le.Path != p {
		t.Fatalf("record edited in place: warnings %v, want one naming %s", warns, p)
	}

	// A valid edit is read again and replaces the entry.
	r := *runs[1]
	r.Notes = "rerun on a quiet machine"
	data, _ := Encode(&r)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	sums := checkSummaries(t, s, Filter{Experiment: "e"})
	if sums[1].Status != StatusOK {
		t.Errorf("status after the fix: %q", sums[1].Status)
	}

	// A record removed behind the index's back disappears from it.
	if err := os.Remove(s.RecordPath("e", runs[0].ID)); err != nil {
		t.Fatal(err)
	}
	checkSummaries(t, s, Filter{})
	if seg := segmentOf(t, s, "e"); len(seg.Records) != 2 {
		t.Errorf("segment after a removal holds %d records, want 2", len(seg.Records))
	}

	// Records added behind its back appear.
	writeRecords(t, s, "e", 2, 10)
	if got := checkSummaries(t, s, Filter{}); len(got) != 4 {
		t.Errorf("after adding 2 records: %d summaries, want 4", len(got))
	}
}

func TestIndexRecentFilesAreNotKept(t *testing.T) {
	s := Open(t.TempDir())
	writeRecords(t, s, "e", 2, 0)
	checkSummaries(t, s, Filter{})
	// Files written just now may still change within the file system's
	// timestamp granularity: they are not trusted to the index yet.
	if seg := s.readSegment("e", true); len(seg.Records) != 0 {
		t.Errorf("segment holds %d records written a moment ago, want 0", len(seg.Records))
	}
}

func TestIndexDeletedAndDamaged(t *testing.T) {
	agedIndex(t)
	s := Open(t.TempDir())
	writeRecords(t, s, "e", 3, 0)
	writeRecords(t, s, "f", 1, 3)
	checkSummaries(t, s, Filter{})

	if err := os.RemoveAll(filepath.Join(s.Dir, indexDir)); err != nil {
		t.Fatal(err)
	}
	checkSummaries(t, s, Filter{Experiment: "e"})
	if seg := segmentOf(t, s, "e"); len(seg.Records) != 3 {
		t.Errorf("rebuilt segment holds %d records, want 3", len(seg.Records))
	}

	good, _ := os.ReadFile(s.indexPath("e"))
	for _, junk := range []string{"", "{", "rigor-index\t99\te\n", "rigor-index\t3\tf\n", string(good[:len(good)-5]),
		strings.Replace(string(good), "\tok\t", "\tok\tx\t", 1), string(good) + "x\t1\n"} {
		if err := os.WriteFile(s.indexPath("e"), []byte(junk), 0o644); err != nil {
			t.Fatal(err)
		}
		checkSummaries(t, s, Filter{})
	}

	// Segments of experiments that are gone are pruned by a full listing.
	if err := os.RemoveAll(filepath.Join(s.Dir, "f")); err != nil {
		t.Fatal(err)
	}
	checkSummaries(t, s, Filter{})
	if _, err := os.Stat(s.indexPath("f")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the segment of a removed experiment is kept: %v", err)
	}
}

func TestIndexTwoWriters(t *testing.T) {
	agedIndex(t)
	s := Open(t.TempDir())
	writeRecords(t, s, "e", 5, 0)
	// Two writers add records to the same experiment while two readers
	// list it, each updating the index.
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for w := range 2 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range 20 {
				n := 100 + w*100 + i
				start := t0.Add(time.Duration(n) * time.Minute)
				r := testRun(fmt.Sprintf("%s-%04d", start.Format("20060102T150405Z"), n), "e", start, 1, 2)
				if _, err := s.Write(r, nil); err != nil {
					errs <- err
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range 20 {
				if _, warns, err := Open(s.Root).Summaries(Filter{}); err != nil || len(warns) > 0 {
					errs <- fmt.Errorf("listing while writing: %v %v", err, warns)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	sums := checkSummaries(t, s, Filter{})
	if len(sums) != 45 {
		t.Errorf("%d summaries, want 45", len(sums))
	}
	// Whatever segment the last writer left is true to the files.
	seg := segmentOf(t, s, "e")
	names := make([]string, len(seg.Records))
	for i, e := range seg.Records {
		names[i] = e.Name
	}
	if len(names) != 45 || !slices.IsSorted(names) {
		t.Errorf("segment holds %d records (sorted: %v), want all 45", len(names), slices.IsSorted(names))
	}
}

func TestLatestPreviousImported(t *testing.T) {
	agedIndex(t)
	s := Open(t.TempDir())
	runs := writeRecords(t, s, "e", 4, 0)
	failed := testRun("20260508T050000Z-ffff", "e", t0.Add(time.Hour), 1)
	failed.Status, failed.Error = StatusFailed, "boom"
	failed.Provenance = &Provenance{Kind: "import", SHA256: "abc", Label: "L"}
	if _, err := s.Write(failed, nil); err != nil {
		t.Fatal(err)
	}
	latest, _, err := s.Latest(Filter{Experiment: "e"})
	if err != nil || len(latest) != 1 || latest[0].ID != runs[3].ID {
		t.Fatalf("Latest = %v, %v; want the last ok run %s", latest, err, runs[3].ID)
	}
	if len(latest[0].Processes) == 0 {
		t.Error("Latest returned a summary, not the full record")
	}
	prev, err := s.Previous("e", runs[3].ID)
	if err != nil || prev == nil || prev.ID != runs[2].ID {
		t.Errorf("Previous(e, %s) = %v, %v; want %s", runs[3].ID, prev, err, runs[2].ID)
	}
	if prev, err := s.Previous("e", runs[0].ID); prev != nil || err != nil {
		t.Errorf("Previous of the first run = %v, %v; want none", prev, err)
	}
	if prev, err := s.Previous("nothing/here", ""); prev != nil || err != nil {
		t.Errorf("Previous of an unknown experiment = %v, %v; want none", prev, err)
	}
	imp, _, err := s.Imported()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{ImportKey{SHA256: "abc", Label: "L"}.String(): "results/e/20260508T050000Z-ffff.json"}
	if fmt.Sprint(imp) != fmt.Sprint(want) {
		t.Errorf("Imported = %q, want %q", imp, want)
	}

	// Scoped to experiments, only their directories are read: another
	// experiment's import is not listed, and a broken record elsewhere
	// is not even opened.
	other := testRun("20260508T060000Z-eeee", "other", t0.Add(2*time.Hour), 1)
	other.Provenance = &Provenance{Kind: "import", SHA256: "def", Label: "M"}
	if _, err := s.Write(other, nil); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(s.Root, Dir, "broken"), 0o755)
	os.WriteFile(filepath.Join(s.Root, Dir, "broken", "20260508T070000Z-dddd.json"), []byte("{not json"), 0o644)
	imp, warnings, err := s.Imported("e", "e")
	if err != nil || len(warnings) != 0 || fmt.Sprint(imp) != fmt.Sprint(want) {
		t.Errorf("Imported(e) = %q, %v, %v; want %q and no warnings", imp, warnings, err, want)
	}
	imp, _, _ = s.Imported("other")
	if got := imp[ImportKey{SHA256: "def", Label: "M"}.String()]; len(imp) != 1 || got != "results/other/20260508T060000Z-eeee.json" {
		t.Errorf("Imported(other) = %q, want only other's import", imp)
	}
	imp, warnings, _ = s.Imported()
	if len(imp) != 2 || len(warnings) != 1 {
		t.Errorf("Imported() = %q with %d warnings, want both imports and the broken record's warning", imp, len(warnings))
	}
}

// TestSegmentRoundTrip encodes and decodes summaries with every field set,
// escapes included.
func TestSegmentRoundTrip(t *testing.T) {
	seg := &segment{Version: indexVersion, Dir: "lab/x", Records: []segmentEntry{
		{Name: "a.json", Key: fileKey{Size: 5193, Mtime: 1764600000123456789, Ctime: 1764600000223456789, Ino: 1 << 40},
			Summary: &Summary{ID: "20260508T032753Z-0001", Experiment: "lab/x", Point: "lab/x[ub=16, t=4]", Start: t0.Add(123456789),
				Status: StatusFailed, Error: "exit 1:\n\tsee\\stderr", Engine: EngineRef{Commit: "9a26522b", Ref: "b\t1", Version: "v 1"},
				Accelerator: "Intel Arc Pro B70", Accelerators: 4, Invocation: "inv-1", Import: &ImportKey{SHA256: "abc", Label: "run\n2"},
				Metrics: []MetricSummary{{Name: "tokSOut", Test: "tg64", Unit: "tok/s", N: 3, Mean: 14.292387000000001}, {Name: "ttftMs", N: 1, Mean: 0.1}},
				Detail: &Detail{End: t0.Add(time.Minute), Round: 2, Swept: `{"flags.ub":16,"x":"a\tb"}`, Host: "h1", Rig: "4× Intel Arc Pro B70",
					Busy: "load 9 on 2 cores before the run", SpecDigest: "sha256:1", LockDigest: "sha256:2",
					Hashes:  ConfigHashes{Spec: "s", Lock: "l", Env: "e", Rig: "r"},
					Samples: [][]float64{{14.1, 14.2, 14.577161000000004}, nil}, Directions: []string{"higher", "lo\"w,er\t"}}}},
		{Name: "b.json", Key: fileKey{Size: 1}, Summary: &Summary{ID: "b", Experiment: "elsewhere", Point: "elsewhere", Start: t0, Status: StatusOK, Detail: &Detail{}}},
	}}
	got, ok := decodeSegment(encodeSegment(seg), "lab/x", true)
	if !ok {
		t.Fatalf("does not decode:\n%s", encodeSegment(seg))
	}
	if len(got.Records) != 2 {
		t.Fatalf("%d records", len(got.Records))
	}
	for i, e := range seg.Records {
		g := got.Records[i]
		a, _ := json.Marshal(e)
		b, _ := json.Marshal(g)
		if string(a) != string(b) || !g.Summary.Start.Equal(e.Summary.Start) {
			t.Errorf("record %d:\ngot  %s\nwant %s", i, b, a)
		}
	}
	if _, ok := decodeSegment(encodeSegment(seg), "lab/y", true); ok {
		t.Error("a segment decodes as another directory's")
	}
}

// TestIndexSymlinkedRecord refuses a record that is a symbolic link (one
// linked out of results/ could make rigor read any file as a record): a
// warning naming it, never a summary of its target, before or after the
// target changes.
func TestIndexSymlinkedRecord(t *testing.T) {
	agedIndex(t)
	s := Open(t.TempDir())
	r := testRun("20260508T032753Z-0001", "e", t0, 1, 2)
	data, _ := Encode(r)
	target := filepath.Join(s.Root, "elsewhere.json")
	if err := os.WriteFile(target, data, 0o644); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(s.Dir, "e"), 0o755)
	if err := os.Symlink(target, s.RecordPath("e", r.ID)); err != nil {
		t.Skip(err)
	}
	for range 2 {
		for _, detail := range []bool{false, true} {
			sums, warns, err := s.summaries(Filter{}, detail)
			if err != nil || len(sums) != 0 || len(warns) != 1 || !strings.Contains(warns[0].Error(), "a symlink (to "+target+"), not a record") {
				t.Fatalf("summaries (detail %v): %d summaries, warnings %v, %v; want none and one warning naming the link", detail, len(sums), warns, err)
			}
		}
		runs, warns, err := s.List(Filter{})
		if err != nil || len(runs) != 0 || len(warns) != 1 {
			t.Fatalf("List: %d runs, warnings %v, %v; want none and one warning", len(runs), warns, err)
		}
		r.Status, r.Error = StatusFailed, "the target changed"
		data, _ = Encode(r)
		os.WriteFile(target, data, 0o644)
	}
	if _, err := Load(s.RecordPath("e", r.ID)); err == nil {
		t.Errorf("Load read a symlinked record")
	}
}

// TestIndexDirectoryKey covers the directory's key: an unchanged
// directory's listing comes from its segment, and every way of changing
// the directory is seen.
func TestIndexDirectoryKey(t *testing.T) {
	agedIndex(t)
	s := Open(t.TempDir())
	runs := writeRecords(t, s, "lab/e", 3, 0)
	checkSummaries(t, s, Filter{})
	seg := segmentOf(t, s, "lab/e")
	if seg.DirKey == (fileKey{}) || len(seg.Records) != 3 {
		t.Fatalf("segment of lab/e: key %+v, %d records; want a key and 3", seg.DirKey, len(seg.Records))
	}
	if root := segmentOf(t, s, "lab"); !slices.Equal(root.Subdirs, []string{"e"}) {
		t.Errorf("segment of lab: subdirectories %q, want [e]", root.Subdirs)
	}

	// A listing planted in the segment, under the directory's true key,
	// is what the next listing uses: the directory is not read again.
	planted := *seg
	planted.Records = seg.Records[1:]
	s.writeSegment("lab/e", &planted)
	if sums, _, _ := s.Summaries(Filter{}); len(sums) != 2 {
		t.Fatalf("%d summaries, want the 2 of the planted listing", len(sums))
	}
	// Anything created in the directory changes its key: the listing is
	// read again and the planted one corrected.
	if err := os.WriteFile(filepath.Join(s.Dir, "lab", "e", "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	checkSummaries(t, s, Filter{})

	// A record added with the directory's modification time set back:
	// its change time still gives it away.
	dirPath := filepath.Join(s.Dir, "lab", "e")
	fi, err := os.Stat(dirPath)
	if err != nil {
		t.Fatal(err)
	}
	writeRecords(t, s, "lab/e", 1, 10)
	if err := os.Chtimes(dirPath, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if got := checkSummaries(t, s, Filter{}); len(got) != 4 {
		t.Errorf("after adding a record: %d summaries, want 4", len(got))
	}

	// Renamed: the summary follows the file.
	from, to := s.RecordPath("lab/e", runs[0].ID), filepath.Join(dirPath, "renamed.json")
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
	sums, warns, err := s.Summaries(Filter{})
	if err != nil || len(warns) > 0 || len(sums) != 4 || !slices.ContainsFunc(sums, func(x *Summary) bool { return x.Path == to }) ||
		slices.ContainsFunc(sums, func(x *Summary) bool { return x.Path == from }) {
		t.Errorf("after a rename: %d summaries, %v, %v; want one at %s, none at %s", len(sums), warns, err, to, from)
	}
	if err := os.Rename(to, from); err != nil {
		t.Fatal(err)
	}

	// Touched with the same size and content: read again, same summary.
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(from, later, later); err != nil {
		t.Fatal(err)
	}
	checkSummaries(t, s, Filter{})

	// A nested experiment created in a directory whose listing was kept,
	// and one under a new parent.
	writeRecords(t, s, "lab/e/deeper", 2, 20)
	writeRecords(t, s, "other/x", 1, 30)
	if got := checkSummaries(t, s, Filter{}); len(got) != 7 {
		t.Errorf("after nested experiments: %d summaries, want 7", len(got))
	}
	// Their raw-output directories are not experiments.
	if seg := segmentOf(t, s, "lab/e"); !slices.Equal(seg.Subdirs, []string{"deeper"}) {
		t.Errorf("segment of lab/e: subdirectories %q, want [deeper]", seg.Subdirs)
	}

	// A removed directory: its records go, and its segment too.
	if err := os.RemoveAll(filepath.Join(s.Dir, "lab", "e", "deeper")); err != nil {
		t.Fatal(err)
	}
	if got := checkSummaries(t, s, Filter{}); len(got) != 5 {
		t.Errorf("after removing an experiment: %d summaries, want 5", len(got))
	}
	if _, err := os.Stat(s.indexPath("lab/e/deeper")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the segment of a removed experiment is kept: %v", err)
	}
}

// TestIndexRecentDirectoryNotKept: a directory changed just now may change
// again within its timestamp's granularity, so its listing is not kept.
func TestIndexRecentDirectoryNotKept(t *testing.T) {
	old := racyWindow
	racyWindow = 200 * time.Millisecond
	t.Cleanup(func() { racyWindow = old })
	s := Open(t.TempDir())
	writeRecords(t, s, "e", 1, 0)
	time.Sleep(2 * racyWindow)
	// The record is old enough; the directory, changed now, is not.
	if err := os.WriteFile(filepath.Join(s.Dir, "e", "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	checkSummaries(t, s, Filter{})
	if seg := s.readSegment("e", true); seg.DirKey != (fileKey{}) || len(seg.Records) != 1 {
		t.Errorf("segment: directory key %+v, %d records; want no key (changed a moment ago) and the record", seg.DirKey, len(seg.Records))
	}
	time.Sleep(2 * racyWindow)
	checkSummaries(t, s, Filter{})
	if seg := s.readSegment("e", true); seg.DirKey == (fileKey{}) {
		t.Error("segment keeps no directory key once the directory has aged")
	}
}

// TestIndexKeepsDetails: a listing without details that rewrites a
// segment keeps the details of the entries it did not read again.
func TestIndexKeepsDetails(t *testing.T) {
	agedIndex(t)
	s := Open(t.TempDir())
	runs := writeRecords(t, s, "e", 3, 0)
	checkSummaries(t, s, Filter{})
	runs = append(runs, writeRecords(t, s, "e", 1, 5)...)
	if _, _, err := s.Summaries(Filter{}); err != nil {
		t.Fatal(err)
	}
	seg := segmentOf(t, s, "e")
	if len(seg.Records) != 4 || seg.DirKey == (fileKey{}) {
		t.Fatalf("segment holds %d records (directory key %+v), want all 4 and a key", len(seg.Records), seg.DirKey)
	}
	for i, e := range seg.Records {
		want, _ := json.Marshal(Summarize(runs[i]).Detail)
		got, _ := json.Marshal(e.Summary.Detail)
		if string(got) != string(want) {
			t.Errorf("detail of %s:\ngot  %s\nwant %s", e.Name, got, want)
		}
	}
}

// TestConfigHashes: each section's hash changes with what the section is
// made of, and only with it.
func TestConfigHashes(t *testing.T) {
	base := testRun("20260508T032753Z-0001", "e", t0, 1, 2)
	base.Spec = json.RawMessage(`{"flags":{"ub":16},"passEnv":["A"],"description":"x"}`)
	base.Processes = []Process{{Env: map[string]string{"A": "1"}}}
	h := configHashes(base)
	for _, c := range []struct {
		name    string
		edit    func(r *Run)
		changed []string
	}{
		{"engine commit", func(r *Run) { r.Engine.Commit = "other" }, []string{"lock"}},
		{"model file", func(r *Run) { r.Model.Files = append(r.Model.Files, File{Path: "x.gguf", SHA256: "ab"}) }, []string{"lock"}},
		{"flag", func(r *Run) { r.Spec = json.RawMessage(`{"flags":{"ub":32},"passEnv":["A"],"description":"x"}`) }, []string{"spec", "env"}},
		{"spec field named lock", func(r *Run) {
			r.Spec = json.RawMessage(`{"flags":{"ub":16},"passEnv":["A"],"description":"x","lock":1}`)
		}, []string{"spec", "lock", "env"}},
		{"passEnv value", func(r *Run) { r.Processes = []Process{{Env: map[string]string{"A": "2"}}} }, []string{"env"}},
		{"rig driver", func(r *Run) { r.Rig.AcceleratorDriverVersion = "2" }, []string{"rig"}},
		{"notes", func(r *Run) { r.Notes = "n" }, nil},
	} {
		r := *base
		g := *base.Rig
		r.Rig = &g
		c.edit(&r)
		got := configHashes(&r)
		var changed []string
		for _, x := range [][3]string{{"spec", h.Spec, got.Spec}, {"lock", h.Lock, got.Lock}, {"env", h.Env, got.Env}, {"rig", h.Rig, got.Rig}} {
			if x[1] != x[2] {
				changed = append(changed, x[0])
			}
		}
		if !slices.Equal(changed, c.changed) {
			t.Errorf("%s: hashes changed %q, want %q", c.name, changed, c.changed)
		}
	}
}

// TestLatest_boundedRounds: the latest invocation of a point with more
// rounds than MaxRounds is read as an evenly spaced sample of MaxRounds
// of them, the latest included, and a warning says so (issue 30: a diff
// of an invocation of 10,003 rounds read them all).
func TestLatest_boundedRounds(t *testing.T) {
	agedIndex(t)
	old := MaxRounds
	MaxRounds = 10
	t.Cleanup(func() { MaxRounds = old })
	s := Open(t.TempDir())
	var last string
	for i := range 25 {
		start := t0.Add(time.Duration(i) * time.Minute)
		r := testRun(fmt.Sprintf("%s-%04d", start.Format("20060102T150405Z"), i), "lab/e", start, 50, 51)
		r.Point, r.Invocation, r.Round = "lab/e", "inv-1", i+1
		if _, err := s.Write(r, nil); err != nil {
			t.Fatal(err)
		}
		last = r.ID
	}
	runs, warnings, err := s.Latest(Filter{Experiment: "lab/e"})
	if err != nil {
		t.Fatal(err)
	}
	var rounds []int
	for _, r := range runs {
		rounds = append(rounds, r.Round)
	}
	if want := []int{1, 3, 6, 9, 11, 14, 17, 19, 22, 25}; !slices.Equal(rounds, want) {
		t.Errorf("rounds read = %v, want %v (10 evenly spaced, the first and the latest included)", rounds, want)
	}
	if len(runs) == 0 || runs[len(runs)-1].ID != last {
		t.Errorf("the latest run %s is not among those read", last)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0].Error(), "has 25 rounds; 10 of them, evenly spaced") {
		t.Errorf("warnings = %v, want one saying 10 of 25 rounds are compared", warnings)
	}
}

// Filter.Package lists the experiments directly under a package: not the
// package's own records, not a deeper package's, not another package's.
func TestSummaries_package(t *testing.T) {
	agedIndex(t)
	s := Open(t.TempDir())
	writeRecords(t, s, "qs/f16", 2, 0)
	writeRecords(t, s, "qs/q8_0", 1, 2)
	writeRecords(t, s, "qs", 1, 3)
	writeRecords(t, s, "qs/deep/x", 1, 4)
	writeRecords(t, s, "other/q8_0", 1, 5)
	for _, detail := range []bool{false, true} {
		sums, warns, err := s.summaries(Filter{Package: "qs"}, detail)
		if err != nil || len(warns) > 0 {
			t.Fatal(err, warns)
		}
		var got []string
		for _, x := range sums {
			got = append(got, x.Experiment)
		}
		if want := []string{"qs/f16", "qs/f16", "qs/q8_0"}; !slices.Equal(got, want) {
			t.Errorf("detail %v: %v, want %v", detail, got, want)
		}
	}
	if _, _, err := s.Summaries(Filter{Package: "../x"}); err == nil {
		t.Error("a package id with .. is listed")
	}
}

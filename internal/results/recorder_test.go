package results

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRecorder: records of an experiment with uncommitted inputs say so,
// one Commit takes every record and raw output written since the last,
// and a second Commit has nothing to do.
func TestRecorder(t *testing.T) {
	dir := newRepo(t)
	store := Open(dir)
	store.Author = "Rig Bot <bot@example.com>"
	rec := &Recorder{Store: store, Dirty: map[string][]string{"a/b": {"experiments/a/b.cue"}}}
	ctx := context.Background()
	p1, err := rec.Record(testRun("20260508T032753Z-0001", "a/b", t0, 1), map[string][]byte{"stdout": []byte("[]\n")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rec.Record(testRun("20260508T032753Z-0002", "c/d", t0, 2), nil); err != nil {
		t.Fatal(err)
	}
	got := rec.Recorded()
	if len(got) != 2 || got[0].Path != p1 {
		t.Fatalf("Recorded = %+v", got)
	}
	if !got[0].Run.Dirty || strings.Join(got[0].Run.DirtyFiles, ",") != "experiments/a/b.cue" || got[1].Run.Dirty {
		t.Errorf("dirty marks: %v %v, %v", got[0].Run.Dirty, got[0].Run.DirtyFiles, got[1].Run.Dirty)
	}
	if r, err := Load(p1); err != nil || !r.Dirty {
		t.Errorf("the written record is not marked dirty: %v", err)
	}
	c, err := rec.Commit(ctx, "two runs")
	if err != nil || c.Hash == "" || c.NotRepository || c.Detached {
		t.Fatalf("Commit = %+v, %v", c, err)
	}
	if st := gitCLI(t, dir, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("git status after the commit:\n%s", st)
	}
	if files := gitCLI(t, dir, "show", "--name-only", "--format=", "HEAD"); strings.Count(files, "\n") != 3 {
		t.Errorf("committed files:\n%s\nwant two records and one raw output", files)
	}
	if c, err := rec.Commit(ctx, "again"); err != nil || c.Hash != "" {
		t.Errorf("a second Commit = %+v, %v; want nothing done", c, err)
	}

	// A detached HEAD is reported with the commit.
	gitCLI(t, dir, "checkout", "-q", "--detach")
	if _, err := rec.Record(testRun("20260508T032753Z-0003", "a/b", t0, 3), nil); err != nil {
		t.Fatal(err)
	}
	if c, err := rec.Commit(ctx, "detached"); err != nil || !c.Detached || c.Hash == "" {
		t.Errorf("Commit on a detached HEAD = %+v, %v", c, err)
	}
}

// TestRecorder_notRepository: outside git the records stay written and
// Commit says so, without an error.
func TestRecorder_notRepository(t *testing.T) {
	rec := &Recorder{Store: Open(t.TempDir())}
	p, err := rec.Record(testRun("20260508T032753Z-0001", "a/b", t0, 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := rec.Commit(context.Background(), "x")
	if err != nil || !c.NotRepository || c.Hash != "" {
		t.Errorf("Commit outside git = %+v, %v", c, err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Errorf("record lost: %v", err)
	}
}

// TestRecorder_fallback: a record the store cannot take goes to the
// fallback store, and the error names where; without a fallback the
// write's error is returned as it is.
func TestRecorder_fallback(t *testing.T) {
	root := t.TempDir()
	// results is a file: no experiment directory can be made under it.
	writeFile(t, filepath.Join(root, Dir), "not a directory\n")
	fb := t.TempDir()
	rec := &Recorder{Store: Open(root), Fallback: &Store{Root: fb, Dir: fb}}
	_, err := rec.Record(testRun("20260508T032753Z-0001", "a/b", t0, 1), nil)
	var fe *FallbackError
	if !errors.As(err, &fe) || fe.FallbackErr != nil || !strings.HasPrefix(fe.Saved, fb) {
		t.Fatalf("Record into a broken store = %v, want a FallbackError saved under %s", err, fb)
	}
	if r, err := Load(fe.Saved); err != nil || r.ID != "20260508T032753Z-0001" {
		t.Errorf("the fallback record: %v", err)
	}
	if len(rec.Recorded()) != 0 {
		t.Errorf("a record the store did not take counts as recorded")
	}
	rec.Fallback = nil
	if _, err := rec.Record(testRun("20260508T032753Z-0002", "a/b", t0, 1), nil); err == nil || errors.As(err, &fe) {
		t.Errorf("Record without a fallback = %v, want the write's error", err)
	}
}

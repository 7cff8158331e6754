package gitrepo

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCommit_indexLocked: another git process holds the index, so Commit
// waits, then gives up with a clear message and leaves the other's lock
// alone; the file is kept.
func TestCommit_indexLocked(t *testing.T) {
	dir := newRepo(t)
	rec := filepath.Join(dir, "results", "a", "b", "r.json")
	writeFile(t, rec, "{}\n")
	g, err := Open(dir, filepath.Join(dir, "results"))
	if err != nil {
		t.Fatal(err)
	}
	lockWait = 100 * time.Millisecond
	t.Cleanup(func() { lockWait = 10 * time.Second })
	writeFile(t, filepath.Join(dir, ".git", "index.lock"), "")
	_, err = g.Commit(context.Background(), []string{rec}, "x")
	var ce *CommitError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "index.lock exists: another git process") || !strings.Contains(err.Error(), "record is kept") {
		t.Errorf("Commit with index.lock present = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "index.lock")); err != nil {
		t.Errorf("the other process's index.lock was removed")
	}
	os.Remove(filepath.Join(dir, ".git", "index.lock"))
	if _, err := g.Commit(context.Background(), []string{rec}, "now"); err != nil {
		t.Errorf("Commit after the lock went: %v", err)
	}
	gitCLI(t, dir, "fsck", "--strict", "--no-progress")
}

// TestOpen_notRepository: outside a repository the error wraps
// ErrNotRepository and names the place.
func TestOpen_notRepository(t *testing.T) {
	dir := t.TempDir()
	_, err := Open(dir, filepath.Join(dir, "results"))
	if !errors.Is(err, ErrNotRepository) || !strings.Contains(err.Error(), "results") {
		t.Errorf("Open outside a repository = %v", err)
	}
}

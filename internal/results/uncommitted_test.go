package results

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rigorbench/rigor/internal/gitrepo"
)

func TestStore_Uncommitted(t *testing.T) {
	dir := newRepo(t)
	readme, mod := filepath.Join(dir, "README.md"), filepath.Join(dir, "cue.mod", "module.cue")
	s := Open(dir)
	if got, err := s.Uncommitted([]string{readme, mod}); err != nil || len(got) != 0 {
		t.Fatalf("committed files: %v, %v; want none", got, err)
	}
	writeFile(t, readme, "changed\n")
	fresh := filepath.Join(dir, "lockfiles", "x.lock.json")
	writeFile(t, fresh, "{}\n")
	got, err := s.Uncommitted([]string{readme, mod, fresh})
	if err != nil || !slices.Equal(got, []string{readme, fresh}) {
		t.Fatalf("got %v, %v; want the changed and the new file", got, err)
	}
	// A repository without commits has nothing committed.
	empty := t.TempDir()
	gitCLI(t, empty, "init", "-q")
	writeFile(t, filepath.Join(empty, "a"), "a\n")
	if got, err := Open(empty).Uncommitted([]string{filepath.Join(empty, "a")}); err != nil || len(got) != 1 {
		t.Fatalf("empty repository: %v, %v", got, err)
	}
	if _, err := Open(t.TempDir()).Uncommitted(nil); !errors.Is(err, gitrepo.ErrNotRepository) {
		t.Fatalf("outside a repository: %v, want gitrepo.ErrNotRepository", err)
	}
}

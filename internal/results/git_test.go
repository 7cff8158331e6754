package results

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"

	"github.com/rigorbench/rigor/internal/gitrepo"
	"github.com/rigorbench/rigor/internal/gitrepo/gittest"
)

var (
	gitCLI  = gittest.Git
	needGit = gittest.Need
	newRepo = gittest.NewRepo
)

func TestStore_Commit(t *testing.T) {
	dir := newRepo(t)
	s := Open(dir)
	s.Author = "Rig Bot <bot@example.com>"
	ctx := context.Background()

	// Something the user staged must stay staged and uncommitted.
	writeFile(t, filepath.Join(dir, "notes.txt"), "staged by the user\n")
	gitCLI(t, dir, "add", "notes.txt")

	r := testRun("20260508T032753Z-3f9a", "minimax-m27-b70/baseline", t0, 13.8745, 14.4737, 14.529)
	rec, err := s.Write(r, map[string][]byte{"stdout": []byte("[]\n"), "stderr": []byte("ok\n")})
	if err != nil {
		t.Fatal(err)
	}
	hash, err := s.Commit(ctx, []string{rec, s.RawDir(r.Experiment, r.ID)}, "results: minimax-m27-b70/baseline 20260508T032753Z-3f9a")
	if err != nil {
		t.Fatal(err)
	}
	if len(hash) != 40 {
		t.Errorf("Commit returned %q, want a 40-hex hash", hash)
	}
	gitCLI(t, dir, "fsck", "--strict", "--no-progress")
	if got := strings.TrimSpace(gitCLI(t, dir, "rev-parse", "HEAD")); got != hash {
		t.Errorf("HEAD = %s, want the new commit %s", got, hash)
	}
	log := gitCLI(t, dir, "log", "-1", "--format=%an <%ae>|%s", "--name-only")
	want := "Rig Bot <bot@example.com>|results: minimax-m27-b70/baseline 20260508T032753Z-3f9a\n\n" +
		"results/minimax-m27-b70/baseline/20260508T032753Z-3f9a.json\n" +
		"results/minimax-m27-b70/baseline/20260508T032753Z-3f9a/stderr\n" +
		"results/minimax-m27-b70/baseline/20260508T032753Z-3f9a/stdout\n"
	if log != want {
		t.Errorf("git log:\n%s\nwant:\n%s", log, want)
	}
	if st := gitCLI(t, dir, "status", "--porcelain"); st != "A  notes.txt\n" {
		t.Errorf("git status after the commit:\n%s\nwant only the user's staged notes.txt", st)
	}
	if reflog := gitCLI(t, dir, "reflog", "-1", "--format=%gs"); !strings.HasPrefix(reflog, "commit: results: minimax") {
		t.Errorf("reflog = %q, want the commit", reflog)
	}

	// The same paths again: nothing to commit, the record stays.
	if _, err := s.Commit(ctx, []string{rec}, "again"); !errors.Is(err, gitrepo.ErrNothingToCommit) {
		t.Errorf("committing unchanged paths: got %v, want ErrNothingToCommit", err)
	}
	// A second run in another experiment.
	r2 := testRun("20260508T040000Z-0b1c", "minimax-m27-b70/kvoffload", t0.Add(time.Hour), 16.2585, 16.4391, 16.4532)
	rec2, err := s.Write(r2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, []string{rec2}, "results: kvoffload"); err != nil {
		t.Fatal(err)
	}
	gitCLI(t, dir, "fsck", "--strict", "--no-progress")
	if n := strings.TrimSpace(gitCLI(t, dir, "rev-list", "--count", "HEAD")); n != "3" {
		t.Errorf("commits = %s, want 3", n)
	}
	if st := gitCLI(t, dir, "status", "--porcelain"); st != "A  notes.txt\n" {
		t.Errorf("git status after the second commit:\n%s", st)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "index.lock")); err == nil {
		t.Errorf(".git/index.lock left behind")
	}
}

func TestStore_Commit_firstCommitAndConfigAuthor(t *testing.T) {
	needGit(t)
	dir := t.TempDir()
	gitCLI(t, dir, "init", "-q", "-b", "trunk")
	gitCLI(t, dir, "config", "user.name", "Ada Bench")
	gitCLI(t, dir, "config", "user.email", "ada@example.com")
	s := Open(dir)
	rec, err := s.Write(testRun("20260508T032753Z-0001", "a/b", t0, 1, 2, 3), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(context.Background(), []string{rec}, "first"); err != nil {
		t.Fatal(err)
	}
	gitCLI(t, dir, "fsck", "--strict", "--no-progress")
	if got := gitCLI(t, dir, "log", "--format=%an <%ae> %s", "trunk"); got != "Ada Bench <ada@example.com> first\n" {
		t.Errorf("git log trunk = %q, want the config's author", got)
	}
}

func TestStore_Commit_errors(t *testing.T) {
	ctx := context.Background()
	// Not a repository: the error says so, the record is kept.
	s := Open(t.TempDir())
	rec, err := s.Write(testRun("20260508T032753Z-0001", "a/b", t0, 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Commit(ctx, []string{rec}, "x")
	var ce *gitrepo.CommitError
	if !errors.Is(err, gitrepo.ErrNotRepository) || !errors.As(err, &ce) || !strings.Contains(err.Error(), "record is kept") {
		t.Errorf("Commit outside a repository = %v, want ErrNotRepository in a CommitError saying the record is kept", err)
	}
	if _, err := os.Stat(rec); err != nil {
		t.Errorf("record lost: %v", err)
	}

	// A bad RIGOR_GIT_AUTHOR.
	dir := newRepo(t)
	s = Open(dir)
	rec, err = s.Write(testRun("20260508T032753Z-0002", "a/b", t0, 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Author = "no email"
	if _, err := s.Commit(ctx, []string{rec}, "x"); err == nil || !strings.Contains(err.Error(), `RIGOR_GIT_AUTHOR="no email": want "Name <email>"`) {
		t.Errorf("Commit with a bad author = %v", err)
	}
	s.Author = ""

	// A path outside the repository.
	outside := filepath.Join(t.TempDir(), "x.json")
	writeFile(t, outside, "{}")
	if _, err := s.Commit(ctx, []string{outside}, "x"); err == nil || !strings.Contains(err.Error(), "outside the repository") {
		t.Errorf("Commit of an outside path = %v", err)
	}

	// A read-only .git: the commit fails, the record stays.
	if os.Getuid() != 0 {
		objects := filepath.Join(dir, ".git", "objects")
		chmodAll(t, objects, 0o555)
		t.Cleanup(func() { chmodAll(t, objects, 0o755) })
		_, err = s.Commit(ctx, []string{rec}, "x")
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "(the record is kept, uncommitted)") {
			t.Errorf("Commit into a read-only .git = %v, want a gitrepo.CommitError", err)
		}
		if _, err := Load(rec); err != nil {
			t.Errorf("record lost after a failed commit: %v", err)
		}
		chmodAll(t, objects, 0o755)
	}
	if _, err := s.Commit(ctx, []string{rec}, "now"); err != nil {
		t.Errorf("Commit after the failures: %v", err)
	}
	gitCLI(t, dir, "fsck", "--strict", "--no-progress")
}

func chmodAll(t testing.TB, dir string, mode os.FileMode) {
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.IsDir() {
			os.Chmod(p, mode)
		}
		return nil
	})
}

// TestStore_Commit_concurrent commits from several goroutines at once, as
// two rigor processes finishing together would: every commit lands, one
// after the other, and the repository stays sound.
func TestStore_Commit_concurrent(t *testing.T) {
	dir := newRepo(t)
	s := Open(dir)
	const n = 6
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := testRun(NewRunID(t0.Add(time.Duration(i)*time.Second)), "a/b", t0, float64(i))
			rec, err := s.Write(r, nil)
			if err == nil {
				_, err = s.Commit(context.Background(), []string{rec}, "run")
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("commit %d: %v", i, err)
		}
	}
	gitCLI(t, dir, "fsck", "--strict", "--no-progress")
	if c := strings.TrimSpace(gitCLI(t, dir, "rev-list", "--count", "HEAD")); c != "7" {
		t.Errorf("commits = %s, want 7 (init + %d)", c, n)
	}
	if files := strings.Count(gitCLI(t, dir, "ls-tree", "-r", "--name-only", "HEAD", "results"), "\n"); files != n {
		t.Errorf("committed records = %d, want %d", files, n)
	}
	if st := gitCLI(t, dir, "status", "--porcelain"); st != "" {
		t.Errorf("git status:\n%s\nwant clean", st)
	}
}

func TestStore_LoadAt(t *testing.T) {
	dir := newRepo(t)
	s := Open(dir)
	ctx := context.Background()
	commit := func(r *Run) {
		t.Helper()
		rec, err := s.Write(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Commit(ctx, []string{rec}, "run "+r.ID); err != nil {
			t.Fatal(err)
		}
	}
	commit(testRun("20260508T032753Z-0001", "m/base", t0, 14, 14.5, 14.4))
	commit(testRun("20260601T000000Z-0002", "m/base", t0.AddDate(0, 1, 0), 15, 15.5, 15.4))
	// Uncommitted, and a broken record committed at HEAD.
	if _, err := s.Write(testRun("20260701T000000Z-0003", "m/base", t0.AddDate(0, 2, 0), 1), nil); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(s.Dir, "m", "base", "20260602T000000Z-0004.json")
	writeFile(t, broken, `{"schema":1,`)
	if _, err := s.Commit(ctx, []string{broken}, "broken"); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		rev   string
		want  string
		warns int
	}{
		{"HEAD", "20260508T032753Z-0001 20260601T000000Z-0002", 1},
		{"HEAD~1", "20260508T032753Z-0001 20260601T000000Z-0002", 0},
		{"HEAD~2", "20260508T032753Z-0001", 0},
		{"HEAD~3", "", 0},
		{"main", "20260508T032753Z-0001 20260601T000000Z-0002", 1},
	} {
		runs, warns, err := s.LoadAt(ctx, c.rev, "m/base")
		if err != nil {
			t.Errorf("LoadAt(%s): %v", c.rev, err)
			continue
		}
		var ids []string
		for _, r := range runs {
			ids = append(ids, r.ID)
		}
		if got := strings.Join(ids, " "); got != c.want || len(warns) != c.warns {
			t.Errorf("LoadAt(%s) = %q, %v; want %q and %d warnings", c.rev, got, warns, c.want, c.warns)
		}
		if len(warns) > 0 && !strings.Contains(warns[0].Error(), "results/m/base/20260602T000000Z-0004.json@"+c.rev+": truncated") {
			t.Errorf("LoadAt(%s) warning = %v, want the path at the revision", c.rev, warns[0])
		}
	}
	// Older commit by hash prefix, too.
	short := strings.TrimSpace(gitCLI(t, dir, "rev-parse", "HEAD~2"))
	if runs, _, err := s.LoadAt(ctx, short, "m/base"); err != nil || len(runs) != 1 {
		t.Errorf("LoadAt(full hash) = %d runs, %v; want 1", len(runs), err)
	}
	if _, _, err := s.LoadAt(ctx, "nosuchbranch", "m/base"); err == nil || !strings.Contains(err.Error(), `resolving revision "nosuchbranch"`) {
		t.Errorf("LoadAt(nosuchbranch) = %v", err)
	}
	r, err := s.FindAt(ctx, "HEAD~1", "20260601T000000Z-0002")
	if err != nil || r.Metrics[0].Samples[0] != 15 {
		t.Errorf("FindAt(HEAD~1) = %v, %v", r, err)
	}
	if _, err := s.FindAt(ctx, "HEAD~2", "20260601T000000Z-0002"); !errors.Is(err, ErrNotFound) {
		t.Errorf("FindAt before the run = %v, want ErrNotFound", err)
	}
	rec := s.RecordPath("m/base", "20260601T000000Z-0002")
	if r, err := s.LoadFileAt(ctx, "HEAD", rec); err != nil || r.ID != "20260601T000000Z-0002" {
		t.Errorf("LoadFileAt(HEAD) = %v, %v", r, err)
	}

	// Resolve: the working tree sees the uncommitted run; @REV does not.
	sel, err := s.Resolve(ctx, "m/base")
	if err != nil || len(sel.Runs) != 3 || len(sel.Warnings) != 1 {
		t.Errorf("Resolve(m/base) = %d runs, %v warnings, %v; want 3 and 1", len(sel.Runs), sel.Warnings, err)
	}
	sel, err = s.Resolve(ctx, "m/base@HEAD~1")
	if err != nil || len(sel.Runs) != 2 || sel.Rev != "HEAD~1" {
		t.Errorf("Resolve(m/base@HEAD~1) = %+v, %v", sel, err)
	}
	if _, err := s.Resolve(ctx, "m/base@HEAD~3"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Resolve(m/base@HEAD~3) = %v, want ErrNotFound", err)
	}
	if sel, err := s.Resolve(ctx, "20260701T000000Z-0003"); err != nil || sel.Runs[0].ID != "20260701T000000Z-0003" {
		t.Errorf("Resolve(run id) = %v", err)
	}

	// The working tree was not touched by any of this.
	if st := gitCLI(t, dir, "status", "--porcelain"); st != "?? results/m/base/20260701T000000Z-0003.json\n" {
		t.Errorf("git status:\n%s", st)
	}
	if _, err := git.PlainOpen(dir); err != nil {
		t.Fatal(err)
	}
}

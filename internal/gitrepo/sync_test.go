package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// remoteAndClones makes a module with a bare remote (origin) and n clones
// of it, as n jobs have on their nodes.
func remoteAndClones(t *testing.T, n int) (module, bare string, clones []string, base string) {
	t.Helper()
	module = newRepo(t)
	bare = filepath.Join(t.TempDir(), "remote.git")
	gitCLI(t, module, "init", "-q", "--bare", bare)
	gitCLI(t, module, "remote", "add", "origin", bare)
	gitCLI(t, module, "push", "-q", "origin", "main")
	base = strings.TrimSpace(gitCLI(t, module, "rev-parse", "HEAD"))
	for i := 0; i < n; i++ {
		c := filepath.Join(t.TempDir(), fmt.Sprintf("job%d", i))
		gitCLI(t, module, "clone", "-q", module, c)
		clones = append(clones, c)
	}
	return module, bare, clones, base
}

func TestPublish_concurrent(t *testing.T) {
	module, bare, clones, base := remoteAndClones(t, 6)
	var wg sync.WaitGroup
	errs := make([]error, len(clones))
	for i, c := range clones {
		rec := fmt.Sprintf("results/x/one/2026010%dT000000Z-000%d.json", i, i)
		writeFile(t, filepath.Join(c, rec), "{}\n")
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = Publish(context.Background(), c, PublishOptions{
				Remote: bare, Branch: "rigor/results/b1", Base: base, Paths: []string{rec},
				Message: "job " + rec, Author: "job <job@example.com>",
			})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("job %d: %v", i, err)
		}
	}
	// Every record is on the branch, each in its own commit on top of base.
	files := gitCLI(t, bare, "ls-tree", "-r", "--name-only", "rigor/results/b1")
	for i := range clones {
		if rec := fmt.Sprintf("results/x/one/2026010%dT000000Z-000%d.json", i, i); !strings.Contains(files, rec) {
			t.Errorf("%s is not on the branch; it holds:\n%s", rec, files)
		}
	}
	if n := strings.Count(gitCLI(t, bare, "rev-list", base+"..rigor/results/b1"), "\n"); n != len(clones) {
		t.Errorf("got %d commits on the branch, want %d", n, len(clones))
	}
	// The clones' own HEAD and index are untouched.
	for _, c := range clones {
		if head := strings.TrimSpace(gitCLI(t, c, "rev-parse", "HEAD")); head != base {
			t.Errorf("%s: HEAD moved to %s", c, head)
		}
	}

	// Without a check nothing is merged: what a branch may bring is for
	// the caller to say.
	head := gitCLI(t, module, "rev-parse", "HEAD")
	_, err := Sync(context.Background(), module, SyncOptions{})
	var fe *ForeignError
	if !errors.As(err, &fe) || len(fe.Refused) != len(clones) {
		t.Fatalf("Sync without a check: got %v, want a *ForeignError refusing %d files", err, len(clones))
	}
	if now := gitCLI(t, module, "rev-parse", "HEAD"); now != head {
		t.Fatalf("HEAD moved after a refused sync")
	}

	// Sync merges the branch into the module; a second sync finds it merged.
	got, err := Sync(context.Background(), module, SyncOptions{Check: allowAll})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Branch != "rigor/results/b1" || len(got[0].Added) != len(clones) {
		t.Fatalf("Sync = %+v, want rigor/results/b1 with %d files", got, len(clones))
	}
	for _, a := range got[0].Added {
		if _, err := os.Stat(filepath.Join(module, a)); err != nil {
			t.Errorf("after sync: %v", err)
		}
	}
	got, err = Sync(context.Background(), module, SyncOptions{Check: allowAll})
	if err != nil || len(got) != 1 || len(got[0].Added) != 0 {
		t.Errorf("second Sync = %+v, %v; want the branch, nothing added", got, err)
	}
}

func allowAll([]AddedFile) []Refused { return nil }

// The check sees each added file with its mode and content; a symlink is
// not a regular file.
func TestSync_check(t *testing.T) {
	module, bare, clones, base := remoteAndClones(t, 1)
	rec := "results/x/one/20260101T000000Z-0001.json"
	writeFile(t, filepath.Join(clones[0], rec), `{"from": "job"}`+"\n")
	link := "results/x/one/link.json"
	if err := os.Symlink("/etc/passwd", filepath.Join(clones[0], link)); err != nil {
		t.Fatal(err)
	}
	if _, err := Publish(context.Background(), clones[0], PublishOptions{Remote: bare, Branch: "rigor/results/b1", Base: base, Paths: []string{rec, link}, Message: "job"}); err != nil {
		t.Fatal(err)
	}
	var seen []string
	check := func(files []AddedFile) (out []Refused) {
		for _, f := range files {
			b, err := f.Read(context.Background(), 1<<20)
			seen = append(seen, fmt.Sprintf("%s %v %q %v", f.Path, f.Regular(), b, err))
			if !f.Regular() {
				out = append(out, Refused{Path: f.Path, Reason: "a symlink"})
			}
		}
		return out
	}
	_, err := Sync(context.Background(), module, SyncOptions{Check: check})
	var fe *ForeignError
	if !errors.As(err, &fe) || len(fe.Refused) != 1 || fe.Refused[0].Path != link {
		t.Fatalf("got %v, want the symlink refused", err)
	}
	want := []string{rec + ` true "{\"from\": \"job\"}\n" <nil>`, link + ` false "/etc/passwd" <nil>`}
	if !slices.Equal(seen, want) {
		t.Errorf("the check saw\n%s\nwant\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
	if _, err := os.Lstat(filepath.Join(module, rec)); err == nil {
		t.Errorf("a file of a refused branch was merged")
	}
}

func TestSync_conflict(t *testing.T) {
	module, bare, clones, base := remoteAndClones(t, 1)
	rec := "results/x/one/20260101T000000Z-0001.json"
	writeFile(t, filepath.Join(clones[0], rec), `{"from": "job"}`+"\n")
	if _, err := Publish(context.Background(), clones[0], PublishOptions{Remote: bare, Branch: "rigor/results/b1", Base: base, Paths: []string{rec}, Message: "job"}); err != nil {
		t.Fatal(err)
	}
	// The module already has a different file at the record's path.
	writeFile(t, filepath.Join(module, rec), `{"from": "here"}`+"\n")
	gitCLI(t, module, "add", rec)
	gitCLI(t, module, "commit", "-q", "-m", "here")
	head := gitCLI(t, module, "rev-parse", "HEAD")

	_, err := Sync(context.Background(), module, SyncOptions{Check: allowAll})
	var ce *ConflictError
	if !errors.As(err, &ce) || len(ce.Paths) != 1 || ce.Paths[0] != rec+" (differs)" {
		t.Fatalf("got %v, want a conflict on %s", err, rec)
	}
	if now := gitCLI(t, module, "rev-parse", "HEAD"); now != head {
		t.Errorf("HEAD moved from %s to %s after a conflict", head, now)
	}
	if b, _ := os.ReadFile(filepath.Join(module, rec)); !strings.Contains(string(b), "here") {
		t.Errorf("the module's file was overwritten: %s", b)
	}

	// Publishing a path the branch already has is refused, never replaced.
	_, err = Publish(context.Background(), clones[0], PublishOptions{Remote: bare, Branch: "rigor/results/b1", Base: base, Paths: []string{rec}, Message: "again"})
	if err == nil || !strings.Contains(err.Error(), "records are never replaced") {
		t.Errorf("publishing an existing path: got %v", err)
	}
}

// A remote URL with credentials never reaches an error (which a job puts
// in a record).
func TestPublish_redactsRemote(t *testing.T) {
	_, _, clones, base := remoteAndClones(t, 1)
	rec := "results/x/one/20260101T000000Z-0001.json"
	writeFile(t, filepath.Join(clones[0], rec), "{}\n")
	_, err := Publish(context.Background(), clones[0], PublishOptions{
		Remote: "http://bob:hunter2secret@127.0.0.1:1/r.git", Branch: "rigor/results/b1", Base: base,
		Paths: []string{rec}, Message: "job", Attempts: 1,
	})
	if err == nil {
		t.Fatal("got no error pushing to a closed port")
	}
	t.Logf("error: %v", err)
	if strings.Contains(err.Error(), "hunter2secret") {
		t.Errorf("the error holds the password: %v", err)
	}
}

// A file the results branch changes or adds is no conflict when this
// branch already holds the same bytes (issue 27, defect 2): a second clone
// whose history has the batch's commit under another hash (rebased, or
// the same lockfile committed there), or a record the submitting side
// committed itself and pushed to the branch too.
func TestSync_identicalIsNoConflict(t *testing.T) {
	module, bare, clones, _ := remoteAndClones(t, 0)
	// The batch's commit: a changed README and a new experiment file.
	writeFile(t, filepath.Join(module, "README.md"), "experiments, changed\n")
	writeFile(t, filepath.Join(module, "experiments/x/x.cue"), "package x\n")
	gitCLI(t, module, "add", "-A")
	gitCLI(t, module, "commit", "-q", "-m", "batch commit")
	batch := strings.TrimSpace(gitCLI(t, module, "rev-parse", "HEAD"))
	job := filepath.Join(t.TempDir(), "job")
	gitCLI(t, module, "clone", "-q", module, job)
	rec := "results/x/one/20260101T000000Z-0001.json"
	writeFile(t, filepath.Join(job, rec), `{"from": "job"}`+"\n")
	if _, err := Publish(context.Background(), job, PublishOptions{Remote: bare, Branch: "rigor/results/b1", Base: batch, Paths: []string{rec}, Message: "job"}); err != nil {
		t.Fatal(err)
	}
	// A second clone of the remote: its main has the same files as the
	// batch's commit, committed under another hash, and the record
	// committed by hand.
	second := filepath.Join(t.TempDir(), "second")
	gitCLI(t, module, "clone", "-q", "-b", "main", bare, second)
	_ = clones
	writeFile(t, filepath.Join(second, "README.md"), "experiments, changed\n")
	writeFile(t, filepath.Join(second, "experiments/x/x.cue"), "package x\n")
	writeFile(t, filepath.Join(second, rec), `{"from": "job"}`+"\n")
	gitCLI(t, second, "add", "-A")
	gitCLI(t, second, "commit", "-q", "-m", "the same, another hash")
	var checked []string
	check := func(files []AddedFile) []Refused {
		for _, f := range files {
			checked = append(checked, f.Path)
		}
		return nil
	}
	got, err := Sync(context.Background(), second, SyncOptions{Remote: "origin", Check: check})
	if err != nil {
		t.Fatalf("Sync: %v; want the branch merged: every file it brings is already here", err)
	}
	if len(got) != 1 || len(got[0].Added) != 0 {
		t.Errorf("Sync = %+v, want the branch merged adding nothing new", got)
	}
	if len(checked) != 0 {
		t.Errorf("the check saw %v: files already here bring nothing to check", checked)
	}
	if _, err := gitRun(context.Background(), second, nil, "merge-base", "--is-ancestor", "refs/rigor/sync/b1", "HEAD"); err != nil {
		t.Errorf("the branch is not merged: %v", err)
	}
	// A file that differs is still a conflict.
	writeFile(t, filepath.Join(job, "results/x/one/20260101T000000Z-0002.json"), `{"from": "job"}`+"\n")
	if _, err := Publish(context.Background(), job, PublishOptions{Remote: bare, Branch: "rigor/results/b1", Base: batch, Paths: []string{"results/x/one/20260101T000000Z-0002.json"}, Message: "job 2"}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(second, "results/x/one/20260101T000000Z-0002.json"), `{"from": "here"}`+"\n")
	gitCLI(t, second, "add", "-A")
	gitCLI(t, second, "commit", "-q", "-m", "different")
	_, err = Sync(context.Background(), second, SyncOptions{Remote: "origin", Check: check})
	var ce *ConflictError
	if !errors.As(err, &ce) || len(ce.Paths) != 1 || ce.Paths[0] != "results/x/one/20260101T000000Z-0002.json (differs)" {
		t.Errorf("got %v, want a conflict on the differing record only", err)
	}
}

// A file pushed to a ref of the remote (a Slurm batch) is read back by
// another clone; pushing again replaces it.
func TestPushFile_FetchFiles(t *testing.T) {
	module, bare, _, _ := remoteAndClones(t, 0)
	ctx := context.Background()
	if err := PushFile(ctx, module, bare, "refs/rigor/batches/b1", "batch.json", []byte(`{"id": "b1"}`+"\n"), "job <job@example.com>"); err != nil {
		t.Fatal(err)
	}
	if err := PushFile(ctx, module, bare, "refs/rigor/batches/b2", "batch.json", []byte(`{"id": "b2"}`+"\n"), ""); err != nil {
		t.Fatal(err)
	}
	// With no author and no git identity on the machine, the default.
	if who := strings.TrimSpace(gitCLI(t, bare, "log", "-1", "--format=%an <%ae>", "refs/rigor/batches/b2")); who != DefaultAuthor {
		t.Errorf("b2's author = %q, want %q", who, DefaultAuthor)
	}
	other := filepath.Join(t.TempDir(), "other")
	gitCLI(t, module, "clone", "-q", bare, other)
	got, err := FetchFiles(ctx, other, "origin", "refs/rigor/batches/", "batch.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || string(got["b1"]) != `{"id": "b1"}` || string(got["b2"]) != `{"id": "b2"}` {
		t.Errorf("FetchFiles = %q, want b1 and b2", got)
	}
	// Those the caller has already are not read.
	got, err = FetchFiles(ctx, other, "origin", "refs/rigor/batches/", "batch.json", func(id string) bool { return id != "b1" })
	if err != nil || len(got) != 1 || got["b2"] == nil {
		t.Errorf("FetchFiles wanting b2 only = %q, %v", got, err)
	}
	if status := gitCLI(t, module, "status", "--porcelain"); status != "" {
		t.Errorf("PushFile touched the working tree or index: %s", status)
	}
}

// Refs are deleted from the remote only while they point where they were
// seen; one already gone is no error; the same refs here go too.
func TestDeleteRemoteRefs(t *testing.T) {
	module, bare, _, base := remoteAndClones(t, 0)
	ctx := context.Background()
	for _, id := range []string{"b1", "b2", "b3"} {
		if err := PushFile(ctx, module, bare, "refs/rigor/batches/"+id, "batch.json", []byte(`{"id": "`+id+`"}`), ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := PushCommit(ctx, module, bare, base, "refs/rigor/submit/b1"); err != nil {
		t.Fatal(err)
	}
	refs, err := RemoteRefs(ctx, module, bare, "refs/rigor/batches/", "refs/rigor/submit/")
	if err != nil || len(refs) != 4 || refs["refs/rigor/submit/b1"] != base {
		t.Fatalf("RemoteRefs = %v, %v; want 4 refs, submit/b1 at %s", refs, err, base)
	}
	if _, err := FetchFiles(ctx, module, bare, "refs/rigor/batches/", "batch.json", nil); err != nil {
		t.Fatal(err)
	}
	// b2 moves after it was seen: it is kept, and said.
	seen := map[string]string{"refs/rigor/batches/b1": refs["refs/rigor/batches/b1"], "refs/rigor/batches/b2": refs["refs/rigor/batches/b2"]}
	if err := PushFile(ctx, module, bare, "refs/rigor/batches/b2", "batch.json", []byte(`{"id": "b2", "again": true}`), ""); err != nil {
		t.Fatal(err)
	}
	err = DeleteRemoteRefs(ctx, module, bare, seen)
	if err == nil || !strings.Contains(err.Error(), "refs/rigor/batches/b2") || strings.Contains(err.Error(), "batches/b1") {
		t.Fatalf("DeleteRemoteRefs of a moved ref = %v, want an error naming it alone", err)
	}
	now, err := RemoteRefs(ctx, module, bare, "refs/rigor/")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := now["refs/rigor/batches/b1"]; ok {
		t.Error("b1 is still on the remote")
	}
	if now["refs/rigor/batches/b2"] == "" || now["refs/rigor/batches/b3"] == "" || now["refs/rigor/submit/b1"] == "" {
		t.Errorf("refs that were not to go went: %v", now)
	}
	// Gone already (another clone pruned it): no error, and gone here too.
	if err := DeleteRemoteRefs(ctx, module, bare, map[string]string{"refs/rigor/batches/b1": refs["refs/rigor/batches/b1"], "refs/rigor/submit/b1": base}); err != nil {
		t.Fatalf("deleting a ref already gone: %v", err)
	}
	if out := gitCLI(t, module, "for-each-ref", "refs/rigor/batches/b1", "refs/rigor/submit/b1"); out != "" {
		t.Errorf("the local refs stay: %s", out)
	}
	// A fetch prunes the refs here that the remote no longer has.
	gitCLI(t, module, "update-ref", "refs/rigor/batches/gone", base)
	if _, err := FetchFiles(ctx, module, bare, "refs/rigor/batches/", "batch.json", nil); err != nil {
		t.Fatal(err)
	}
	if out := gitCLI(t, module, "for-each-ref", "refs/rigor/batches/gone"); out != "" {
		t.Errorf("FetchFiles kept a ref the remote has not got: %s", out)
	}
	if found, err := FetchRef(ctx, module, bare, "refs/rigor/submit/b1"); found || err != nil {
		t.Errorf("FetchRef of a ref the remote has not got = %v, %v; want false, nil", found, err)
	}
	if found, err := FetchRef(ctx, module, bare, "refs/rigor/batches/b3"); !found || err != nil {
		t.Errorf("FetchRef of b3 = %v, %v; want true, nil", found, err)
	}
}

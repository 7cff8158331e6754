package gitsrc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A bundle of a locked commit, made from one cache's mirror, brings the
// commit into another cache whose remote is gone: the mirror is made, the
// commit checks out with its patch. A bundle of another commit is refused.
func TestBundleRoundTrip(t *testing.T) {
	ctx := context.Background()
	up := initRepo(t)
	writeFile(t, up, "a.txt", lines(5, nil))
	first := commitAll(t, up, "first")
	writeFile(t, up, "a.txt", lines(5, map[int]string{2: "two"}))
	second := commitAll(t, up, "second")

	opts := testOptions(t)
	mirror, err := EnsureMirror(ctx, up, opts)
	if err != nil {
		t.Fatal(err)
	}
	b := filepath.Join(t.TempDir(), "src.bundle")
	if err := Bundle(ctx, mirror, second, b); err != nil {
		t.Fatal(err)
	}
	if err := Bundle(ctx, mirror, "0123456789012345678901234567890123456789", filepath.Join(t.TempDir(), "x.bundle")); err == nil {
		t.Fatal("a bundle of a commit the mirror lacks was made")
	}

	// The upstream is gone; a new cache.
	if err := os.RemoveAll(up); err != nil {
		t.Fatal(err)
	}
	other := testOptions(t)
	if ok, _ := HasCommit(ctx, MirrorPath(other.Cache, up), second); ok {
		t.Fatal("an empty cache holds the commit")
	}
	// A bundle taken for another commit is refused, and leaves no mirror.
	_, err = ImportBundle(ctx, other.Cache, up, b, first)
	var be *BundleError
	if !errors.As(err, &be) {
		t.Fatalf("importing a bundle of %s as %s: %v, want a *BundleError", second[:12], first[:12], err)
	}
	if mirrorExists(MirrorPath(other.Cache, up)) {
		t.Fatal("a refused bundle left a mirror")
	}
	// Bytes that are not a bundle are refused too.
	junk := filepath.Join(t.TempDir(), "junk.bundle")
	writeFile(t, filepath.Dir(junk), "junk.bundle", "not a bundle\n")
	if _, err := ImportBundle(ctx, other.Cache, up, junk, second); !errors.As(err, &be) {
		t.Fatalf("importing junk: %v, want a *BundleError", err)
	}

	got, err := ImportBundle(ctx, other.Cache, up, b, second)
	if err != nil {
		t.Fatal(err)
	}
	if got != MirrorPath(other.Cache, up) {
		t.Fatalf("mirror %s, want %s", got, MirrorPath(other.Cache, up))
	}
	for _, c := range []string{first, second} {
		if ok, err := HasCommit(ctx, got, c); err != nil || !ok {
			t.Fatalf("the imported mirror lacks %s: %v", c[:12], err)
		}
	}
	patch := filepath.Join(t.TempDir(), "p.patch")
	writeFile(t, filepath.Dir(patch), "p.patch", "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n line 1\n-two\n+TWO\n line 3\n")
	dest := filepath.Join(t.TempDir(), "src")
	if err := Checkout(ctx, got, second, dest, []string{patch}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "a.txt")); string(b) != lines(5, map[int]string{2: "TWO"}) {
		t.Fatalf("checked out %q", b)
	}
	// Importing again into the existing mirror is harmless; offline
	// resolution finds the commit.
	if _, err := ImportBundle(ctx, other.Cache, up, b, second); err != nil {
		t.Fatal(err)
	}
	other.Offline = true
	if res, err := Resolve(ctx, up, second, other); err != nil || res.Commit != second {
		t.Fatalf("resolving offline after the import: %v %v", res, err)
	}
}

// A commit that a force-push took off every branch and tag is no longer
// the remote's, though the cache's mirror still holds it.
func TestRemoteHasCommit(t *testing.T) {
	ctx := context.Background()
	up := initRepo(t)
	writeFile(t, up, "a.txt", "one\n")
	first := commitAll(t, up, "first")
	gitT(t, up, "tag", "v1")
	opts := testOptions(t)
	if ok, err := RemoteHasCommit(ctx, up, first, opts); err != nil || !ok {
		t.Fatalf("the remote's own tip, no mirror: %v %v", ok, err)
	}
	if _, err := EnsureMirror(ctx, up, opts); err != nil {
		t.Fatal(err)
	}
	// Force-pushed: main and v1 now name an unrelated commit.
	gitT(t, up, "checkout", "--quiet", "--orphan", "new")
	writeFile(t, up, "a.txt", "rewritten\n")
	second := commitAll(t, up, "rewritten")
	gitT(t, up, "branch", "--quiet", "-f", "main", second)
	gitT(t, up, "tag", "-f", "v1", second)
	gitT(t, up, "checkout", "--quiet", "main")
	gitT(t, up, "branch", "--quiet", "-D", "new")
	if ok, err := RemoteHasCommit(ctx, up, first, opts); err != nil || ok {
		t.Fatalf("a force-pushed-away commit: %v %v, want false", ok, err)
	}
	if ok, err := HasCommit(ctx, MirrorPath(opts.Cache, up), first); err != nil || !ok {
		t.Fatalf("the mirror lost the old commit: %v %v", ok, err)
	}
	// The mirror's own tag did not move (a later fetch still sees it move),
	// and nothing of the check is left in it.
	mirror := MirrorPath(opts.Cache, up)
	if got := gitT(t, mirror, "rev-parse", "refs/tags/v1"); got != first {
		t.Fatalf("the check moved the mirror's v1 to %s", got)
	}
	if got := gitT(t, mirror, "for-each-ref", "refs/rigor"); got != "" {
		t.Fatalf("the check left refs: %s", got)
	}
	if ok, _ := HasCommit(ctx, mirror, second); ok {
		t.Fatal("the check fetched into the mirror")
	}
	// A branch that still holds it, under another name, keeps it the remote's.
	gitT(t, up, "branch", "--quiet", "keep", first)
	if ok, err := RemoteHasCommit(ctx, up, first, opts); err != nil || !ok {
		t.Fatalf("a commit held by a branch: %v %v", ok, err)
	}
	if _, err := RemoteHasCommit(ctx, filepath.Join(t.TempDir(), "gone"), first, opts); err == nil {
		t.Fatal("a remote that does not exist answered")
	}
}

package gitsrc

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fixture is an upstream repository with branches, tags and a commit that
// only a tag reaches.
type fixture struct {
	dir            string
	c1, c2, c3, c4 string // first, second (main), third (dev), tagged only
	tagObject      string // the annotated tag object v1.0, not a commit
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	f := fixture{dir: initRepo(t)}
	d := f.dir
	writeFile(t, d, "README", "one\n")
	f.c1 = commitAll(t, d, "first commit\n\nwith a body")
	gitT(t, d, "tag", "v0.1") // lightweight
	writeFile(t, d, "README", "two\n")
	f.c2 = commitAll(t, d, "second commit")
	gitT(t, d, "tag", "-a", "v1.0", "-m", "release 1.0")
	f.tagObject = gitT(t, d, "rev-parse", "v1.0")
	gitT(t, d, "tag", "-a", "v1.0-nested", "-m", "a tag of a tag", "v1.0")
	gitT(t, d, "checkout", "--quiet", "-b", "dev")
	writeFile(t, d, "README", "three\n")
	f.c3 = commitAll(t, d, "third commit")
	gitT(t, d, "checkout", "--quiet", "main")
	gitT(t, d, "branch", "dup", f.c1)
	gitT(t, d, "tag", "dup", f.c2)
	gitT(t, d, "branch", "same", f.c1)
	gitT(t, d, "tag", "same", f.c1)
	gitT(t, d, "checkout", "--quiet", "--detach", f.c1)
	writeFile(t, d, "README", "four\n")
	f.c4 = commitAll(t, d, "reachable from a tag only")
	gitT(t, d, "tag", "-a", "only-tag", "-m", "only")
	gitT(t, d, "checkout", "--quiet", "main")
	if f.tagObject == f.c2 {
		t.Fatal("v1.0 is not an annotated tag")
	}
	return f
}

func TestResolve(t *testing.T) {
	f := newFixture(t)
	opts := testOptions(t)
	ctx := context.Background()
	tests := []struct {
		ref       string
		commit    string
		kind, via string
	}{
		{"main", f.c2, KindBranch, ViaLsRemote},
		{"dev", f.c3, KindBranch, ViaLsRemote},
		{"refs/heads/dev", f.c3, KindBranch, ViaLsRemote},
		{"HEAD", f.c2, KindBranch, ViaLsRemote},
		{"v0.1", f.c1, KindTag, ViaLsRemote},
		{"v1.0", f.c2, KindAnnotatedTag, ViaLsRemote},
		{"refs/tags/v1.0", f.c2, KindAnnotatedTag, ViaLsRemote},
		{"v1.0-nested", f.c2, KindAnnotatedTag, ViaLsRemote},
		{"only-tag", f.c4, KindAnnotatedTag, ViaLsRemote},
		{"same", f.c1, KindTag, ViaLsRemote},
		{f.c1, f.c1, KindCommit, ViaMirror},
		{strings.ToUpper(f.c3), f.c3, KindCommit, ViaMirror},
		{f.c3[:7], f.c3, KindCommit, ViaMirror},
		{f.c4[:10], f.c4, KindCommit, ViaMirror},
		{strings.ToUpper(f.c2[:12]), f.c2, KindCommit, ViaMirror},
	}
	for _, tt := range tests {
		got, err := Resolve(ctx, f.dir, tt.ref, opts)
		if err != nil {
			t.Errorf("Resolve(%q): %v", tt.ref, err)
			continue
		}
		want := Resolution{Commit: tt.commit, Kind: tt.kind, Ref: tt.ref, Via: tt.via}
		if got != want {
			t.Errorf("Resolve(%q) = %+v, want %+v", tt.ref, got, want)
		}
		if got.Commit == f.tagObject {
			t.Errorf("Resolve(%q) returned the tag object %s, want the peeled commit", tt.ref, got.Commit)
		}
	}
}

func TestResolve_offline(t *testing.T) {
	f := newFixture(t)
	opts := testOptions(t)
	ctx := context.Background()
	off := opts
	off.Offline = true

	// No mirror yet: offline resolution must say so and name the URL.
	_, err := Resolve(ctx, f.dir, "main", off)
	var nm *NoMirrorError
	if !errors.As(err, &nm) {
		t.Fatalf("offline Resolve without a mirror: got %v, want *NoMirrorError", err)
	}
	if !strings.Contains(err.Error(), f.dir) || !strings.Contains(err.Error(), "--offline") {
		t.Errorf("offline Resolve without a mirror: got %q, want the URL and a word on --offline", err)
	}
	if _, err := EnsureMirror(ctx, f.dir, off); !errors.As(err, &nm) {
		t.Errorf("offline EnsureMirror without a mirror: got %v, want *NoMirrorError", err)
	}

	if _, err := EnsureMirror(ctx, f.dir, opts); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		ref    string
		commit string
		kind   string
	}{
		{"main", f.c2, KindBranch},
		{"refs/heads/dev", f.c3, KindBranch},
		{"v0.1", f.c1, KindTag},
		{"v1.0", f.c2, KindAnnotatedTag},
		{"v1.0-nested", f.c2, KindAnnotatedTag},
		{f.c3[:8], f.c3, KindCommit},
		{f.c4, f.c4, KindCommit},
	}
	for _, tt := range tests {
		got, err := Resolve(ctx, f.dir, tt.ref, off)
		if err != nil {
			t.Errorf("offline Resolve(%q): %v", tt.ref, err)
			continue
		}
		want := Resolution{Commit: tt.commit, Kind: tt.kind, Ref: tt.ref, Via: ViaMirror}
		if got != want {
			t.Errorf("offline Resolve(%q) = %+v, want %+v", tt.ref, got, want)
		}
	}

	// A commit made upstream after the mirror: unknown offline, found online
	// (which fetches it), then known offline.
	writeFile(t, f.dir, "README", "five\n")
	c5 := commitAll(t, f.dir, "fifth commit")
	_, err = Resolve(ctx, f.dir, c5, off)
	var nf *RefNotFoundError
	if !errors.As(err, &nf) || !nf.Offline {
		t.Fatalf("offline Resolve(%s) of a commit not yet fetched: got %v, want offline *RefNotFoundError", c5, err)
	}
	if _, err := Resolve(ctx, f.dir, c5[:9], opts); err != nil {
		t.Fatalf("online Resolve(%s): %v", c5[:9], err)
	}
	if got, err := Resolve(ctx, f.dir, "main", off); err != nil || got.Commit != c5 {
		t.Errorf("offline Resolve(main) after fetch: got %+v, %v, want %s", got, err, c5)
	}
}

func TestResolve_notFound(t *testing.T) {
	f := newFixture(t)
	opts := testOptions(t)
	ctx := context.Background()
	tests := []struct {
		ref     string
		suggest string // a name that must be among the suggestions
	}{
		{"mian", "main"},
		{"v1.1", "v1.0"},
		{"refs/heads/deb", "dev"},
		{"deadbeef", ""},
		{strings.Repeat("0", 40), ""},
		{"refs/pull/1/head", ""},
		{"v1.0^{}", ""},
		{"abc", ""}, // too short to be a sha
	}
	for _, tt := range tests {
		_, err := Resolve(ctx, f.dir, tt.ref, opts)
		var nf *RefNotFoundError
		if !errors.As(err, &nf) {
			t.Errorf("Resolve(%q): got %v, want *RefNotFoundError", tt.ref, err)
			continue
		}
		if nf.Ref != tt.ref || nf.URL != f.dir {
			t.Errorf("Resolve(%q): error names ref %q of %q, want %q of %q", tt.ref, nf.Ref, nf.URL, tt.ref, f.dir)
		}
		if tt.suggest != "" && !slices.Contains(nf.Suggestions, tt.suggest) {
			t.Errorf("Resolve(%q): suggestions %q, want %q among them", tt.ref, nf.Suggestions, tt.suggest)
		}
		if tt.suggest != "" && !strings.Contains(err.Error(), tt.suggest) {
			t.Errorf("Resolve(%q): error %q does not mention %q", tt.ref, err, tt.suggest)
		}
	}

	// A branch and a tag of one name on different commits.
	_, err := Resolve(ctx, f.dir, "dup", opts)
	if err == nil || !strings.Contains(err.Error(), "refs/heads/dup") || !strings.Contains(err.Error(), "refs/tags/dup") {
		t.Errorf("Resolve(dup): got %v, want an error naming refs/heads/dup and refs/tags/dup", err)
	}
	for _, ref := range []string{"refs/heads/dup", "refs/tags/dup"} {
		if _, err := Resolve(ctx, f.dir, ref, opts); err != nil {
			t.Errorf("Resolve(%q): %v", ref, err)
		}
	}
	if _, err := Resolve(ctx, f.dir, "", opts); err == nil {
		t.Error("Resolve with an empty ref: got no error")
	}
	missing := filepath.Join(t.TempDir(), "nowhere")
	if _, err := Resolve(ctx, missing, "main", opts); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Resolve of a missing local repo: got %v, want an error naming %s", err, missing)
	}
}

func TestResolve_ambiguous(t *testing.T) {
	dir := fastImportRepo(t, 1000)
	// Find two commits that share a 4-hex prefix. With 1,000 commits and
	// 65,536 prefixes, about 7 pairs are expected; the content is fixed, so
	// the same pairs appear on every run.
	byPrefix := map[string][]string{}
	for _, sha := range strings.Fields(gitT(t, dir, "rev-list", "--all")) {
		byPrefix[sha[:4]] = append(byPrefix[sha[:4]], sha)
	}
	var prefix string
	for p, shas := range byPrefix {
		if len(shas) >= 2 && (prefix == "" || p < prefix) {
			prefix = p
		}
	}
	if prefix == "" {
		t.Fatal("no two commits share a 4-hex prefix; make more commits")
	}
	want := slices.Sorted(slices.Values(byPrefix[prefix]))

	_, err := Resolve(context.Background(), dir, prefix, testOptions(t))
	var ae *AmbiguousError
	if !errors.As(err, &ae) {
		t.Fatalf("Resolve(%q): got %v, want *AmbiguousError", prefix, err)
	}
	if len(ae.Candidates) != len(want) {
		t.Fatalf("Resolve(%q): candidates %q, want %d: %q", prefix, ae.Candidates, len(want), want)
	}
	for i, c := range ae.Candidates {
		subject := gitT(t, dir, "log", "-1", "--format=%s", want[i])
		if c != want[i]+" "+subject {
			t.Errorf("Resolve(%q): candidate %d = %q, want %q", prefix, i, c, want[i]+" "+subject)
		}
	}
	if ae.Prefix != prefix || !strings.Contains(err.Error(), want[0]) {
		t.Errorf("Resolve(%q): error %q, want it to name the prefix and %s", prefix, err, want[0])
	}

	// One more digit disambiguates (when it does for these commits).
	longer := want[0][:5]
	if want[1][:5] != longer {
		got, err := Resolve(context.Background(), dir, longer, testOptions(t))
		if err != nil || got.Commit != want[0] {
			t.Errorf("Resolve(%q) = %+v, %v, want %s", longer, got, err, want[0])
		}
	}
}

func TestResolve_unreachable(t *testing.T) {
	ctx := context.Background()
	for _, url := range []string{
		"https://127.0.0.1:1/x.git",      // connection refused
		"https://host.invalid/org/x.git", // no such host (RFC 6761)
	} {
		opts := testOptions(t)
		_, err := Resolve(ctx, url, "main", opts)
		var ue *UnreachableError
		if !errors.As(err, &ue) {
			t.Errorf("Resolve(%s): got %v, want *UnreachableError", url, err)
			continue
		}
		if !strings.Contains(err.Error(), url) || !strings.Contains(err.Error(), "unreachable") {
			t.Errorf("Resolve(%s): got %q, want the URL and \"unreachable\"", url, err)
		}
		// A short sha needs a fetch: the same error, and no mirror left behind.
		_, err = EnsureMirror(ctx, url, opts)
		if !errors.As(err, &ue) {
			t.Errorf("EnsureMirror(%s): got %v, want *UnreachableError", url, err)
		}
		if entries, _ := os.ReadDir(filepath.Join(opts.Cache, "git")); len(entries) > 1 {
			t.Errorf("EnsureMirror(%s) failed but left %d entries in the cache, want only the lock file", url, len(entries))
		}
	}
}

func TestResolve_relativePath(t *testing.T) {
	f := newFixture(t)
	t.Chdir(filepath.Dir(f.dir))
	got, err := Resolve(context.Background(), "./upstream", f.c1[:7], testOptions(t))
	if err != nil || got.Commit != f.c1 {
		t.Errorf("Resolve(./upstream, %s) = %+v, %v, want %s", f.c1[:7], got, err, f.c1)
	}
}

func TestEnsureMirror_concurrent(t *testing.T) {
	f := newFixture(t)
	opts := testOptions(t)
	ctx := context.Background()
	const n = 6
	paths := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if i%2 == 0 {
				paths[i], errs[i] = EnsureMirror(ctx, f.dir, opts)
			} else {
				var r Resolution
				r, errs[i] = Resolve(ctx, f.dir, f.c3[:6], opts)
				if errs[i] == nil && r.Commit != f.c3 {
					errs[i] = errors.New("resolved to " + r.Commit)
				}
				paths[i] = MirrorPath(opts.Cache, f.dir)
			}
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Errorf("call %d: %v", i, errs[i])
		}
		if paths[i] != paths[0] {
			t.Errorf("call %d: mirror %s, want %s", i, paths[i], paths[0])
		}
	}
	gitT(t, paths[0], "fsck", "--strict", "--no-progress")
	for _, c := range []string{f.c1, f.c2, f.c3, f.c4} {
		gitT(t, paths[0], "cat-file", "-e", c+"^{commit}")
	}
	if err := Fetch(ctx, f.dir, opts); err != nil {
		t.Errorf("Fetch of an up-to-date mirror: %v", err)
	}
	if err := Fetch(ctx, f.dir, Options{Cache: opts.Cache, Offline: true}); !errors.Is(err, ErrOffline) {
		t.Errorf("offline Fetch: got %v, want ErrOffline", err)
	}
	if err := Fetch(ctx, f.dir, testOptions(t)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Fetch without a mirror: got %v, want os.ErrNotExist", err)
	}
}

func TestResolve_timeout(t *testing.T) {
	// A host that accepts connections and never answers: the probe gets
	// through, the TLS handshake hangs until the timeout.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	}()
	url := "https://" + ln.Addr().String() + "/x.git"
	opts := testOptions(t)
	opts.Timeout = 500 * time.Millisecond
	_, err = Resolve(context.Background(), url, "main", opts)
	var te *TimeoutError
	if !errors.As(err, &te) || te.URL != url || te.Timeout != opts.Timeout {
		t.Fatalf("Resolve(%s) from a silent host: got %v, want *TimeoutError for the URL after %s", url, err, opts.Timeout)
	}
	if !strings.Contains(err.Error(), url) || !strings.Contains(err.Error(), "timed out") {
		t.Errorf("Resolve(%s): got %q, want the URL and \"timed out\"", url, err)
	}
}

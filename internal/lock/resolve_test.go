package lock

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/hf"
	"github.com/rigorbench/rigor/internal/hf/hubtest"
	"github.com/rigorbench/rigor/internal/spec"
)

func writeOld(t testing.TB, p string, data []byte) {
	t.Helper()
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
}

// trustNow makes the stat cache trust a file changed just now: a test
// cannot set the ctime back, and must not wait out the racy window.
func trustNow(t *testing.T) {
	w := racyWindow
	racyWindow = 0
	t.Cleanup(func() { racyWindow = w })
}

func TestHasher_statCache(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.gguf")
	writeOld(t, p, []byte("hello"))
	h := &Hasher{Cache: filepath.Join(dir, "cache")}
	w := racyWindow
	racyWindow = 0
	ctx := context.Background()
	const helloSHA = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
	for i, wantCached := range []bool{false, true} {
		got, err := h.Hash(ctx, []string{p})
		if err != nil {
			t.Fatal(err)
		}
		if got[0].SHA256 != helloSHA || got[0].Size != 5 || got[0].Cached != wantCached {
			t.Errorf("hash #%d of %s: got %+v, want sha %s size 5 cached %v", i+1, p, got[0], helloSHA, wantCached)
		}
	}
	// Changed content and mtime: rehashed.
	writeOld(t, p, []byte("HELLO"))
	later := time.Now().Add(-30 * time.Minute)
	os.Chtimes(p, later, later)
	got, err := h.Hash(ctx, []string{p})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Cached || got[0].SHA256 == helloSHA {
		t.Errorf("after a change: got %+v, want a fresh hash", got[0])
	}
	// A file modified just now is never trusted from the cache (its
	// mtime could hide a second write in the same clock tick).
	racyWindow = w
	q := filepath.Join(dir, "fresh")
	os.WriteFile(q, []byte("x"), 0o644)
	for i := range 2 {
		got, err := h.Hash(ctx, []string{q})
		if err != nil {
			t.Fatal(err)
		}
		if got[0].Cached {
			t.Errorf("hash #%d of a just-written file came from the cache", i+1)
		}
	}
	// Missing files and directories are errors naming them.
	if _, err := h.Hash(ctx, []string{filepath.Join(dir, "nope")}); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "nope") {
		t.Errorf("missing file: got %v, want a not-exist error naming it", err)
	}
	if _, err := h.Hash(ctx, []string{dir}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: got %v, want 'not a regular file'", err)
	}
}

// A quiet in-place edit: the bytes change, the size and the mtime are set
// back. The ctime, which no user can set back, makes the file be read
// again. A report's reread reads every file; it counts what was read and
// what was trusted.
func TestHasher_ctime(t *testing.T) {
	trustNow(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "m.gguf")
	writeOld(t, p, []byte("hello"))
	fi, _ := os.Stat(p)
	h := &Hasher{Cache: filepath.Join(dir, "cache")}
	ctx, rep := WithHashReport(context.Background(), false)
	for range 2 {
		if _, err := h.Hash(ctx, []string{p}); err != nil {
			t.Fatal(err)
		}
	}
	if got := rep.Summary(); got != HashesCached {
		t.Errorf("second hash of an unchanged file: report says %q, want %q", got, HashesCached)
	}
	f, _ := os.OpenFile(p, os.O_WRONLY, 0)
	f.WriteAt([]byte("J"), 0)
	f.Close()
	os.Chtimes(p, fi.ModTime(), fi.ModTime())
	if fi2, _ := os.Stat(p); fi2.Size() != fi.Size() || !fi2.ModTime().Equal(fi.ModTime()) {
		t.Fatalf("the edit changed the size or the mtime")
	}
	got, err := h.Hash(context.Background(), []string{p})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Cached || got[0].SHA256 == "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" {
		t.Errorf("after an edit with the size and mtime set back: got %+v, want the new bytes' hash", got[0])
	}
	// --verify: nothing is trusted from the cache.
	ctx, rep = WithHashReport(context.Background(), true)
	if got, err := h.Hash(ctx, []string{p}); err != nil || got[0].Cached {
		t.Errorf("reread: got %+v, %v; want a hash read from the bytes", got, err)
	}
	if got := rep.Summary(); got != HashesRead {
		t.Errorf("reread: report says %q, want %q", got, HashesRead)
	}
}

// VerifyCache names a file whose bytes are not those the cache hashed,
// says whether the cache still vouched for it, and drops entries of files
// that are gone.
func TestVerifyCache(t *testing.T) {
	trustNow(t)
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	a, b, c := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c")
	for _, p := range []string{a, b, c} {
		writeOld(t, p, []byte("hello"))
	}
	h := &Hasher{Cache: cache}
	if _, err := h.Hash(context.Background(), []string{a, b, c}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(b, []byte("HELLO"), 0o644)
	os.Remove(c)
	checks, gone, err := VerifyCache(context.Background(), cache)
	if err != nil {
		t.Fatal(err)
	}
	if len(checks) != 2 || gone != 1 {
		t.Fatalf("got %d checks and %d gone, want 2 and 1: %+v", len(checks), gone, checks)
	}
	if checks[0].Path != a || checks[0].Changed() || !checks[0].Trusted {
		t.Errorf("unchanged file: got %+v", checks[0])
	}
	if checks[1].Path != b || !checks[1].Changed() || checks[1].Trusted || !slices.Contains(checks[1].Stat, "ctime") {
		t.Errorf("changed file: got %+v, want changed, not trusted, ctime in its stat differences", checks[1])
	}
	// The entry is refreshed: a second verify finds nothing changed.
	checks, gone, _ = VerifyCache(context.Background(), cache)
	if len(checks) != 2 || gone != 0 || checks[1].Changed() {
		t.Errorf("second verify: got %+v, %d gone", checks, gone)
	}
}

func TestHasher_parallelOrder(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	want := map[string]string{}
	for i := range 9 {
		p := filepath.Join(dir, string(rune('a'+i)))
		data := strings.Repeat(string(rune('a'+i)), 1000*(i+1))
		os.WriteFile(p, []byte(data), 0o644)
		sum, _, _ := hashBytes([]byte(data))
		paths = append(paths, p)
		want[p] = sum
	}
	var last int64
	h := &Hasher{Workers: 3, Progress: func(done, total int64) { last = done }}
	got, err := h.Hash(context.Background(), paths)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range got {
		if g.Path != paths[i] || g.SHA256 != want[paths[i]] {
			t.Errorf("Hash[%d]: got %s %s, want %s %s", i, g.Path, g.SHA256, paths[i], want[paths[i]])
		}
	}
	if last != 45000 {
		t.Errorf("progress: got %d bytes done at the end, want 45000", last)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Hash(ctx, paths); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v, want context.Canceled", err)
	}
}

func TestParseNPMView(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		runErr    error
		want      string // version, or the error text
	}{
		{"one", `{"version": "3.22.1", "dist.integrity": "sha512-a"}`, nil, "3.22.1"},
		{"range", `[{"version": "3.21.0", "dist.integrity": "sha512-a"}, {"version": "3.21.1", "dist.integrity": "sha512-b"}]`, nil, "3.21.1"},
		{"404", `{"error": {"code": "E404", "summary": "No match found for version 9"}}`, errors.New("exit status 1"), "npm: p@v: no such version in the registry (No match found for version 9)"},
		{"offline", `{"error": {"code": "ENOTCACHED", "summary": "x"}}`, errors.New("exit status 1"), "npm: p@v: not in npm's cache (offline)"},
		{"net", `{"error": {"code": "ENOTFOUND", "summary": "getaddrinfo ENOTFOUND registry.npmjs.org"}}`, errors.New("exit status 1"), "npm: p@v: npm registry unreachable (ENOTFOUND: getaddrinfo ENOTFOUND registry.npmjs.org)"},
		{"empty", ``, nil, "npm: p@v: no published version matches"},
		{"garbage", `not json`, nil, "npm: p@v: unreadable output of npm view: invalid character 'o' in literal null (expecting 'u')"},
		{"no integrity", `{"version": "1.0.0"}`, nil, `npm: p@v: npm view gave no version and integrity: {"version": "1.0.0"}`},
	} {
		got, err := parseNPMView("p", "v", []byte(tc.out), "", tc.runErr)
		var s string
		if err != nil {
			s = err.Error()
		} else {
			s = got.Version
		}
		if s != tc.want {
			t.Errorf("%s: parseNPMView(%q): got %q, want %q", tc.name, tc.out, s, tc.want)
		}
	}
}

func TestNPM_missing(t *testing.T) {
	r := NewResolver(Options{Root: t.TempDir(), Cache: t.TempDir(), NPM: filepath.Join(t.TempDir(), "no-npm")})
	_, err := r.npmResolve(context.Background(), spec.Engine{Family: spec.FamilyNodeLlama, Source: spec.Source{NPM: "3.x"}})
	var ne *NPMError
	if !errors.As(err, &ne) || !ne.Missing || err.Error() != "npm is not installed: it is needed to resolve node-llama-cpp@3.x" {
		t.Errorf("got %v, want npm missing", err)
	}
}

func TestNodePlatform(t *testing.T) {
	for _, tc := range [][3]string{{"linux", "amd64", "linux-x64"}, {"linux", "arm64", "linux-arm64"}, {"darwin", "arm64", "mac-arm64-metal"}, {"darwin", "amd64", "mac-x64"}, {"windows", "amd64", "win-x64"}} {
		if got := nodePlatform(tc[0], tc[1]); got != tc[2] {
			t.Errorf("nodePlatform(%s, %s): got %s, want %s", tc[0], tc[1], got, tc[2])
		}
	}
}

func TestHasHunk(t *testing.T) {
	for in, want := range map[string]bool{
		"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n": true,
		"just prose\n": false,
		"":             false,
		"diff --git a/x b/y\nrename from x\nrename to y\n":  true,
		"diff --git a/x b/x\nGIT binary patch\nliteral 1\n": true,
	} {
		if got := hasHunk([]byte(in)); got != want {
			t.Errorf("hasHunk(%q): got %v, want %v", in, got, want)
		}
	}
}

// experiment builds a one-point experiment for resolver tests.
func experiment(id string, s spec.Spec) *spec.Experiment {
	x := &spec.Experiment{ID: id, Package: strings.Split(id, "/")[0], Spec: s}
	x.Points = []*spec.Point{{ID: id, Experiment: x, Spec: s, CanonicalJSON: []byte(`{"id":"` + id + `"}`)}}
	return x
}

func TestResolver_hub(t *testing.T) {
	hub := hubtest.New()
	defer hub.Close()
	c1 := hub.AddRepo("org/m-GGUF", hubtest.RepoOptions{Files: []hubtest.File{
		{Path: "m-00001-of-00002.gguf", Data: []byte("one"), LFS: true},
		{Path: "m-00002-of-00002.gguf", Data: []byte("two"), LFS: true},
		{Path: "config.json", Data: []byte("{}")},
	}, PageSize: 1})
	root := t.TempDir()
	hfCache := t.TempDir()
	newR := func(u Update) *Resolver {
		return NewResolver(Options{Root: root, Cache: t.TempDir(), HFCache: hfCache, Update: u,
			HF: hf.NewClient(hf.ClientOptions{Endpoint: hub.URL, MaxRetries: -1})})
	}
	m := spec.Model{HF: "org/m-GGUF", Files: []string{"m-*-of-00002.gguf", "config.json"}}
	x := experiment("p/x", spec.Spec{Model: m, Engine: spec.Engine{Family: "vllm", Source: spec.Source{Path: "."}}})
	os.WriteFile(filepath.Join(root, "vllm"), []byte("#!/bin/sh\n"), 0o755)
	x.Spec.Engine.Source.Path = "vllm"
	e, err := newR(Update{}).Resolve(context.Background(), x, nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.Model.Commit != c1 || len(e.Model.Files) != 3 {
		t.Fatalf("got commit %s files %+v, want %s and 3 files", e.Model.Commit, e.Model.Files, c1)
	}
	sum, _, _ := hashBytes([]byte("one"))
	if f := e.Model.Files[1]; f.Path != "m-00001-of-00002.gguf" || f.SHA256 != sum || f.Size != 3 {
		t.Errorf("file: got %+v, want the LFS sha256 %s", f, sum)
	}
	small, _, _ := hashBytes([]byte("{}"))
	if f := e.Model.Files[0]; f.Path != "config.json" || f.SHA256 != small || f.BlobID != hubtest.GitBlobID([]byte("{}")) {
		t.Errorf("small file: got %+v, want its sha256 %s and its git blob id", f, small)
	}
	if got, want := e.EntryModel("", hfCache), filepath.Join(hfCache, "models--org--m-GGUF", "snapshots", c1, "m-00001-of-00002.gguf"); got != want {
		t.Errorf("EntryModel: got %s, want %s", got, want)
	}
	if got := e.ModelFiles("", hfCache); len(got) != 3 || !strings.HasSuffix(got[2], "/snapshots/"+c1+"/m-00002-of-00002.gguf") {
		t.Errorf("ModelFiles: got %v", got)
	}
	if len(e.Engine.Binaries) != 1 || e.Engine.Binaries[0].Path != "vllm" {
		t.Errorf("binaries: got %+v, want vllm", e.Engine.Binaries)
	}

	// A new commit on main: kept without --update, taken with it.
	c2 := hub.Push("org/m-GGUF", "main", []hubtest.File{
		{Path: "m-00001-of-00002.gguf", Data: []byte("ONE"), LFS: true},
		{Path: "m-00002-of-00002.gguf", Data: []byte("two"), LFS: true},
		{Path: "config.json", Data: []byte("{}")},
	})
	hub.ResetRequests()
	e2, err := newR(Update{}).Resolve(context.Background(), x, e)
	if err != nil {
		t.Fatal(err)
	}
	if e2.Model.Commit != c1 || len(hub.Requests()) != 0 {
		t.Errorf("relock without update: got commit %s after %d hub requests, want %s and none", e2.Model.Commit, len(hub.Requests()), c1)
	}
	e3, err := newR(Update{Model: true}).Resolve(context.Background(), x, e)
	if err != nil {
		t.Fatal(err)
	}
	if e3.Model.Commit != c2 {
		t.Errorf("--update model: got commit %s, want %s", e3.Model.Commit, c2)
	}
	if d := Diff("p/x", e, e3); len(d) < 2 || d[0].Input != "model.commit" {
		t.Errorf("Diff after update: got %+v", d)
	}
}

func TestResolver_offlineHubCache(t *testing.T) {
	cache := t.TempDir()
	commit := strings.Repeat("ab", 20)
	repo := filepath.Join(cache, "models--org--m")
	sha := strings.Repeat("cd", 32)
	os.MkdirAll(filepath.Join(repo, "refs"), 0o755)
	os.MkdirAll(filepath.Join(repo, "blobs"), 0o755)
	os.MkdirAll(filepath.Join(repo, "snapshots", commit), 0o755)
	os.WriteFile(filepath.Join(repo, "refs", "main"), []byte(commit), 0o644)
	os.WriteFile(filepath.Join(repo, "blobs", sha), []byte("data"), 0o644)
	os.Symlink(filepath.Join("..", "..", "blobs", sha), filepath.Join(repo, "snapshots", commit, "m.gguf"))
	r := NewResolver(Options{Root: t.TempDir(), Cache: t.TempDir(), HFCache: cache, Offline: true,
		HF: hf.NewClient(hf.ClientOptions{Endpoint: "http://127.0.0.1:1", Offline: true})})
	res, err := r.hubFromCache(spec.Model{HF: "org/m", Files: []string{"*.gguf"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if res.commit != commit || len(res.files) != 1 || res.files[0].SHA256 != sha || res.files[0].Size != 4 {
		t.Errorf("got %+v, want commit %s and m.gguf with sha %s", res, commit, sha)
	}
	_, err = r.hubFromCache(spec.Model{HF: "org/m", Revision: "dev"}, true)
	var oe *OfflineError
	if !errors.As(err, &oe) || err.Error() != "offline: org/m@dev is not in the cache "+cache+" (no refs/dev)" {
		t.Errorf("unknown revision offline: got %v", err)
	}
}

func TestEntryModel_local(t *testing.T) {
	e := &Entry{Model: ModelLock{Requested: ModelRequest{Path: "./models/m", Files: []string{"*.gguf"}},
		Files: []FileLock{{Path: "models/m/b.gguf"}, {Path: "models/m/a.gguf"}}}}
	if got, want := e.EntryModel("", ""), filepath.Join("models", "m", "a.gguf"); got != want {
		t.Errorf("glob: got %s, want %s", got, want)
	}
	e.Model.Requested.Files = []string{"x-*-of-00003.gguf"}
	if got, want := e.EntryModel("", ""), filepath.Join("models", "m", "x-00001-of-00003.gguf"); got != want {
		t.Errorf("split: got %s, want %s", got, want)
	}
	e.Model.Requested.Files = nil
	if got, want := e.EntryModel("", ""), filepath.Join("models", "m"); got != want {
		t.Errorf("no files: got %s, want %s", got, want)
	}
}

func TestResolver_synthetic(t *testing.T) {
	cache := t.TempDir()
	r := NewResolver(Options{Root: t.TempDir(), Cache: cache, HF: hf.NewClient(hf.ClientOptions{Offline: true})})
	s := spec.Synthetic{Arch: "llama", Layers: 1, Embd: 32, Heads: 2, KVHeads: 2, FF: 64, Vocab: 259, Ctx: 64, Type: "f32", Seed: 1}
	a, err := r.synthetic(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(SyntheticPath(cache, a.SHA256))
	if err != nil {
		t.Fatal(err)
	}
	if sum, n, _ := hashBytes(b); sum != a.SHA256 || n != a.Size {
		t.Errorf("file holds %s (%d bytes), lock says %s (%d)", sum, n, a.SHA256, a.Size)
	}
	if a.GGUF["vocabSize"] == nil {
		t.Errorf("no gguf facts: %v", a.GGUF)
	}
	s.Heads = 3
	if _, err := NewResolver(Options{Root: t.TempDir(), Cache: t.TempDir(), HF: hf.NewClient(hf.ClientOptions{Offline: true})}).synthetic(context.Background(), s, nil); err == nil || !strings.HasPrefix(err.Error(), "synthetic model: ") {
		t.Errorf("impossible shape: got %v, want a synthetic model error", err)
	}
}

func TestResolver_gitPatches(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	root := t.TempDir()
	src := filepath.Join(root, "src")
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q", "-b", "main", src)
	os.WriteFile(filepath.Join(src, "f"), []byte("a\nb\nc\n"), 0o644)
	run("-C", src, "add", "f")
	run("-C", src, "commit", "-q", "-m", "one")
	run("-C", src, "tag", "-a", "v1", "-m", "v1")
	os.MkdirAll(filepath.Join(root, "patches"), 0o755)
	os.WriteFile(filepath.Join(root, "patches", "ok.patch"), []byte("--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"), 0o644)
	os.WriteFile(filepath.Join(root, "patches", "bad.patch"), []byte("--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-x\n+B\n c\n"), 0o644)
	r := NewResolver(Options{Root: root, Cache: t.TempDir(), HF: hf.NewClient(hf.ClientOptions{Offline: true})})
	eng := spec.Engine{Family: "llama.cpp", Source: spec.Source{Git: "src", Ref: "v1"}, Patches: []string{"patches/ok.patch"}}
	el, err := r.engine(context.Background(), experiment("p/x", spec.Spec{Engine: eng}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(el.Commit) != 40 || el.Kind != "annotated-tag" || len(el.Patches) != 1 {
		t.Errorf("got %+v, want an annotated-tag commit and one patch", el)
	}
	eng.Patches = []string{"patches/bad.patch"}
	_, err = r.engine(context.Background(), experiment("p/y", spec.Spec{Engine: eng}), nil)
	var ie *InputError
	if !errors.As(err, &ie) || ie.Input != "patches" || !strings.HasPrefix(ie.Err.Error(), "patch patches/bad.patch does not apply at ") {
		t.Errorf("bad patch: got %v", err)
	}
	eng.Patches = []string{"../outside.patch"}
	if _, err = r.engine(context.Background(), experiment("p/z", spec.Spec{Engine: eng}), nil); err == nil || !strings.Contains(err.Error(), "outside the module") {
		t.Errorf("patch outside the module: got %v", err)
	}
}

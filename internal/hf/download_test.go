package hf_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rigorbench/rigor/internal/hf"
	"github.com/rigorbench/rigor/internal/hf/hubtest"
)

func sha256sum(b []byte) [32]byte { return sha256.Sum256(b) }

// lockedFiles resolves and lists repo as rigor lock does.
func lockedFiles(t *testing.T, c *hf.Client, repo, rev string, globs ...string) (string, []hf.FileInfo) {
	t.Helper()
	ctx := context.Background()
	commit, err := c.ResolveRevision(ctx, repo, rev)
	if err != nil {
		t.Fatal(err)
	}
	all, err := c.ListFiles(ctx, repo, commit)
	if err != nil {
		t.Fatal(err)
	}
	files, err := hf.MatchFiles(all, globs)
	if err != nil {
		t.Fatal(err)
	}
	return commit, files
}

// checkSnapshot checks that every file is a relative symlink into blobs/
// holding want[path].
func checkSnapshot(t *testing.T, cache, repo, commit string, want map[string][]byte) {
	t.Helper()
	for p, data := range want {
		link := hf.SnapshotPath(cache, repo, commit, p)
		target, err := os.Readlink(link)
		if err != nil {
			t.Errorf("snapshot %s: %v", p, err)
			continue
		}
		wantPrefix := strings.Repeat("../", 2+strings.Count(p, "/")) + "blobs/"
		if !strings.HasPrefix(target, wantPrefix) || filepath.IsAbs(target) {
			t.Errorf("snapshot %s → %q, want a relative link starting %q", p, target, wantPrefix)
		}
		got, err := os.ReadFile(link)
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("snapshot %s: read %d bytes (err %v), want the %d bytes served", p, len(got), err, len(data))
		}
	}
}

func TestClient_Download(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	opts := smallRepo()
	h.AddRepo("org/tiny", opts)
	c, _ := newClient(t, h, hf.ClientOptions{})
	commit, files := lockedFiles(t, c, "org/tiny", "main")
	cache := t.TempDir()

	var progress []int64
	err := c.Download(context.Background(), "org/tiny", commit, files, hf.DownloadOptions{
		CacheDir: cache, Revision: "main",
		Progress: func(file string, done, total int64) {
			if file == "tiny-Q8_0.gguf" {
				progress = append(progress, done)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	for _, f := range opts.Files {
		want[f.Path] = f.Data
	}
	checkSnapshot(t, cache, "org/tiny", commit, want)

	repoDir := hf.RepoDir(cache, "org/tiny")
	if filepath.Base(repoDir) != "models--org--tiny" {
		t.Errorf("RepoDir = %s, want …/models--org--tiny", repoDir)
	}
	if ref, err := os.ReadFile(filepath.Join(repoDir, "refs", "main")); err != nil || string(ref) != commit {
		t.Errorf("refs/main = %q, %v, want %s", ref, err, commit)
	}
	// LFS blobs are named by sha256, git blobs by their git sha1, as
	// huggingface_hub names them.
	q8 := hubtest.RandomBytes(300_000, 1)
	if _, err := os.Stat(filepath.Join(repoDir, "blobs", sha256hex(q8))); err != nil {
		t.Errorf("LFS blob not named by its sha256: %v", err)
	}
	if _, err := os.Stat(filepath.Join(repoDir, "blobs", hubtest.GitBlobID([]byte("# tiny\n")))); err != nil {
		t.Errorf("git blob not named by its git sha1: %v", err)
	}
	if target, _ := os.Readlink(hf.SnapshotPath(cache, "org/tiny", commit, "sub/dir/tiny-Q4_0.gguf")); target != "../../../../blobs/"+sha256hex(hubtest.RandomBytes(200_000, 2)) {
		t.Errorf("nested snapshot link → %q, want ../../../../blobs/<sha256>", target)
	}
	if len(progress) == 0 || progress[len(progress)-1] != 300_000 {
		t.Errorf("progress for tiny-Q8_0.gguf = %v, want it to end at 300000", progress)
	}
	for i := 1; i < len(progress); i++ {
		if progress[i] < progress[i-1] {
			t.Errorf("progress went backwards: %v", progress)
		}
	}
	// Every download asked for the locked commit, never "main".
	for _, r := range h.Requests() {
		if strings.Contains(r.Path, "/resolve/") && !strings.Contains(r.Path, "/resolve/"+commit+"/") {
			t.Errorf("download request %s is not at the locked commit %s", r.Path, commit)
		}
	}

	// Present with the right hash: skipped, no request at all.
	h.ResetRequests()
	if err := c.Download(context.Background(), "org/tiny", commit, files, hf.DownloadOptions{CacheDir: cache}); err != nil {
		t.Fatal(err)
	}
	if reqs := h.Requests(); len(reqs) != 0 {
		t.Errorf("second download made %d requests, want 0: %+v", len(reqs), reqs)
	}
	// Offline works from the cache too.
	off, _ := newClient(t, h, hf.ClientOptions{Offline: true})
	if err := off.Download(context.Background(), "org/tiny", commit, files, hf.DownloadOptions{CacheDir: cache}); err != nil {
		t.Errorf("offline download with everything cached: %v", err)
	}

	// A blob damaged on disk is fetched again.
	blob := filepath.Join(repoDir, "blobs", sha256hex(q8))
	os.Remove(blob)
	os.WriteFile(blob, bytes.Repeat([]byte{'x'}, len(q8)), 0o644)
	h.ResetRequests()
	if err := c.Download(context.Background(), "org/tiny", commit, files, hf.DownloadOptions{CacheDir: cache}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(blob); !bytes.Equal(got, q8) {
		t.Error("damaged blob was not replaced with the right bytes")
	}
	if n := len(h.Requests()); n != 2 { // resolve 302 + cdn
		t.Errorf("re-fetching one LFS file made %d requests, want 2", n)
	}
}

func TestClient_DownloadResume(t *testing.T) {
	data := hubtest.RandomBytes(1<<20+123, 7)
	for _, noRange := range []bool{false, true} {
		h := hubtest.New()
		h.AddRepo("org/tiny", hubtest.RepoOptions{Files: []hubtest.File{{Path: "m.gguf", Data: data, LFS: true}}})
		h.NoRange(noRange)
		c, _ := newClient(t, h, hf.ClientOptions{})
		commit, files := lockedFiles(t, c, "org/tiny", "main")
		cache := t.TempDir()
		blobs := filepath.Join(hf.RepoDir(cache, "org/tiny"), "blobs")
		os.MkdirAll(blobs, 0o755)
		half := int64(len(data) / 2)
		os.WriteFile(filepath.Join(blobs, sha256hex(data)+".incomplete"), data[:half], 0o644)
		h.ResetRequests()
		if err := c.Download(context.Background(), "org/tiny", commit, files, hf.DownloadOptions{CacheDir: cache}); err != nil {
			t.Fatalf("noRange=%v: %v", noRange, err)
		}
		checkSnapshot(t, cache, "org/tiny", commit, map[string][]byte{"m.gguf": data})
		var cdn *hubtest.Request
		for _, r := range h.Requests() {
			if strings.HasPrefix(r.Path, "/cdn/") {
				cdn = &r
			}
		}
		wantRange := "bytes=" + itoa(half) + "-"
		if cdn == nil || cdn.Range != wantRange {
			t.Errorf("noRange=%v: CDN request %+v, want Range %q", noRange, cdn, wantRange)
		}
		if _, err := os.Stat(filepath.Join(blobs, sha256hex(data)+".incomplete")); !os.IsNotExist(err) {
			t.Errorf("noRange=%v: .incomplete left behind (%v)", noRange, err)
		}
		h.Close()
	}
}

// TestClient_DownloadCutMidway drops the connection twice mid-body; the
// download resumes where each attempt stopped.
func TestClient_DownloadCutMidway(t *testing.T) {
	data := hubtest.RandomBytes(3<<20, 8)
	h := hubtest.New()
	defer h.Close()
	h.AddRepo("org/tiny", hubtest.RepoOptions{Files: []hubtest.File{{Path: "m.gguf", Data: data, LFS: true}}})
	c, s := newClient(t, h, hf.ClientOptions{})
	commit, files := lockedFiles(t, c, "org/tiny", "main")
	h.CutNext("org/tiny", "m.gguf", 1<<20, 2)
	h.ResetRequests()
	cache := t.TempDir()
	if err := c.Download(context.Background(), "org/tiny", commit, files, hf.DownloadOptions{CacheDir: cache}); err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, cache, "org/tiny", commit, map[string][]byte{"m.gguf": data})
	var ranges []string
	for _, r := range h.Requests() {
		if strings.HasPrefix(r.Path, "/cdn/") {
			ranges = append(ranges, r.Range)
		}
	}
	if len(ranges) != 3 || ranges[0] != "" || !strings.HasPrefix(ranges[1], "bytes=") || !strings.HasPrefix(ranges[2], "bytes=") {
		t.Errorf("CDN requests had ranges %q, want a full request then two resumes", ranges)
	}
	if len(s.d) != 2 {
		t.Errorf("waited %v between attempts, want 2 waits", s.d)
	}
}

func TestClient_DownloadCorrupted(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	h.AddRepo("org/tiny", smallRepo())
	c, _ := newClient(t, h, hf.ClientOptions{})
	for _, file := range []string{"tiny-Q8_0.gguf", "config.json"} {
		commit, files := lockedFiles(t, c, "org/tiny", "main", file)
		h.Corrupt("org/tiny", file)
		cache := t.TempDir()
		err := c.Download(context.Background(), "org/tiny", commit, files, hf.DownloadOptions{CacheDir: cache, Revision: "main"})
		var ce *hf.ChecksumError
		if !errors.As(err, &ce) {
			t.Fatalf("%s: download of corrupted bytes = %v, want a *ChecksumError", file, err)
		}
		if ce.Want == ce.Got || !strings.Contains(err.Error(), ce.Want) || !strings.Contains(err.Error(), ce.Got) {
			t.Errorf("%s: error %q should name both hashes", file, err)
		}
		repoDir := hf.RepoDir(cache, "org/tiny")
		if _, err := os.Stat(filepath.Join(repoDir, "snapshots")); !os.IsNotExist(err) {
			t.Errorf("%s: snapshots/ exists after a rejected download (%v)", file, err)
		}
		if _, err := os.Stat(filepath.Join(repoDir, "refs")); !os.IsNotExist(err) {
			t.Errorf("%s: refs/ exists after a rejected download (%v)", file, err)
		}
		entries, _ := os.ReadDir(filepath.Join(repoDir, "blobs"))
		if len(entries) != 0 {
			t.Errorf("%s: blobs/ holds %v after a rejected download, want nothing", file, entries)
		}
	}
}

func TestClient_DownloadGated(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	h.StartCDN()
	opts := smallRepo()
	opts.Gated, opts.Token = true, testToken
	h.AddRepo("org/gated", opts)
	anon, _ := newClient(t, h, hf.ClientOptions{})
	commit, files := lockedFiles(t, anon, "org/gated", "main") // metadata is public
	cache := t.TempDir()
	err := anon.Download(context.Background(), "org/gated", commit, files, hf.DownloadOptions{CacheDir: cache})
	var he *hf.HubError
	if !errors.As(err, &he) || he.Code != hf.CodeGatedRepo || he.Status != 401 {
		t.Fatalf("gated download without token = %v, want 401 GatedRepo", err)
	}
	if _, err := os.Stat(filepath.Join(hf.RepoDir(cache, "org/gated"), "snapshots")); !os.IsNotExist(err) {
		t.Errorf("snapshots/ exists after a refused download")
	}
	withTok, _ := newClient(t, h, hf.ClientOptions{Token: testToken})
	h.ResetRequests()
	if err := withTok.Download(context.Background(), "org/gated", commit, files, hf.DownloadOptions{CacheDir: cache}); err != nil {
		t.Fatalf("gated download with the granted token: %v", err)
	}
	want := map[string][]byte{}
	for _, f := range opts.Files {
		want[f.Path] = f.Data
	}
	checkSnapshot(t, cache, "org/gated", commit, want)
	// The token goes to the hub, never to the CDN on another host.
	var cdn int
	for _, r := range h.Requests() {
		switch r.Server {
		case "cdn":
			cdn++
			if r.Token != "" {
				t.Errorf("CDN request %s carried the token", r.Path)
			}
		case "hub":
			if r.Token != testToken {
				t.Errorf("hub request %s carried token %q, want the client's", r.Path, r.Token)
			}
		}
	}
	if cdn != 2 {
		t.Errorf("%d requests reached the CDN, want 2 (the LFS files)", cdn)
	}
}

func TestClient_DownloadRejectsUnsafe(t *testing.T) {
	c := hf.NewClient(hf.ClientOptions{Endpoint: "http://127.0.0.1:1", MaxRetries: -1})
	ok := strings.Repeat("a", 40)
	tests := []struct {
		commit string
		f      hf.FileInfo
		rev    string
	}{
		{ok, hf.FileInfo{Path: "../../etc/passwd", BlobID: ok}, ""},
		{ok, hf.FileInfo{Path: "/abs", BlobID: ok}, ""},
		{ok, hf.FileInfo{Path: "a//b", BlobID: ok}, ""},
		{ok, hf.FileInfo{Path: "m.gguf", LFS: true}, ""},
		{"main", hf.FileInfo{Path: "m.gguf", BlobID: ok}, ""},
		{ok, hf.FileInfo{Path: "m.gguf", BlobID: ok}, "../x"},
	}
	for _, tt := range tests {
		cache := t.TempDir()
		err := c.Download(context.Background(), "org/tiny", tt.commit, []hf.FileInfo{tt.f}, hf.DownloadOptions{CacheDir: cache, Revision: tt.rev})
		if err == nil {
			t.Errorf("Download(%s, %+v, rev %q) succeeded, want an error", tt.commit, tt.f, tt.rev)
		}
		if entries, _ := os.ReadDir(cache); len(entries) != 0 {
			t.Errorf("Download(%s, %+v, rev %q) wrote %v", tt.commit, tt.f, tt.rev, entries)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestClient_DownloadSizeMismatch(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	h.AddRepo("org/tiny", smallRepo())
	c, _ := newClient(t, h, hf.ClientOptions{})
	commit, files := lockedFiles(t, c, "org/tiny", "main", "tiny-Q8_0.gguf")
	files[0].Size++ // the lock says one byte more than the hub serves
	cache := t.TempDir()
	err := c.Download(context.Background(), "org/tiny", commit, files, hf.DownloadOptions{CacheDir: cache})
	if err == nil || !strings.Contains(err.Error(), "the server sends 300000 bytes from byte 0, the lock says the file has 300001") {
		t.Errorf("download with a wrong locked size = %v, want a size mismatch", err)
	}
	if _, err := os.Stat(filepath.Join(hf.RepoDir(cache, "org/tiny"), "snapshots")); !os.IsNotExist(err) {
		t.Errorf("snapshots/ exists after a failed download")
	}
}

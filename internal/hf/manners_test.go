package hf_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rigorbench/rigor/internal/hf"
	"github.com/rigorbench/rigor/internal/hf/hubtest"
)

func readRef(t *testing.T, cache, repo, rev string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(hf.RepoDir(cache, repo), "refs", rev))
	if err != nil {
		return ""
	}
	return string(b)
}

// A pull of an older locked commit leaves refs/main where the newer one put
// it; the newest commit moves it forward.
func TestDownload_refsNeverBackwards(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	h.AddRepo("org/tiny", smallRepo())
	c, _ := newClient(t, h, hf.ClientOptions{})
	old, oldFiles := lockedFiles(t, c, "org/tiny", "main", "config.json")
	cache := t.TempDir()
	ctx := context.Background()

	// Unset revision: refs/main, as huggingface_hub writes it.
	if err := c.Download(ctx, "org/tiny", old, oldFiles, hf.DownloadOptions{CacheDir: cache}); err != nil {
		t.Fatal(err)
	}
	if got := readRef(t, cache, "org/tiny", "main"); got != old {
		t.Fatalf("refs/main after an unset revision = %q, want %s", got, old)
	}

	newer := h.Push("org/tiny", "main", []hubtest.File{{Path: "config.json", Data: []byte(`{"n_layer": 3}`)}})
	_, newFiles := lockedFiles(t, c, "org/tiny", newer, "config.json")
	if err := c.Download(ctx, "org/tiny", newer, newFiles, hf.DownloadOptions{CacheDir: cache, Revision: "main"}); err != nil {
		t.Fatal(err)
	}
	if got := readRef(t, cache, "org/tiny", "main"); got != newer {
		t.Fatalf("refs/main after pulling the new head = %q, want %s", got, newer)
	}
	// The older lock is pulled again (its blob removed so it downloads):
	// refs/main stays at the newer commit.
	os.RemoveAll(filepath.Join(hf.RepoDir(cache, "org/tiny"), "snapshots", old))
	if err := c.Download(ctx, "org/tiny", old, oldFiles, hf.DownloadOptions{CacheDir: cache, Revision: "main"}); err != nil {
		t.Fatal(err)
	}
	if got := readRef(t, cache, "org/tiny", "main"); got != newer {
		t.Errorf("refs/main after pulling the older lock = %q, want it left at %s", got, newer)
	}
	// An older commit into an empty cache writes no ref either.
	empty := t.TempDir()
	if err := c.Download(ctx, "org/tiny", old, oldFiles, hf.DownloadOptions{CacheDir: empty, Revision: "main"}); err != nil {
		t.Fatal(err)
	}
	if got := readRef(t, empty, "org/tiny", "main"); got != "" {
		t.Errorf("refs/main in a fresh cache = %q, want none (main is %s now)", got, newer)
	}
}

// Two downloads of one file at once both succeed, and the file is fetched
// once: the second waits on the cache's lock and finds the verified blob.
func TestDownload_concurrent(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	h.AddRepo("org/tiny", smallRepo())
	h.Delay(20 * time.Millisecond)
	c, _ := newClient(t, h, hf.ClientOptions{})
	commit, files := lockedFiles(t, c, "org/tiny", "main", "*.gguf")
	cache := t.TempDir()
	h.ResetRequests()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.Download(context.Background(), "org/tiny", commit, files, hf.DownloadOptions{CacheDir: cache, Revision: "main"})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("download %d: %v", i, err)
		}
	}
	gets := 0
	for _, r := range h.Requests() {
		if r.Method == "GET" && strings.Contains(r.Path, "/resolve/") {
			gets++
		}
	}
	if gets != 1 {
		t.Errorf("the file was fetched %d times, want once", gets)
	}
	checkSnapshot(t, cache, "org/tiny", commit, map[string][]byte{"tiny-Q8_0.gguf": hubtest.RandomBytes(300_000, 1)})
	if m, _ := filepath.Glob(filepath.Join(hf.RepoDir(cache, "org/tiny"), "blobs", "*.incomplete")); len(m) > 0 {
		t.Errorf("left behind: %v", m)
	}
}

// Another client (huggingface_hub takes flock(2) on the same
// .locks/models--org--tiny/<hash>.lock) holds the lock while it writes the
// blob: rigor waits, then uses its blob without fetching.
func TestDownload_waitsForOtherClient(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	h.AddRepo("org/tiny", smallRepo())
	c, _ := newClient(t, h, hf.ClientOptions{})
	commit, files := lockedFiles(t, c, "org/tiny", "main", "tiny-Q8_0.gguf")
	cache := t.TempDir()
	sha := files[0].SHA256
	lockPath := filepath.Join(cache, ".locks", "models--org--tiny", sha+".lock")
	os.MkdirAll(filepath.Dir(lockPath), 0o755)
	lf, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o664)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	blobs := filepath.Join(hf.RepoDir(cache, "org/tiny"), "blobs")
	os.MkdirAll(blobs, 0o755)
	data := hubtest.RandomBytes(300_000, 1)
	// The other client's half-written download.
	os.WriteFile(filepath.Join(blobs, sha+".incomplete"), data[:1000], 0o644)
	h.ResetRequests()
	done := make(chan error, 1)
	go func() {
		done <- c.Download(context.Background(), "org/tiny", commit, files, hf.DownloadOptions{CacheDir: cache})
	}()
	select {
	case err := <-done:
		t.Fatalf("Download did not wait for the lock: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	// The other client finishes: the blob in place, the lock released.
	os.WriteFile(filepath.Join(blobs, sha), data, 0o644)
	os.Remove(filepath.Join(blobs, sha+".incomplete"))
	unix.Flock(int(lf.Fd()), unix.LOCK_UN)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, r := range h.Requests() {
		if strings.Contains(r.Path, "/resolve/") || r.Server == "cdn" {
			t.Errorf("fetched %s although the other client's blob was there", r.Path)
		}
	}
	checkSnapshot(t, cache, "org/tiny", commit, map[string][]byte{"tiny-Q8_0.gguf": data})
}

// A refused download (a gated repo without a token) leaves no empty
// .incomplete file behind.
func TestDownload_refusedLeavesNothing(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	opts := smallRepo()
	opts.Gated, opts.Token = true, "hf_granted"
	h.AddRepo("org/gated", opts)
	c, _ := newClient(t, h, hf.ClientOptions{MaxRetries: -1})
	commit, files := lockedFiles(t, c, "org/gated", "main", "tiny-Q8_0.gguf")
	cache := t.TempDir()
	if err := c.Download(context.Background(), "org/gated", commit, files, hf.DownloadOptions{CacheDir: cache}); err == nil {
		t.Fatal("a gated download without a token succeeded")
	}
	m, _ := filepath.Glob(filepath.Join(hf.RepoDir(cache, "org/gated"), "blobs", "*"))
	if len(m) > 0 {
		t.Errorf("a refused download left %v", m)
	}
}

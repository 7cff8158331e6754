package hf

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rigorbench/rigor/internal/hf/hubtest"
)

// fullDisk writes n bytes, then fails as a full disk does.
type fullDisk struct {
	w io.Writer
	n int
}

func (d *fullDisk) Write(p []byte) (int, error) {
	if len(p) > d.n {
		k, _ := d.w.Write(p[:d.n])
		d.n = 0
		return k, &os.PathError{Op: "write", Path: "blob", Err: syscall.ENOSPC}
	}
	d.n -= len(p)
	return d.w.Write(p)
}

// A pull the disk has no room for says so, with how much more it needs
// and where, and removes its partial file unless asked to keep it.
func TestDownload_diskFull(t *testing.T) {
	old := testOnlyPartWriter
	defer func() { testOnlyPartWriter = old }()
	testOnlyPartWriter = func(f *os.File) io.Writer { return &fullDisk{w: f, n: 100_000} }

	h := hubtest.New()
	defer h.Close()
	data := hubtest.RandomBytes(300_000, 7)
	commit := h.AddRepo("org/big", hubtest.RepoOptions{Files: []hubtest.File{{Path: "big.gguf", Data: data, LFS: true}}})
	c := NewClient(ClientOptions{Endpoint: h.URL, Backoff: 1, MaxBackoff: 1})
	all, err := c.ListFiles(context.Background(), "org/big", commit)
	if err != nil {
		t.Fatal(err)
	}
	for _, keep := range []bool{false, true} {
		cache := t.TempDir()
		err := c.Download(context.Background(), "org/big", commit, all, DownloadOptions{CacheDir: cache, KeepPartial: keep})
		var full *DiskFullError
		if !errors.As(err, &full) {
			t.Fatalf("keep=%v: %v, want a *DiskFullError", keep, err)
		}
		if !strings.Contains(err.Error(), "no space left on the disk of "+filepath.Join(RepoDir(cache, "org/big"), "blobs")) || !strings.Contains(err.Error(), "195.3 KiB more needed") {
			t.Errorf("keep=%v: error %q, want where and how much", keep, err)
		}
		if n := strings.Count(err.Error(), "no space left"); n != 1 {
			t.Errorf("keep=%v: error %q says it %d times", keep, err, n)
		}
		parts, _ := filepath.Glob(filepath.Join(RepoDir(cache, "org/big"), "blobs", "*.incomplete"))
		if keep != (len(parts) == 1) {
			t.Errorf("keep=%v: partial files %v", keep, parts)
		}
		if h := full.Hint(); !strings.Contains(h, "free at least 195.3 KiB") || keep != strings.Contains(h, "is kept") {
			t.Errorf("keep=%v: hint %q", keep, h)
		}
	}
}

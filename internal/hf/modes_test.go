package hf_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/rigorbench/rigor/internal/hf"
	"github.com/rigorbench/rigor/internal/hf/hubtest"
)

// A hub cache shared by a group: under umask 002 in a setgid cache, every
// folder rigor creates is 2775 and every file (blobs, refs, lock files)
// 0664, as huggingface_hub makes them, so that another user of the group
// can pull into it. Not parallel: the umask is the process's.
func TestDownload_sharedCacheModes(t *testing.T) {
	old := syscall.Umask(0o002)
	defer syscall.Umask(old)

	h := hubtest.New()
	defer h.Close()
	h.AddRepo("org/tiny", smallRepo())
	c, _ := newClient(t, h, hf.ClientOptions{})
	commit, files := lockedFiles(t, c, "org/tiny", "main")
	cache := filepath.Join(t.TempDir(), "hub")
	if err := os.Mkdir(cache, 0o775); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(cache, 0o775|fs.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	if err := c.Download(context.Background(), "org/tiny", commit, files, hf.DownloadOptions{CacheDir: cache, Revision: "main"}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	err := filepath.WalkDir(cache, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == cache {
			return err
		}
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(cache, p)
		mode := st.Mode()
		switch {
		case mode&fs.ModeSymlink != 0:
			return nil
		case mode.IsDir():
			if got := mode & (fs.ModePerm | fs.ModeSetgid); got != 0o775|fs.ModeSetgid {
				t.Errorf("folder %s: mode %v, want drwxrwsr-x (2775)", rel, got)
			}
		default:
			if got := mode.Perm(); got != 0o664 {
				t.Errorf("file %s: mode %v, want 0664", rel, got)
			}
		}
		seen[filepath.Base(filepath.Dir(p))] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"blobs", "refs", "models--org--tiny"} {
		if !seen[d] {
			t.Errorf("nothing checked in a folder %s", d)
		}
	}
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rigorbench/rigor/internal/gitsrc"
	"github.com/rigorbench/rigor/internal/hf"
	"github.com/rigorbench/rigor/internal/lock"
)

type pullCmd struct {
	ID string `arg:"" name:"id" help:"An experiment id, e.g. minimax-m27-b70/baseline."`
}

func (pullCmd) Help() string {
	return `Downloads the locked model files of an experiment from the Hugging Face
hub at the locked commit (not "main") into the hub's cache layout
($HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub:
blobs/, snapshots/<commit>/, refs/), so that a locked experiment reruns on
a new machine and other tools (huggingface_hub, llama.cpp) find the same
files. Partial downloads resume; each file is verified against its locked
sha256 before it appears in snapshots/. HF_TOKEN is sent for gated repos;
HF_ENDPOINT selects the hub. For a local model, pull only verifies the
files against the lock.

Examples:
  rigor pull minimax-m27-b70/baseline
  HF_TOKEN=hf_... rigor pull gated/llama`
}

func (c *pullCmd) Run(e *env) error {
	set, x, _, entry, err := e.lockedExperiment(c.ID, false)
	if err != nil {
		return err
	}
	m := entry.Model
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch {
	case m.Synthetic != nil:
		fmt.Fprintf(e.stderr, "rigor: %s uses a synthetic model; nothing to pull\n", x.ID)
		return nil
	case m.Requested.HF == "":
		files, err := verifyModel(ctx, set.Root, x.ID, entry)
		if err != nil {
			return err
		}
		for _, f := range files {
			fmt.Fprintln(e.stdout, f)
		}
		fmt.Fprintf(e.stderr, "rigor: %s uses local model files; they match the lock\n", x.ID)
		return nil
	}
	cache, err := hf.CacheDir()
	if err != nil {
		return err
	}
	var infos []hf.FileInfo
	var total int64
	for _, f := range m.Files {
		infos = append(infos, hf.FileInfo{Path: f.Path, Size: f.Size, SHA256: f.SHA256, BlobID: f.BlobID, LFS: f.BlobID == ""})
		total += f.Size
	}
	opts := hf.DownloadOptions{CacheDir: cache}
	if rev := m.Requested.Revision; rev != "" && !strings.EqualFold(rev, m.Commit) {
		opts.Revision = rev
	}
	bar := newPullBar(e.stderr, m.Requested.HF, total)
	if bar != nil {
		opts.Progress = bar.update
	}
	client := hf.FromEnv()
	start := time.Now()
	err = client.Download(ctx, m.Requested.HF, m.Commit, infos, opts)
	bar.done()
	if err != nil {
		var h interface{ Hint() string }
		if errors.As(err, &h) && h.Hint() != "" {
			return withHint(err, h.Hint())
		}
		return err
	}
	for _, f := range m.Files {
		fmt.Fprintln(e.stdout, hf.SnapshotPath(cache, m.Requested.HF, m.Commit, f.Path))
	}
	fmt.Fprintf(e.stderr, "rigor: %s@%.12s: %d %s, %s, verified (%s)\n", m.Requested.HF, m.Commit, len(m.Files), plural(len(m.Files), "file", "files"), humanBytes(total), time.Since(start).Round(100*time.Millisecond))
	return nil
}

// verifyModel finds the locked model files of experiment id (local files
// relative to the module root, or the hub cache's snapshot of the locked
// commit) and checks each against the lock through the stat-keyed hash
// cache, so an unchanged file is not read again. It returns the files'
// paths. A missing file is an error naming the path expected and the
// command that fetches it.
func verifyModel(ctx context.Context, root, id string, entry *lock.Entry) ([]string, error) {
	m := entry.Model
	hubCache := ""
	if m.Requested.HF != "" {
		var err error
		if hubCache, err = hf.CacheDir(); err != nil {
			return nil, err
		}
	}
	paths := entry.ModelFiles(hubCache)
	if m.Synthetic != nil {
		return paths, nil
	}
	if len(paths) != len(m.Files) {
		return nil, fmt.Errorf("%s: the lock names %d model files but %d paths", id, len(m.Files), len(paths))
	}
	for i, p := range paths {
		if !filepath.IsAbs(p) {
			paths[i] = filepath.Join(root, p)
		}
	}
	var hashable []string
	locked := map[string]lock.FileLock{}
	for i, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			if m.Requested.HF != "" {
				return nil, withHint(fmt.Errorf("%s: model file %s is not in the hub cache (expected %s)", id, m.Files[i].Path, p), "run 'rigor pull "+id+"' to download it")
			}
			return nil, withHint(fmt.Errorf("%s: model file %s is missing", id, p), "restore it, or relock the model with 'rigor lock --update model "+id+"'")
		}
		if fi.Size() != m.Files[i].Size {
			return nil, modelMismatch(id, m, p, fmt.Sprintf("size %d, lock has %d", fi.Size(), m.Files[i].Size))
		}
		if m.Files[i].SHA256 != "" {
			hashable = append(hashable, p)
			locked[p] = m.Files[i]
		}
	}
	h := &lock.Hasher{Cache: gitsrc.CacheDir()}
	sums, err := h.Hash(ctx, hashable)
	if err != nil {
		return nil, err
	}
	for _, s := range sums {
		if want := locked[s.Path].SHA256; !strings.EqualFold(s.SHA256, want) {
			return nil, modelMismatch(id, m, s.Path, fmt.Sprintf("sha256 %.12s, lock has %.12s", s.SHA256, want))
		}
	}
	return paths, nil
}

func modelMismatch(id string, m lock.ModelLock, path, what string) error {
	err := fmt.Errorf("%s: model file %s differs from the lock: %s", id, path, what)
	if m.Requested.HF != "" {
		return withHint(err, "remove it and run 'rigor pull "+id+"' to download the locked bytes")
	}
	return withHint(err, "restore the locked file, or relock with 'rigor lock --update model "+id+"' if the change is intended")
}

// pullBar draws download progress on a terminal; a nil *pullBar draws
// nothing.
type pullBar struct {
	w     io.Writer
	repo  string
	total int64
	start time.Time
	mu    sync.Mutex
	files map[string]int64
	last  time.Time
	drawn bool
}

func newPullBar(w io.Writer, repo string, total int64) *pullBar {
	if _, ok := termFile(w); !ok {
		return nil
	}
	return &pullBar{w: w, repo: repo, total: total, start: time.Now(), files: map[string]int64{}}
}

func (b *pullBar) update(file string, done, _ int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.files[file] = done
	now := time.Now()
	if now.Sub(b.last) < 100*time.Millisecond {
		return
	}
	b.last, b.drawn = now, true
	var sum int64
	for _, n := range b.files {
		sum += n
	}
	pct := 100
	if b.total > 0 {
		pct = int(sum * 100 / b.total)
	}
	rate := float64(sum) / now.Sub(b.start).Seconds()
	fmt.Fprintf(b.w, "\rrigor: pulling %s %3d%% %s / %s (%s/s)\x1b[K", b.repo, pct, humanBytes(sum), humanBytes(b.total), humanBytes(int64(rate)))
}

func (b *pullBar) done() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.drawn {
		fmt.Fprint(b.w, "\r\x1b[K")
	}
}

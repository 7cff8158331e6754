package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rigorbench/rigor/internal/hf"
	"github.com/rigorbench/rigor/internal/lock"
)

type pullCmd struct {
	ID          string `arg:"" name:"id" help:"An experiment id, e.g. example/smoke."`
	KeepPartial bool   `help:"Keep the partial file of a download the disk has no room for, to resume it later (by default it is removed)."`
}

func (pullCmd) Help() string {
	return `Downloads the locked model files of an experiment from the Hugging Face
hub at the locked commit (not "main") into the hub's cache layout
($HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub:
blobs/, snapshots/<commit>/, refs/), so that a locked experiment reruns on
a new machine and other tools (huggingface_hub, llama.cpp) find the same
files. Partial downloads resume; each file is verified against its locked
sha256 before it appears in snapshots/. HF_TOKEN is sent for gated repos;
HF_ENDPOINT selects the hub (HF_TOKEN=hf_... rigor pull ID). For a local
model, pull only verifies the files against the lock; a synthetic model
(rigor init's example) has nothing to pull, and pull says so.

Examples:
  rigor pull example/smoke`
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
	case m.Requested.Name != "" && m.Requested.HF == "" && m.Requested.Path == "":
		fmt.Fprintf(e.stderr, "rigor: %s measures an endpoint, whose model (%s) is the server's; nothing to pull\n", x.ID, m.Requested.Name)
		return nil
	case m.Requested.HF == "":
		files, err := e.verifyModel(ctx, set.Root, x.ID, entry)
		if err != nil {
			return err
		}
		for _, f := range files {
			fmt.Fprintln(e.stdout, f)
		}
		fmt.Fprintf(e.stderr, "rigor: %s uses local model files; they match the lock\n", x.ID)
		return nil
	}
	cache := e.cfg().HFCache
	var infos []hf.FileInfo
	var total int64
	for _, f := range m.Files {
		infos = append(infos, hf.FileInfo{Path: f.Path, Size: f.Size, SHA256: f.SHA256, BlobID: f.BlobID, LFS: f.BlobID == ""})
		total += f.Size
	}
	// refs/<revision> names a branch or tag; a revision that is the
	// commit itself (or its prefix) writes no ref, as huggingface_hub does.
	opts := hf.DownloadOptions{CacheDir: cache, Revision: m.Requested.Revision, KeepPartial: c.KeepPartial}
	if rev := strings.ToLower(m.Requested.Revision); rev != "" && strings.HasPrefix(strings.ToLower(m.Commit), rev) {
		opts.Revision = m.Commit
	}
	bar := newPullBar(e.stderr, m.Requested.HF, total)
	if bar != nil {
		opts.Progress = bar.update
	}
	hopts, err := e.cfg().hfOptions()
	if err != nil {
		return err
	}
	client := hf.NewClient(hopts)
	start := time.Now()
	err = client.Download(ctx, m.Requested.HF, m.Commit, infos, opts)
	bar.done()
	if err != nil && ctx.Err() == nil {
		// Upstream failed (the repo deleted or gated, the hub down): the
		// archive, when one is set, stands in with the same bytes.
		if n, aerr := e.pullFromArchive(ctx, set.Root, x, entry); aerr == nil && n > 0 {
			fmt.Fprintf(e.stderr, "rigor: warning: the hub failed (%v): the model files came from the archive instead\n", err)
			for _, f := range m.Files {
				fmt.Fprintln(e.stdout, hf.SnapshotPath(cache, m.Requested.HF, m.Commit, f.Path))
			}
			fmt.Fprintf(e.stderr, "rigor: %s@%.12s: %d %s, %s, from the archive, verified (%s)\n", m.Requested.HF, m.Commit, len(m.Files), plural(len(m.Files), "file", "files"), humanBytes(total), time.Since(start).Round(100*time.Millisecond))
			return nil
		} else if aerr != nil {
			err = fmt.Errorf("%w; the archive could not stand in: %v", err, aerr)
		}
	}
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

// verifyModel checks the locked model files of experiment id against the
// lock (lock.VerifyModel, the check `rigor run` makes too) and returns
// their paths.
func (e *env) verifyModel(ctx context.Context, root, id string, entry *lock.Entry) ([]string, error) {
	c := e.cfg()
	files, err := lock.VerifyModel(ctx, lock.VerifyOptions{Root: root, HFCache: c.HFCache, Cache: c.Cache}, id, entry)
	return files, explain(err, id)
}

// pullBar shows download progress: on a terminal a live line redrawn in
// place; off one (a log, CI) a line at the start and one every heartbeat,
// each with the rate and an ETA, so a long pull never sits silent.
type pullBar struct {
	w     io.Writer
	repo  string
	total int64
	tty   bool
	start time.Time
	mu    sync.Mutex
	files map[string]int64
	last  time.Time
	drawn bool
}

func newPullBar(w io.Writer, repo string, total int64) *pullBar {
	_, tty := termFile(w)
	b := &pullBar{w: w, repo: repo, total: total, tty: tty, start: time.Now(), files: map[string]int64{}}
	if !tty {
		fmt.Fprintf(w, "rigor: pulling %s: %s\n", repo, humanBytes(total))
		b.last = b.start
	}
	return b
}

func (b *pullBar) update(file string, done, _ int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.files[file] = done
	now := time.Now()
	every := 100 * time.Millisecond
	if !b.tty {
		every = heartbeat
	}
	if now.Sub(b.last) < every {
		return
	}
	b.last = now
	var sum int64
	for _, n := range b.files {
		sum += n
	}
	line := pullLine(b.repo, sum, b.total, now.Sub(b.start))
	if b.tty {
		b.drawn = true
		fmt.Fprintf(b.w, "\r%s\x1b[K", line)
		return
	}
	fmt.Fprintln(b.w, line)
}

// pullLine says how far a pull is: percentage, bytes, rate and ETA.
func pullLine(repo string, sum, total int64, elapsed time.Duration) string {
	pct := 100
	if total > 0 {
		pct = int(sum * 100 / total)
	}
	rate := float64(sum) / max(elapsed.Seconds(), 1e-3)
	eta := ""
	if rate > 0 && total > sum {
		eta = ", ETA " + time.Duration(float64(total-sum)/rate*float64(time.Second)).Round(time.Second).String()
	}
	return fmt.Sprintf("rigor: pulling %s %3d%% %s / %s (%s/s%s)", repo, pct, humanBytes(sum), humanBytes(total), humanBytes(int64(rate)), eta)
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

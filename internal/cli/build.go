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

	"github.com/rigorbench/rigor/engine/llamacpp"
	"github.com/rigorbench/rigor/internal/buildcache"
	"github.com/rigorbench/rigor/internal/gitsrc"
	"github.com/rigorbench/rigor/internal/lock"
	"github.com/rigorbench/rigor/internal/spec"
)

type buildCmd struct {
	ID      string `arg:"" name:"id" help:"An experiment id, e.g. minimax-m27-b70/baseline."`
	JSON    bool   `help:"Print the build as JSON."`
	Offline bool   `help:"Use the cached git mirror without fetching." env:"RIGOR_OFFLINE"`
	Jobs    int    `short:"j" help:"Parallel compile jobs (default: the number of CPUs)." env:"RIGOR_BUILD_JOBS"`
}

func (buildCmd) Help() string {
	return `Builds the engine of a locked experiment without running it: the
locked commit from rigor's git mirror, the locked patches applied strictly
in order, cmake configured for the backend (cpu, cuda, sycl, vulkan, hip,
metal) with the experiment's cmake options, and only llama-bench and
rpc-server built. Builds are cached under <cache>/builds/<id>, keyed by
commit, patch hashes, recipe, compiler and platform: a second build of the
same inputs is found in milliseconds. The binary's own build commit must
match the locked one. Prints the build id and the directory of the
binaries. A prebuilt engine (source: path) is only located.

Examples:
  rigor build minimax-m27-b70/baseline
  rigor build minimax-m27-b70/baseline --json
  rigor build bench/kv -j 4`
}

func relTo(p, wd string) string {
	if rel, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return p
}

// buildOptionsOf returns the build of a locked llama.cpp-family
// experiment.
func buildOptionsOf(root string, x *spec.Experiment, entry *lock.Entry) (llamacpp.BuildOptions, error) {
	fam := x.Spec.Engine.Family
	if fam != spec.FamilyLlamaCpp && fam != spec.FamilyIkLlamaCpp {
		return llamacpp.BuildOptions{}, fmt.Errorf("%s: engine %s is installed, not built by rigor", x.ID, fam)
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(root, filepath.FromSlash(p))
	}
	url := entry.Engine.Requested.Git
	if !strings.Contains(url, "://") && !strings.HasPrefix(url, "git@") {
		url = abs(url)
	}
	opts := llamacpp.BuildOptions{
		URL:    url,
		Commit: entry.Engine.Commit,
		Recipe: x.Spec.Engine.Build,
		Fork:   fam,
		RPC:    x.Spec.Engine.RPC != nil,
	}
	for _, p := range entry.Engine.Patches {
		opts.Patches = append(opts.Patches, llamacpp.PatchInput{Path: abs(p.Path), SHA256: p.SHA256})
	}
	return opts, nil
}

func (c *buildCmd) Run(e *env) error {
	set, x, _, entry, err := e.lockedExperiment(c.ID, false)
	if err != nil {
		return err
	}
	var b *llamacpp.BuildInfo
	start := time.Now()
	if entry.Engine.Requested.Path != "" {
		p := entry.Engine.Requested.Path
		if !filepath.IsAbs(p) {
			p = filepath.Join(set.Root, filepath.FromSlash(p))
		}
		if b, err = llamacpp.Prebuilt(p); err != nil {
			return err
		}
	} else {
		if entry.Engine.Commit == "" {
			return fmt.Errorf("%s: engine %s has no git source to build", x.ID, x.Spec.Engine.Family)
		}
		opts, err := buildOptionsOf(set.Root, x, entry)
		if err != nil {
			return err
		}
		opts.Offline, opts.Jobs = c.Offline, c.Jobs
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		bar := newBuildBar(e.stderr, fmt.Sprintf("building %s %.12s", opts.Fork, opts.Commit))
		if bar != nil {
			opts.Progress = bar.update
		}
		b, err = llamacpp.Build(ctx, opts)
		bar.done()
		if err != nil {
			return buildHint(err, x.ID)
		}
	}
	if c.JSON {
		return e.printJSON(b)
	}
	if b.ID != "" {
		fmt.Fprintf(e.stdout, "build: %s\n", b.ID)
	}
	fmt.Fprintf(e.stdout, "bin: %s\n", b.BinDir)
	switch {
	case b.ID == "":
		fmt.Fprintf(e.stderr, "rigor: prebuilt engine, not built\n")
	case b.Cached:
		fmt.Fprintf(e.stderr, "rigor: cached build (commit %s)\n", b.BuildCommit)
	default:
		fmt.Fprintf(e.stderr, "rigor: built in %s (commit %s)\n", time.Since(start).Round(100*time.Millisecond), b.BuildCommit)
	}
	return nil
}

// buildHint adds what the user can do about a failed build.
func buildHint(err error, id string) error {
	var fe *buildcache.FailedError
	var ce *llamacpp.CommitMismatchError
	var pc *llamacpp.PatchChangedError
	var pe *gitsrc.PatchError
	switch {
	case errors.As(err, &ce):
		return withHint(err, "the source at the locked commit reports another commit; check engine.source and relock with 'rigor lock --update engine "+id+"'")
	case errors.As(err, &pc), errors.As(err, &pe):
		return withHint(err, "relock the patches with 'rigor lock --update patches "+id+"'")
	case errors.Is(err, context.Canceled):
		return withHint(err, "the build was interrupted; nothing was cached, run 'rigor build "+id+"' again")
	case errors.As(err, &fe) && fe.Log != "":
		return withHint(err, "the full build log is "+fe.Log)
	}
	return err
}

// buildBar draws a build's progress on a terminal; a nil *buildBar draws
// nothing.
type buildBar struct {
	w     io.Writer
	label string
	mu    sync.Mutex
	last  int
	drawn bool
}

func newBuildBar(w io.Writer, label string) *buildBar {
	if _, ok := termFile(w); !ok {
		return nil
	}
	return &buildBar{w: w, label: label, last: -1}
}

func (b *buildBar) update(pct int, _ string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if pct == b.last {
		return
	}
	b.last, b.drawn = pct, true
	const width = 30
	n := pct * width / 100
	fmt.Fprintf(b.w, "\rrigor: %s [%s%s] %3d%%\x1b[K", b.label, strings.Repeat("#", n), strings.Repeat(" ", width-n), pct)
}

func (b *buildBar) done() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.drawn {
		fmt.Fprint(b.w, "\r\x1b[K")
	}
}

package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/rigorbench/rigor/internal/buildcache"
	"github.com/rigorbench/rigor/internal/lock"
	"github.com/rigorbench/rigor/internal/spec"
)

type buildCmd struct {
	ID      string `arg:"" name:"id" help:"An experiment id, e.g. example/smoke."`
	JSON    bool   `help:"Print the build as JSON."`
	Offline bool   `help:"Use the cached git mirror without fetching." env:"RIGOR_OFFLINE"`
	Jobs    int    `short:"j" help:"Parallel compile jobs (default: the number of CPUs)." env:"RIGOR_BUILD_JOBS"`
	Rebuild bool   `help:"Discard the cached build of this engine and build it again (a damaged or replaced binary)."`
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
node-llama-cpp is installed from npm into the engine cache; with
engine.build.flavour: "localBuild" the llama.cpp source it bundles is
then compiled for this CPU into the same build cache (cmake, git and a
C++ compiler needed; no network).

Examples:
  rigor build example/smoke
  rigor build example/smoke --json
  rigor build example/smoke --rebuild
  rigor build example/smokeLong -j 4`
}

func relTo(p, wd string) string {
	if rel, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return p
}

// buildOut is what `rigor build --json` prints.
type buildOut struct {
	ID     string `json:"id,omitempty"`
	BinDir string `json:"binDir"`
	// Bins maps each program to its path; Binaries to its sha256.
	Bins        map[string]string `json:"bins"`
	Binaries    map[string]string `json:"binaries"`
	Cached      bool              `json:"cached"`
	BuildCommit string            `json:"buildCommit,omitempty"`
	Engine      any               `json:"engine"`
}

func (c *buildCmd) Run(e *env) error {
	set, x, _, entry, err := e.lockedExperiment(c.ID, false)
	if err != nil {
		return err
	}
	start := time.Now()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r := e.runner(set.Root)
	r.Offline, r.Jobs, r.Rebuild = c.Offline, c.Jobs, c.Rebuild
	prog := newPrepareProgress(e.stderr, engineLabel(x, entry))
	ctx, err = e.withArchive(ctx, c.Offline, prog.say)
	if err != nil {
		return err
	}
	ctx = prog.attach(ctx, r)
	prog.run()
	b, err := r.PrepareEngine(ctx, x, entry)
	prog.close()
	if err != nil {
		if ctx.Err() != nil {
			return &interruptedError{explain(err, x.ID)}
		}
		return explain(err, x.ID)
	}
	out := buildOut{BinDir: b.BinDir, Bins: map[string]string{}, Binaries: b.Binaries, Cached: b.Cached,
		BuildCommit: b.BuildCommit, Engine: b.Engine}
	if b.Engine.BuildID != "prebuilt" {
		out.ID = b.Engine.BuildID
	}
	for name := range b.Binaries {
		out.Bins[name] = filepath.Join(b.BinDir, filepath.FromSlash(name))
		if p, ok := b.Paths[name]; ok {
			out.Bins[name] = p
		}
	}
	if c.JSON {
		return e.printJSON(out)
	}
	if b.Engine.Unpinned != "" && b.BinDir == "" {
		// An endpoint: nothing was built, and it answered.
		fmt.Fprintf(e.stderr, "rigor: %s: nothing to build: %s; it answers at %s\n", x.ID, b.Engine.Unpinned, b.Engine.Source)
		return nil
	}
	if out.ID != "" {
		fmt.Fprintf(e.stdout, "build: %s\n", out.ID)
	}
	fmt.Fprintf(e.stdout, "bin: %s\n", b.BinDir)
	switch {
	case b.Engine.BuildID == "prebuilt":
		fmt.Fprintf(e.stderr, "rigor: prebuilt engine, not built\n")
	case b.Engine.From == "archive" || buildcache.Substituted(ctx, b.Engine.BuildID):
		fmt.Fprintf(e.stderr, "rigor: from the archive, not built (%s %.12s)\n", b.Engine.Family, b.Engine.BuildID)
	case b.Cached && b.BuildCommit != "":
		fmt.Fprintf(e.stderr, "rigor: cached build (commit %s)\n", b.BuildCommit)
	case b.Cached:
		fmt.Fprintf(e.stderr, "rigor: in the engine cache\n")
	case b.BuildCommit != "":
		fmt.Fprintf(e.stderr, "rigor: built in %s (commit %s)\n", time.Since(start).Round(100*time.Millisecond), b.BuildCommit)
	default:
		fmt.Fprintf(e.stderr, "rigor: installed in %s\n", time.Since(start).Round(100*time.Millisecond))
	}
	return nil
}

// engineLabel names a locked engine in progress lines: its family and
// commit or version.
func engineLabel(x *spec.Experiment, entry *lock.Entry) string {
	switch {
	case entry.Engine.Commit != "":
		return fmt.Sprintf("%s %.12s", x.Spec.Engine.Family, entry.Engine.Commit)
	case entry.Engine.Version != "":
		return x.Spec.Engine.Family + " " + entry.Engine.Version
	}
	return x.Spec.Engine.Family
}

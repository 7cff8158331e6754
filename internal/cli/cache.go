package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/rigorbench/rigor/internal/buildcache"
	"github.com/rigorbench/rigor/internal/lock"
	"github.com/rigorbench/rigor/internal/run"
	"github.com/rigorbench/rigor/internal/spec"
)

type cacheCmd struct {
	List   cacheListCmd   `cmd:"" default:"withargs" help:"List the engine builds in the cache."`
	Prune  cachePruneCmd  `cmd:"" help:"Remove incomplete builds and builds no lockfile uses."`
	Verify cacheVerifyCmd `cmd:"" help:"Hash every file the cache vouches for again, and name those whose bytes changed."`
}

func (cacheCmd) Help() string {
	return `Lists and prunes rigor's engine build cache (<cache>/builds, where
<cache> is $RIGOR_CACHE, else $XDG_CACHE_HOME/rigor, else ~/.cache/rigor).
Each build is listed with its id, state (complete, building, incomplete,
failed), size and inputs. prune removes incomplete builds, the logs of
failed ones, and complete builds that no lockfile of the module uses on
this machine; --all removes every build; --dry-run only lists them.
verify reads every file the stat cache holds a hash of (model files,
engine programs and libraries) and every file of every complete build
again, and names each whose bytes are not those hashed before.

Examples:
  rigor cache
  rigor cache list --json
  rigor cache prune --dry-run
  rigor cache prune --all
  rigor cache verify`
}

type cacheListCmd struct {
	JSON bool `help:"Print the entries as JSON."`
}

func (cacheListCmd) Help() string {
	return `Lists the builds in rigor's engine build cache: id, state (complete,
building, incomplete, failed), size and inputs.

Examples:
  rigor cache list
  rigor cache list --json`
}

func (c *cacheListCmd) Run(e *env) error {
	items, err := e.buildCache().List(context.Background())
	if err != nil {
		return err
	}
	if c.JSON {
		return e.printJSON(items)
	}
	if len(items) == 0 {
		fmt.Fprintf(e.stderr, "rigor: no builds in %s\n", e.buildCache().Dir())
		return nil
	}
	printCacheItems(e.stdout, items)
	return nil
}

type cachePruneCmd struct {
	All    bool `help:"Remove every build, used or not (never one that is running)."`
	DryRun bool `help:"List what would be removed; remove nothing."`
	JSON   bool `help:"Print the removed entries as JSON."`
}

func (cachePruneCmd) Help() string {
	return `Removes incomplete builds, the logs of failed ones, and complete builds
that no lockfile of this module uses on this machine; --all removes every
build that is not running.

Examples:
  rigor cache prune --dry-run
  rigor cache prune
  rigor cache prune --all --json`
}

func (c *cachePruneCmd) Run(e *env) error {
	opts := buildcache.PruneOptions{All: c.All, DryRun: c.DryRun}
	if !c.All {
		used, err := e.usedBuilds()
		if err != nil {
			return err
		}
		opts.Used = func(key string) bool { return used[key] }
	}
	removed, err := e.buildCache().Prune(context.Background(), opts)
	if err != nil {
		return err
	}
	if !c.DryRun {
		// Scratch directories of runs whose rigor was killed.
		dirs, size, err := run.CleanScratch(e.cfg().Cache)
		if len(dirs) > 0 {
			fmt.Fprintf(e.stderr, "rigor: removed %d scratch run %s, %s\n", len(dirs), plural(len(dirs), "directory", "directories"), humanBytes(size))
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "rigor: warning: %v\n", err)
		}
		// Clones of Slurm tasks that were killed on this node.
		dirs, size, err = run.CleanJobScratch(os.TempDir())
		if len(dirs) > 0 {
			fmt.Fprintf(e.stderr, "rigor: removed %d scratch job %s left by killed Slurm tasks, %s\n", len(dirs), plural(len(dirs), "clone", "clones"), humanBytes(size))
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "rigor: warning: %v\n", err)
		}
	}
	if c.JSON {
		return e.printJSON(removed)
	}
	var size int64
	for _, it := range removed {
		size += it.Size
	}
	verb := "removed"
	if c.DryRun {
		verb = "would remove"
	}
	printCacheItems(e.stdout, removed)
	fmt.Fprintf(e.stderr, "rigor: %s %d %s, %s\n", verb, len(removed), plural(len(removed), "entry", "entries"), humanBytes(size))
	return nil
}

// usedBuilds returns the build ids the module's lockfiles use on this
// machine: the key each locked experiment rigor builds would build
// (llama.cpp engines, node-llama-cpp's localBuild).
func (e *env) usedBuilds() (map[string]bool, error) {
	set, err := e.loadSet(nil)
	if err != nil {
		if errors.Is(err, spec.ErrNoModule) {
			return nil, withHint(err, "prune keeps the builds a module's lockfiles use, so it runs inside a module; 'rigor cache prune --all' needs none")
		}
		return nil, err
	}
	used := map[string]bool{}
	r := e.runner(set.Root)
	files := map[string]*lock.File{}
	for _, x := range set.Experiments {
		if x.Broken {
			continue
		}
		f, ok := files[x.Package]
		if !ok {
			f, _ = lock.Read(set.Root, x.Package)
			files[x.Package] = f
		}
		if f == nil || f.Experiments[x.ID] == nil {
			continue
		}
		if key, ok := r.BuildKey(context.Background(), x, f.Experiments[x.ID]); ok {
			used[key] = true
		}
	}
	return used, nil
}

func (e *env) buildCache() buildcache.Cache { return buildcache.Cache{Root: e.cfg().Cache} }

// printCacheItems prints one line per entry: id, state, size, engine,
// commit, patches, backend and creation time.
func printCacheItems(w io.Writer, items []buildcache.Item) {
	if len(items) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tSIZE\tENGINE\tCOMMIT\tPATCHES\tBACKEND\tCREATED")
	for _, it := range items {
		engine, commit, patches, backend, created := "-", "-", "-", "-", "-"
		if it.Entry != nil {
			in := it.Entry.Inputs
			engine, commit, patches = in.Engine, shortHex(in.Commit), fmt.Sprint(len(in.Patches))
			backend = recipeBackend(in.Recipe)
			created = it.Entry.Created.Format("2006-01-02 15:04")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", it.Key[:12], it.State, humanBytes(it.Size), engine, commit, patches, backend, created)
	}
	tw.Flush()
}

func shortHex(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// recipeBackend names the GGML backends a build recipe enables (its cmake
// -DGGML_<BACKEND>=ON options), "cpu" if none.
func recipeBackend(raw json.RawMessage) string {
	var r struct{ Configure []string }
	if json.Unmarshal(raw, &r) != nil {
		return "?"
	}
	var out []string
	for _, a := range r.Configure {
		for _, b := range []string{"CUDA", "SYCL", "VULKAN", "HIP", "METAL"} {
			if a == "-DGGML_"+b+"=ON" {
				out = append(out, strings.ToLower(b))
			}
		}
	}
	if len(out) == 0 {
		return "cpu"
	}
	return strings.Join(out, "+")
}

// humanBytes renders a size as "0 B", "12.3 MB", "1.2 GB".
func humanBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}

type cacheVerifyCmd struct{}

func (cacheVerifyCmd) Help() string {
	return `Reads again every file rigor's caches vouch for, and names each whose bytes
changed since it was hashed: every file of the stat cache (model files,
engine programs and libraries that a run or a lock hashed; their entries are
refreshed) and every file each complete build recorded when it was built.
A run trusts a file whose size, mtime, ctime, inode and device did not
change; this is the check that trusts nothing ('rigor run --verify' does the
same for one run). Exits 1 when any file changed.

Examples:
  rigor cache verify`
}

func (c *cacheVerifyCmd) Run(e *env) error {
	ctx := context.Background()
	cache := e.cfg().Cache
	checks, gone, err := lock.VerifyCache(ctx, cache)
	if err != nil {
		return err
	}
	changed := map[string]bool{}
	read := map[string]string{} // path → the sha256 of its bytes
	for _, ch := range checks {
		read[ch.Path] = ch.Now
		if !ch.Changed() {
			continue
		}
		changed[ch.Path] = true
		how := "its stat did not change, so runs trusted the old hash"
		if !ch.Trusted {
			how = "its stat did not change, but it was hashed too soon after its last change to be trusted"
		}
		if len(ch.Stat) > 0 {
			how = "changed in its stat: " + strings.Join(ch.Stat, ", ")
		}
		fmt.Fprintf(e.stdout, "%s: sha256 %.12s, hashed before as %.12s (%s)\n", ch.Path, ch.Now, ch.Was, how)
	}
	items, err := e.buildCache().List(ctx)
	if err != nil {
		return err
	}
	rctx, _ := lock.WithHashReport(ctx, true)
	h := &lock.Hasher{Cache: cache}
	builds, files := 0, 0
	for _, it := range items {
		if it.Entry == nil {
			continue
		}
		builds++
		for _, name := range slices.Sorted(maps.Keys(it.Entry.SHA256)) {
			want, path := it.Entry.SHA256[name], it.Entry.Bin(name)
			files++
			got, ok := read[path]
			if !ok {
				got = "missing"
				if sums, err := h.Hash(rctx, []string{path}); err == nil {
					got = sums[0].SHA256
				}
			}
			if got != want {
				changed[path] = true
				fmt.Fprintf(e.stdout, "%s: sha256 %.12s, build %.12s made %.12s\n", path, got, it.Key, want)
			}
		}
	}
	fmt.Fprintf(e.stderr, "rigor: read %d %s of the stat cache and %d %s of %d %s again\n",
		len(checks), plural(len(checks), "file", "files"), files, plural(files, "file", "files"), builds, plural(builds, "build", "builds"))
	if gone > 0 {
		fmt.Fprintf(e.stderr, "rigor: dropped %d stat cache %s of files that are gone\n", gone, plural(gone, "entry", "entries"))
	}
	if n := len(changed); n > 0 {
		return withHint(fmt.Errorf("%d %s changed since %s hashed", n, plural(n, "file", "files"), plural(n, "it was", "they were")),
			"a run refuses a model file that differs from the lock and a program that differs from its build: restore the file, 'rigor pull' the model, or 'rigor build --rebuild' the engine")
	}
	fmt.Fprintf(e.stderr, "rigor: every file has the bytes it was hashed with\n")
	return nil
}

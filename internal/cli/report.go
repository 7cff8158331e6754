package cli

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	reportsite "github.com/rigorbench/rigor/internal/report"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/suggest"
)

type reportCmd struct {
	Patterns []string `arg:"" optional:"" name:"pattern" help:"Experiment ids, directories of experiments, or globs ('example/smoke*'); every recorded experiment when omitted."`
	Output   string   `short:"o" required:"" placeholder:"DIR" help:"Directory to write the site into (created, or replaced when it holds an earlier report)."`
	Title    string   `help:"Title of the index page." default:"rigor report"`
}

func (reportCmd) Help() string {
	return `Writes a static HTML report of the recorded runs into DIR: an index of the
experiments (last run, status, the headline metric with its 95% interval,
drift markers), a page per experiment (each metric over time with interval
bars, dashed lines where the lock, rig or spec drifted, failed runs
crossed, and by engine commit when there are several), a page per sweep (each metric against each swept value, one line
per combination of the other swept values) and a page comparing the latest
run of each point with the previous one (the configuration diff beside the
metric tables, and the samples of both sides).

Every page is a single file with its plots inline as SVG: no script, no
font or anything else fetched, so the report opens from a file, a zip or a
CI artifact with no network and no server. Each plot has a title and its
values in a table beside it. DIR must be new, empty or hold an earlier
report: the next report replaces and removes only the files listed in the
earlier one's manifest (DIR/.rigor-report), so notes added beside it stay,
and a file the earlier report did not write is never overwritten.

Examples:
  rigor report -o site
  rigor report example -o site
  rigor report 'example/smoke*' -o site --title 'smoke runs'`
}

func (c *reportCmd) Run(e *env) error {
	store, err := e.openStore()
	if err != nil {
		return err
	}
	if len(c.Patterns) == 0 {
		return c.runAll(e, store)
	}
	runs, warnings, err := loadMatching(store, c.Patterns)
	if err != nil {
		return withHint(err, "patterns are experiment ids, directories or globs such as 'example/smoke*'")
	}
	e.warn(warnings)
	selected, missing, err := reportsite.Match(runs, c.Patterns)
	if err != nil {
		return withHint(err, "patterns are experiment ids, directories or globs such as 'example/smoke*'")
	}
	if len(runs) == 0 || len(missing) > 0 {
		// Only now is the whole store's index read: for the ids to
		// suggest, or to say it holds no run at all.
		sums, _, err := store.Summaries(results.Filter{})
		if err != nil {
			return err
		}
		if len(sums) == 0 {
			return withHint(fmt.Errorf("no recorded runs in %s/", results.Dir), "'rigor run ID' records a run; 'rigor import FILE' imports results kept elsewhere")
		}
		if len(missing) == 0 {
			missing = c.Patterns
		}
		ids := make([]string, 0, len(sums))
		for _, x := range sums {
			ids = append(ids, x.Experiment)
		}
		return noRecordedMatch(missing, ids)
	}
	site, err := reportsite.Build(selected, reportsite.Options{Title: c.Title, Version: Version, CommitOrder: bisectOrders(store.Dir)})
	if err != nil {
		return err
	}
	return c.write(e, site)
}

// runAll reports every recorded experiment, incrementally: the index says
// which records each experiment has and their stats, and an experiment
// whose records are those the earlier report in the same directory was
// built from (by this very rigor binary) keeps its pages; only the others
// are built, a few experiments at a time, from the index's summaries of
// their runs (a record is read only where a page needs it whole), and
// their pages written as they are drawn (issue 30).
func (c *reportCmd) runAll(e *env, store *results.Store) error {
	tuneGC()
	sums, warnings, err := store.Summaries(results.Filter{})
	if err != nil {
		return err
	}
	said := map[string]bool{}
	dedupErrors(said, warnings)
	e.warn(warnings)
	if len(sums) == 0 {
		return withHint(fmt.Errorf("no recorded runs in %s/", results.Dir), "'rigor run ID' records a run; 'rigor import FILE' imports results kept elsewhere")
	}
	var lw loadWarnings
	groups, err := reportGroups(store, sums, &lw)
	if err != nil {
		return err
	}
	sums = nil
	format := reportFormat()
	orders := bisectOrders(store.Dir)
	for i := range groups {
		// A bisect's commit order draws the experiment's view over commits.
		if o := orders[groups[i].ID]; len(o) > 0 && groups[i].Key != "" {
			groups[i].Key += " " + strings.Join(o, ",")
		}
	}
	site, err := reportsite.WriteGroups(c.Output, groups, reportsite.ReadCache(c.Output, format), reportsite.Options{Title: c.Title, Version: Version, Format: format, CommitOrder: orders})
	e.warn(dedupErrors(said, lw.errs))
	if err != nil {
		return writeError(err)
	}
	c.said(e, site)
	return nil
}

// loadWarnings gathers the warnings of the records the groups' pages
// read, from the goroutines that draw them.
type loadWarnings struct {
	mu   sync.Mutex
	errs []error
}

func (w *loadWarnings) add(errs []error) {
	w.mu.Lock()
	w.errs = append(w.errs, errs...)
	w.mu.Unlock()
}

// reportGroups turns the index's listing of every run into the report's
// experiments: each one's directories, cache key and run count, with the
// functions that list its runs' summaries and read the records its pages
// need when it is drawn.
func reportGroups(store *results.Store, sums []*results.Summary, lw *loadWarnings) ([]reportsite.Group, error) {
	type exp struct {
		dirs  []string
		stats []string
		runs  int
		sums  []*results.Summary
		// latest are the record files of the latest run of each point,
		// what the other experiments' speed-vs-quality views may draw:
		// the only part of the listing kept while the pages are drawn.
		latest []string
	}
	byExp := map[string]*exp{}
	// A speed-vs-quality view draws the experiments of its package
	// measured against the same baseline (vet keeps a baseline in its
	// package): their latest ok runs are its peers, their stats its
	// PeersKey.
	byPkg := map[string][]string{}
	for _, x := range sums {
		g := byExp[x.Experiment]
		if g == nil {
			g = &exp{}
			byExp[x.Experiment] = g
		}
		rel, err := filepath.Rel(store.Dir, filepath.Dir(x.Path))
		if err != nil {
			return nil, err
		}
		if d := filepath.ToSlash(rel); !slices.Contains(g.dirs, d) {
			g.dirs = append(g.dirs, d)
		}
		g.stats = append(g.stats, x.Path+" "+x.StatKey())
		g.runs++
		g.sums = append(g.sums, x)
		byPkg[path.Dir(x.Experiment)] = append(byPkg[path.Dir(x.Experiment)], x.Path+" "+x.StatKey())
	}
	pkgKeys := map[string]string{}
	for pkg, stats := range byPkg {
		pkgKeys[pkg] = groupKey(stats)
	}
	load := func(x *results.Summary) (*results.Run, error) { return results.Load(x.Path) }
	groups := make([]reportsite.Group, 0, len(byExp))
	for id, g := range byExp {
		for _, x := range results.LatestSummaries(g.sums) {
			g.latest = append(g.latest, x.Path)
		}
		key := groupKey(g.stats)
		// The summaries of a directory share one allocation: keeping one
		// would keep them all.
		g.sums, g.stats = nil, nil
		groups = append(groups, reportsite.Group{ID: id, Key: key, Runs: g.runs, Load: load,
			Summaries: func() ([]*results.Summary, error) {
				all, warnings, err := store.DetailsIn(g.dirs)
				if err != nil {
					return nil, err
				}
				lw.add(warnings)
				out := all[:0]
				for _, x := range all {
					if x.Experiment == id {
						out = append(out, x)
					}
				}
				return out, nil
			},
			PeersKey: pkgKeys[path.Dir(id)], Peers: func() ([]*results.Run, error) {
				var paths []string
				for other, o := range byExp {
					if other != id && path.Dir(other) == path.Dir(id) {
						paths = append(paths, o.latest...)
					}
				}
				runs, warnings := store.LoadFiles(paths)
				lw.add(warnings)
				return runs, nil
			}})
	}
	return groups, nil
}

// dedupErrors is the warnings of errs not in seen, which it adds them
// to: a record the first listing could not summarize is left out of every
// later listing too, and said once.
func dedupErrors(seen map[string]bool, errs []error) []error {
	key := func(err error) string {
		var le *results.LoadError
		if errors.As(err, &le) {
			return le.Path
		}
		return err.Error()
	}
	var out []error
	for _, err := range errs {
		if k := key(err); !seen[k] {
			seen[k] = true
			out = append(out, err)
		}
	}
	return out
}

// groupKey is an experiment's key for the report's cache: its record
// files and their stats, "" when one changed too recently to be told
// from a later change (always built then).
func groupKey(stats []string) string {
	slices.Sort(stats)
	h := sha256.New()
	for _, s := range stats {
		if strings.HasSuffix(s, " ") {
			return ""
		}
		h.Write([]byte(s + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// reportFormat names this rigor binary for the report's cache: its
// version and its executable's size and modification time, so that pages are never kept from a
// report of another build of rigor. "" (no cache) when the executable
// cannot be found.
func reportFormat() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	fi, err := os.Stat(exe)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s %d %d", Version, fi.Size(), fi.ModTime().UnixNano())
}

// write writes the site into -o and says what it holds.
func (c *reportCmd) write(e *env, site *reportsite.Site) error {
	if err := site.Write(c.Output); err != nil {
		return writeError(err)
	}
	c.said(e, site)
	return nil
}

// writeError hints at what to do about a report that could not be
// written.
func writeError(err error) error {
	var de *reportsite.DirError
	if errors.As(err, &de) {
		return withHint(err, "choose a new directory with -o, or remove this one")
	}
	var fe *reportsite.FileError
	if errors.As(err, &fe) {
		return withHint(err, fmt.Sprintf("move it out of %s, or choose a new directory with -o", fe.Dir))
	}
	return err
}

// said says what the report in -o holds.
func (c *reportCmd) said(e *env, site *reportsite.Site) {
	index := filepath.Join(c.Output, "index.html")
	fmt.Fprintf(e.stdout, "%s: %s (%d runs), %s, %s\n", index,
		count(site.Experiments, "experiment"), site.Runs, count(site.Sweeps, "sweep"), count(site.Diffs, "diff"))
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// loadMatching loads the runs a report of the patterns may draw: every
// run without patterns; with patterns, only the records in the directories
// under each pattern's literal part (the part before any glob character)
// that the pattern matches, so a report of one experiment reads that
// experiment and not the rest of the store. A malformed pattern is an
// error before anything is read.
func loadMatching(store *results.Store, patterns []string) ([]*results.Run, []error, error) {
	if len(patterns) == 0 {
		return store.List(results.Filter{})
	}
	for _, p := range patterns {
		if _, err := reportsite.MatchID(p, ""); err != nil {
			return nil, nil, err
		}
	}
	var dirs []string
	seen := map[string]bool{}
	for _, p := range patterns {
		root := patternRoot(p)
		if seen[root] {
			continue
		}
		seen[root] = true
		if root != "" && results.CheckExperimentID(root) != nil {
			continue // no directory of the store can have this name
		}
		under, err := store.DirsUnder(root, func(d string) bool { return mayHoldMatches(patterns, d) })
		if err != nil {
			return nil, nil, err
		}
		for _, d := range under {
			if slices.Contains(dirs, d) {
				continue
			}
			for _, q := range patterns {
				if ok, _ := reportsite.MatchID(q, d); ok {
					dirs = append(dirs, d)
					break
				}
			}
		}
	}
	return store.ListDirs(dirs)
}

// patternRoot is the directory under results/ below which every
// experiment a pattern matches lies: its path up to the last "/" before
// any glob character, or the whole pattern when it has none.
func patternRoot(p string) string {
	p = strings.TrimSuffix(p, "/")
	i := strings.IndexAny(p, `*?[\`)
	if i < 0 {
		return p
	}
	j := strings.LastIndexByte(p[:i], '/')
	if j < 0 {
		return ""
	}
	return p[:j]
}

// mayHoldMatches reports whether a directory below which an experiment
// may lie that one of the patterns matches: any directory under a pattern
// without glob characters (it selects everything below it), and for a
// glob a directory of fewer components than the glob's whose components
// each match the glob's (a glob's '*' does not cross a '/').
func mayHoldMatches(patterns []string, dir string) bool {
	dc := strings.Split(dir, "/")
	for _, p := range patterns {
		p = strings.TrimSuffix(p, "/")
		if !strings.ContainsAny(p, `*?[\`) {
			if dir == p || strings.HasPrefix(dir, p+"/") || strings.HasPrefix(p, dir+"/") {
				return true
			}
			continue
		}
		pc := strings.Split(p, "/")
		if len(dc) >= len(pc) {
			continue
		}
		ok := true
		for i, c := range dc {
			if m, err := path.Match(pc[i], c); err != nil || !m {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// noRecordedMatch says which patterns selected no recorded experiment,
// with the nearest recorded ids.
func noRecordedMatch(missing []string, experiments []string) error {
	var ids []string
	for _, x := range experiments {
		if !slices.Contains(ids, x) {
			ids = append(ids, x)
		}
	}
	q := make([]string, len(missing))
	for i, m := range missing {
		q[i] = fmt.Sprintf("%q", m)
	}
	err := fmt.Errorf("no recorded experiment matches %s", strings.Join(q, ", "))
	var hints []string
	for _, m := range missing {
		best, bestD := "", 4
		for _, id := range ids {
			if d := suggest.Distance(m, id); d < bestD {
				best, bestD = id, d
			}
		}
		if best != "" {
			hints = append(hints, "did you mean "+best+"?")
		}
	}
	hints = append(hints, "'rigor results' lists the recorded runs; patterns are experiment ids, directories or globs such as 'example/smoke*'")
	return withHint(err, hints...)
}

// checkPlotPath checks a --plot file name before any work is done.
func checkPlotPath(path string) error {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg", ".png":
		return nil
	}
	return withHint(fmt.Errorf("--plot %s: want a file name ending in .svg or .png", path),
		"SVG scales in a browser and a pull request; PNG pastes anywhere")
}

// writePlot writes a figure to path as SVG or PNG, by its extension,
// atomically: a reader never finds half a picture.
func writePlot(e *env, path string, f *reportsite.Figure) error {
	var buf bytes.Buffer
	var err error
	if strings.EqualFold(filepath.Ext(path), ".png") {
		err = f.WritePNG(&buf)
	} else {
		err = f.WriteSVG(&buf)
	}
	if err != nil {
		return fmt.Errorf("drawing %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	fmt.Fprintf(e.stderr, "rigor: plot written to %s\n", path)
	return nil
}

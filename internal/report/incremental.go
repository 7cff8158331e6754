package report

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/rigorbench/rigor/internal/results"
)

// Group is one experiment of an incremental report ([WriteGroups]).
type Group struct {
	ID string
	// Key changes whenever one of the experiment's records does (the
	// index's stats of its record files); "" when unknown: always built.
	Key string
	// Runs is how many runs it has.
	Runs int
	// Summaries lists its runs' summaries, each with its
	// [results.Detail] (the index's: [results.Store.Details]); called
	// only when its pages are built.
	Summaries func() ([]*results.Summary, error)
	// Load reads one run's whole record, for the few runs a page needs
	// whole (see [buildFromSummaries]).
	Load func(*results.Summary) (*results.Run, error)
	// Peers reads the runs of the other experiments its speed-vs-quality
	// view may draw (the latest ok run of each point of its package's
	// experiments is enough); called only when its pages are built and
	// its runs measured quality. nil: no peers.
	Peers func() ([]*results.Run, error)
	// PeersKey changes whenever one of the records Peers reads may have:
	// the pages of an experiment with a speed-vs-quality view are kept
	// only when it is the key they were built with.
	PeersKey string
}

// cacheName is the file in a report's directory that says, per
// experiment, what its pages and index row were built from. It is one of
// the report's files (in its manifest), replaced with the report.
const cacheName = ".rigor-report-cache.json"

type cacheFile struct {
	// Format is the rigor that built the pages ([Options.Format]): a
	// report by another rigor builds every page again.
	Format      string               `json:"format"`
	Experiments map[string]cachedExp `json:"experiments"`
}

type cachedExp struct {
	Key   string   `json:"key"`
	Row   indexRow `json:"row"`
	Pages []string `json:"pages"`
	// PeersKey is the group's PeersKey when its page has a
	// speed-vs-quality view, which draws other experiments' runs.
	PeersKey string `json:"peersKey,omitempty"`
	Quality  bool   `json:"quality,omitempty"`
}

// Cache is what an earlier report in a directory kept of each experiment
// whose pages are still there as it wrote them ([ReadCache]).
type Cache struct{ exps map[string]cachedExp }

// ReadCache reads the cache of the report in dir, written by the same
// format, keeping only the experiments whose pages the report's manifest
// lists and that are regular files. No cache (a new directory, another
// rigor, a damaged file) is an empty one: every page is built.
func ReadCache(dir, format string) *Cache {
	c := &Cache{exps: map[string]cachedExp{}}
	if format == "" {
		return c
	}
	listed, err := readManifest(dir)
	if err != nil || !slices.Contains(listed, cacheName) {
		return c
	}
	data, err := readNoFollow(filepath.Join(dir, cacheName))
	if err != nil {
		return c
	}
	var f cacheFile
	if json.Unmarshal(data, &f) != nil || f.Format != format {
		return c
	}
	inManifest := make(map[string]bool, len(listed))
	for _, p := range listed {
		inManifest[p] = true
	}
	for id, e := range f.Experiments {
		ok := e.Key != "" && len(e.Pages) > 0
		for _, p := range e.Pages {
			if !ok {
				break
			}
			fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p)))
			ok = inManifest[p] && err == nil && fi.Mode().IsRegular()
		}
		if ok {
			c.exps[id] = e
		}
	}
	return c
}

// WriteGroups builds the site of the groups and writes it into dir (see
// [Site.Write]), an experiment at a time: an experiment whose key is the
// one the cache holds keeps its pages and index row as the earlier report
// wrote them, and its runs are not read; the others are built a few at a
// time (as many as there are CPUs, with at most [drawBudget] runs between
// them, or one larger experiment alone) from their summaries, and each
// one's pages are written as soon as they are drawn, so that only the
// experiments being drawn are in memory, not the store's runs nor the
// site's pages. The index and the cache for the next report are written
// last. The site returned holds no pages, only the counts.
func WriteGroups(dir string, groups []Group, prev *Cache, opts Options) (*Site, error) {
	if len(groups) == 0 {
		return nil, ErrNoRuns
	}
	if prev == nil {
		prev = &Cache{}
	}
	opts.Title = cmp.Or(opts.Title, "rigor report")
	groups = slices.Clone(groups)
	slices.SortFunc(groups, func(a, b Group) int { return cmp.Compare(a.ID, b.ID) })

	out, todo, keep, candidates := planGroups(groups, prev)
	w, err := openSite(dir)
	if err != nil {
		return nil, err
	}
	defer w.abandon()
	if err := prepareSite(w, groups, todo, keep, candidates, opts); err != nil {
		return nil, err
	}
	buildGroups(w, groups, todo, out, opts)
	for i, b := range out {
		if b.err != nil {
			return nil, withGroup(groups[i].ID, b.err)
		}
	}
	return finishSite(w, groups, out, opts)
}

// builtGroup is what WriteGroups knows of one experiment: its pages
// (written or kept), its index row, and how many runs it drew.
type builtGroup struct {
	pages []string
	row   indexRow
	kept  bool
	runs  int
	err   error
}

// planGroups splits the groups into those whose pages the cache keeps
// (their rows and pages filled in out) and those to draw (todo), with
// the pages kept and the pages the drawn ones may write.
func planGroups(groups []Group, prev *Cache) (out []builtGroup, todo []int, keep, candidates []string) {
	out = make([]builtGroup, len(groups))
	for i, g := range groups {
		if e, ok := prev.exps[g.ID]; ok && g.Key != "" && e.Key == g.Key && (!e.Quality || (g.PeersKey != "" && e.PeersKey == g.PeersKey)) {
			out[i].row, out[i].kept, out[i].pages, out[i].runs = e.Row, true, e.Pages, g.Runs
			out[i].row.quality = e.Quality
			keep = append(keep, e.Pages...)
			continue
		}
		todo = append(todo, i)
		candidates = append(candidates, experimentPath(g.ID), sweepPath(g.ID), diffPath(g.ID))
	}
	return out, todo, keep, candidates
}

// prepareSite checks, before anything is written, what is certain to be
// written or kept: a report refused for a file it may not replace writes
// nothing. It then tells the writer which files the report owns.
func prepareSite(w *siteWriter, groups []Group, todo []int, keep, candidates []string, opts Options) error {
	for _, p := range keep {
		if err := w.checkKeep(p); err != nil {
			return err
		}
	}
	must := []string{"index.html"}
	if opts.Format != "" {
		must = append(must, cacheName)
	}
	for _, i := range todo {
		must = append(must, experimentPath(groups[i].ID))
	}
	for _, p := range must {
		if err := w.check(p); err != nil {
			return err
		}
	}
	w.expect(append(must, candidates...))
	for _, p := range keep {
		w.keep(p)
	}
	return nil
}

// drawBudget bounds the runs of the experiments drawn at once: each
// drawn experiment holds its runs' summaries, its history and the records
// its pages read, so a worker per CPU starts an experiment only while the
// runs of those being drawn stay within the budget, and an experiment of
// more runs is drawn alone. The report's memory is then bounded by its
// largest experiment, not by the store (issue 30).
var drawBudget = 2000

// buildGroups draws the groups of todo a few at a time (as many as there
// are CPUs, within drawBudget) and writes each one's pages as soon as
// they are drawn; the first error stops the others from starting.
func buildGroups(w *siteWriter, groups []Group, todo []int, out []builtGroup, opts Options) {
	var wg sync.WaitGroup
	next := make(chan int)
	var failed atomic.Bool
	budget := newRunBudget(drawBudget)
	for range min(runtime.GOMAXPROCS(0), len(todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if failed.Load() {
					continue
				}
				n := budget.acquire(groups[i].Runs)
				out[i].err = buildGroup(w, groups[i], &out[i], opts)
				budget.release(n)
				if out[i].err != nil {
					failed.Store(true)
				}
			}
		}()
	}
	for _, i := range todo {
		next <- i
	}
	close(next)
	wg.Wait()
}

// runBudget counts the runs of the experiments being drawn. Experiments
// start in the order they asked: one too large to start yet holds back
// those behind it, so that it waits only for those being drawn.
type runBudget struct {
	mu            sync.Mutex
	cond          *sync.Cond
	limit, used   int
	ticket, ahead int // the next ticket given, the ticket that may start
}

func newRunBudget(limit int) *runBudget {
	b := &runBudget{limit: limit}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// acquire waits until runs more fit in the budget, or nothing else is
// being drawn, and returns what release must give back.
func (b *runBudget) acquire(runs int) int {
	runs = max(runs, 1)
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.ticket
	b.ticket++
	for t != b.ahead || (b.used > 0 && b.used+runs > b.limit) {
		b.cond.Wait()
	}
	b.ahead++
	b.used += runs
	b.cond.Broadcast()
	return runs
}

func (b *runBudget) release(runs int) {
	b.mu.Lock()
	b.used -= runs
	b.mu.Unlock()
	b.cond.Broadcast()
}

// buildGroup draws one experiment from its summaries and writes its pages.
func buildGroup(w *siteWriter, g Group, b *builtGroup, opts Options) error {
	sums, err := g.Summaries()
	if err == nil && len(sums) == 0 {
		err = errors.New("no runs to report")
	}
	if err != nil {
		return err
	}
	b.runs = len(sums)
	pages, row, err := buildFromSummaries(g.ID, sums, g.Load, g.Peers, opts)
	if err != nil {
		return err
	}
	b.row = row
	for _, p := range pages {
		if err := w.put(p.Path, p.HTML); err != nil {
			return err
		}
		b.pages = append(b.pages, p.Path)
	}
	return nil
}

// finishSite writes the index and the cache for the next report, last,
// and returns the site's counts.
func finishSite(w *siteWriter, groups []Group, out []builtGroup, opts Options) (*Site, error) {
	site := &Site{}
	idx := indexPage{Title: opts.Title}
	cache := cacheFile{Format: opts.Format, Experiments: map[string]cachedExp{}}
	for i, b := range out {
		g := groups[i]
		site.Runs += b.runs
		idx.Rows = append(idx.Rows, b.row)
		site.Experiments++
		if b.kept {
			site.Kept++
		}
		if b.row.SweepHref != "" {
			site.Sweeps++
		}
		if b.row.DiffHref != "" {
			site.Diffs++
		}
		if g.Key != "" {
			e := cachedExp{Key: g.Key, Row: b.row, Pages: b.pages, Quality: b.row.quality}
			if e.Quality {
				e.PeersKey = g.PeersKey
			}
			cache.Experiments[g.ID] = e
		}
	}
	idx.Runs = site.Runs
	html, err := render("index.html", opts, idx.Title, "", &idx)
	if err != nil {
		return nil, err
	}
	if err := w.put("index.html", html); err != nil {
		return nil, err
	}
	if opts.Format != "" {
		data, err := json.Marshal(&cache)
		if err != nil {
			return nil, err
		}
		if err := w.put(cacheName, data); err != nil {
			return nil, err
		}
	}
	if err := w.finish(); err != nil {
		return nil, err
	}
	return site, nil
}

// withGroup names the experiment whose pages could not be built; an
// error writing them is returned as it is (its type tells the caller
// what to hint).
func withGroup(id string, err error) error {
	var de *DirError
	var fe *FileError
	if errors.As(err, &de) || errors.As(err, &fe) {
		return err
	}
	return fmt.Errorf("building the report of %s: %w", id, err)
}

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

	"github.com/rigorbench/rigor/internal/results"
)

// Group is one experiment of an incremental build ([BuildGroups]).
type Group struct {
	ID string
	// Key changes whenever one of the experiment's records does (the
	// index's stats of its record files); "" when unknown: always built.
	Key string
	// Runs is how many runs it has.
	Runs int
	// Load reads its runs; called only when its pages are built.
	Load func() ([]*results.Run, error)
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

// BuildGroups is [Build] by experiment: an experiment whose key is the one
// the cache holds keeps its pages and index row as the earlier report wrote
// them, and its runs are not read; the others are read and built a few at
// a time (as many as there are CPUs), so that only their runs are in
// memory at once, not the store's. The site holds the cache for the next
// report.
func BuildGroups(groups []Group, prev *Cache, opts Options) (*Site, error) {
	if len(groups) == 0 {
		return nil, ErrNoRuns
	}
	if prev == nil {
		prev = &Cache{}
	}
	opts.Title = cmp.Or(opts.Title, "rigor report")
	groups = slices.Clone(groups)
	slices.SortFunc(groups, func(a, b Group) int { return cmp.Compare(a.ID, b.ID) })

	type built struct {
		pages []Page
		row   indexRow
		kept  bool
		err   error
	}
	out := make([]built, len(groups))
	var todo []int
	for i, g := range groups {
		if e, ok := prev.exps[g.ID]; ok && g.Key != "" && e.Key == g.Key && (!e.Quality || (g.PeersKey != "" && e.PeersKey == g.PeersKey)) {
			out[i].row, out[i].kept = e.Row, true
			out[i].row.quality = e.Quality
			for _, p := range e.Pages {
				out[i].pages = append(out[i].pages, Page{Path: p, Keep: true})
			}
			continue
		}
		todo = append(todo, i)
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(runtime.GOMAXPROCS(0), len(todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				runs, err := groups[i].Load()
				if err == nil && len(runs) == 0 {
					err = errors.New("no runs to report")
				}
				if err != nil {
					out[i].err = err
					continue
				}
				var peers []*results.Run
				if groups[i].Peers != nil && len(measuredRuns(runs)) > 0 {
					if peers, err = groups[i].Peers(); err != nil {
						out[i].err = err
						continue
					}
				}
				out[i].pages, out[i].row, out[i].err = buildExperiment(groups[i].ID, runs, peers, opts)
			}
		}()
	}
	for _, i := range todo {
		next <- i
	}
	close(next)
	wg.Wait()

	site := &Site{}
	idx := indexPage{Title: opts.Title}
	cache := cacheFile{Format: opts.Format, Experiments: map[string]cachedExp{}}
	var pages []Page
	for i, b := range out {
		g := groups[i]
		if b.err != nil {
			return nil, fmt.Errorf("building the report of %s: %w", g.ID, b.err)
		}
		site.Runs += g.Runs
		idx.Rows = append(idx.Rows, b.row)
		pages = append(pages, b.pages...)
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
			e := cachedExp{Key: g.Key, Row: b.row, Quality: b.row.quality}
			if e.Quality {
				e.PeersKey = g.PeersKey
			}
			for _, p := range b.pages {
				e.Pages = append(e.Pages, p.Path)
			}
			cache.Experiments[g.ID] = e
		}
	}
	idx.Runs = site.Runs
	html, err := render("index.html", opts, idx.Title, "", &idx)
	if err != nil {
		return nil, err
	}
	site.Pages = append([]Page{{Path: "index.html", Title: idx.Title, HTML: html}}, pages...)
	if opts.Format != "" {
		data, err := json.Marshal(&cache)
		if err != nil {
			return nil, err
		}
		site.Pages = append(site.Pages, Page{Path: cacheName, HTML: data})
	}
	return site, nil
}

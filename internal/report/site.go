package report

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rigorbench/rigor/internal/compare"
	"github.com/rigorbench/rigor/internal/report/text"
	"github.com/rigorbench/rigor/internal/results"
)

// Options tune [Build].
type Options struct {
	// Title heads the index; "" means "rigor report".
	Title string
	// Version is the rigor version named in each page's footer.
	Version string
	// CommitOrder gives, per experiment id, its engine's commits in
	// history order, oldest first (a bisect's first-parent walk): the
	// view over commits then draws the figure along that axis instead of
	// the order the commits were first run in.
	CommitOrder map[string][]string
	// Format names the rigor that builds the pages, for [WriteGroups]'
	// cache: pages built by another Format are built again. "" keeps no
	// cache.
	Format string
}

// Page is one file of a site.
type Page struct {
	// Path is slash-separated and relative to the site's root:
	// "index.html", "experiments/qwen/base.html".
	Path  string
	Title string
	HTML  []byte
	// Keep is a page of an earlier report in the same directory, left as
	// it is ([WriteGroups]); HTML is nil.
	Keep bool
}

// Site is a built report: its pages, the index first.
type Site struct {
	Pages []Page
	// Experiments, Sweeps and Diffs count the pages of each kind.
	Experiments, Sweeps, Diffs int
	// Runs counts the records the site was built from.
	Runs int
	// Kept counts the experiments whose pages an earlier report wrote
	// and this one kept as they were ([WriteGroups]).
	Kept int
}

// maxMetrics is how many metrics an experiment or sweep page plots and
// tables; the others are named below the table.
const maxMetrics = 4

// confidence is the level of every interval in the report.
const confidence = 0.95

// ErrNoRuns is returned by [Build] when there is nothing to report.
var ErrNoRuns = errors.New("no runs to report")

// Build makes the site of the runs: an index, a page per experiment, a
// sweep page per swept experiment, and a diff page per experiment with
// two ok runs of a point. Experiments are built in parallel.
func Build(runs []*results.Run, opts Options) (*Site, error) {
	if len(runs) == 0 {
		return nil, ErrNoRuns
	}
	opts.Title = cmp.Or(opts.Title, "rigor report")
	byExp := map[string][]*results.Run{}
	var ids []string
	for _, r := range runs {
		if byExp[r.Experiment] == nil {
			ids = append(ids, r.Experiment)
		}
		byExp[r.Experiment] = append(byExp[r.Experiment], r)
	}
	slices.Sort(ids)
	// Each point's latest ok run: each experiment's speed-vs-quality view
	// draws those measured against its baseline.
	measured := results.LatestPerPoint(runs)

	type built struct {
		pages []Page
		row   indexRow
		err   error
	}
	out := make([]built, len(ids))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(runtime.GOMAXPROCS(0), len(ids)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i].pages, out[i].row, out[i].err = buildExperiment(ids[i], byExp[ids[i]], measured, opts)
			}
		}()
	}
	for i := range ids {
		next <- i
	}
	close(next)
	wg.Wait()

	site := &Site{Runs: len(runs)}
	idx := indexPage{Title: opts.Title, Runs: len(runs)}
	var pages []Page
	for i, b := range out {
		if b.err != nil {
			return nil, fmt.Errorf("building the report of %s: %w", ids[i], b.err)
		}
		idx.Rows = append(idx.Rows, b.row)
		pages = append(pages, b.pages...)
		site.Experiments++
		if b.row.SweepHref != "" {
			site.Sweeps++
		}
		if b.row.DiffHref != "" {
			site.Diffs++
		}
	}
	html, err := render("index.html", opts, idx.Title, "", &idx)
	if err != nil {
		return nil, err
	}
	site.Pages = append([]Page{{Path: "index.html", Title: idx.Title, HTML: html}}, pages...)
	return site, nil
}

// Page paths of an experiment.
func experimentPath(id string) string { return "experiments/" + id + ".html" }
func sweepPath(id string) string      { return "sweeps/" + id + ".html" }
func diffPath(id string) string       { return "diffs/" + id + ".html" }

// rel returns the link from the page at from to the page at to.
func rel(from, to string) string {
	depth := strings.Count(from, "/")
	return strings.Repeat("../", depth) + to
}

// buildExperiment makes the pages of one experiment and its index row
// from its runs in memory; peers are other experiments' runs (those that
// measured quality are enough), for its speed-vs-quality view.
func buildExperiment(id string, runs, peers []*results.Run, opts Options) ([]Page, indexRow, error) {
	sums := make([]*results.Summary, len(runs))
	full := make(map[*results.Summary]*results.Run, len(runs))
	for i, r := range runs {
		sums[i] = results.Summarize(r)
		full[sums[i]] = r
	}
	return buildFromSummaries(id, sums, func(x *results.Summary) (*results.Run, error) { return full[x], nil },
		func() ([]*results.Run, error) { return peers, nil }, opts)
}

// buildFromSummaries makes the pages of one experiment and its index row
// from its runs' summaries, each with its [results.Detail] (the index's):
// they hold what the pages show of every run. A run's whole record is
// read, through load, only where a page needs it: the runs drift is shown
// between, those of the two invocations the diff page compares, and the
// latest run of each point (whether it measured quality is not in the
// index). peers, when not nil, reads the other experiments' runs its
// speed-vs-quality view may draw; it is called only when one of those
// latest runs measured quality.
func buildFromSummaries(id string, sums []*results.Summary, load func(*results.Summary) (*results.Run, error), peers func() ([]*results.Run, error), opts Options) ([]Page, indexRow, error) {
	x, err := newExpBuild(sums, load)
	if err != nil {
		return nil, indexRow{}, err
	}
	row := indexRow{ID: id, Href: experimentPath(id), Runs: len(x.runs)}
	last := x.runs[len(x.runs)-1]
	row.Last, row.LastStatus = day(last.Start), last.Status
	var pages []Page

	diff, page, err := x.diffPage(id, opts)
	if err != nil {
		return nil, row, err
	}
	if page != nil {
		pages = append(pages, *page)
		row.DiffHref = page.Path
	}
	if x.swept() {
		page, points, err := x.sweepPage(id, opts)
		if err != nil {
			return nil, row, err
		}
		pages = append(pages, *page)
		row.SweepHref, row.Points = page.Path, points
	}
	page, latest, err := x.experimentPage(id, &row, peers, opts)
	if err != nil {
		return nil, row, err
	}
	pages = append([]Page{*page}, pages...)
	x.fillRow(&row, latest, diff)
	return pages, row, nil
}

// expBuild is one experiment being drawn from its summaries: its runs in
// the order they started, as summaries and as runs made from them, its
// history, and the whole records read so far (each at most once).
type expBuild struct {
	sums   []*results.Summary
	runs   []*results.Run
	sumOf  map[*results.Run]*results.Summary
	byID   map[string]*results.Run
	h      *compare.History
	load   func(*results.Summary) (*results.Run, error)
	loaded map[*results.Summary]*results.Run
}

func newExpBuild(sums []*results.Summary, load func(*results.Summary) (*results.Run, error)) (*expBuild, error) {
	sums = slices.Clone(sums)
	slices.SortStableFunc(sums, func(a, b *results.Summary) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	x := &expBuild{sums: sums, runs: make([]*results.Run, len(sums)),
		sumOf: make(map[*results.Run]*results.Summary, len(sums)), byID: make(map[string]*results.Run, len(sums)),
		load: load, loaded: map[*results.Summary]*results.Run{}}
	for i, s := range sums {
		x.runs[i] = summaryRun(s)
		x.sumOf[x.runs[i]] = s
		x.byID[s.ID] = x.runs[i]
	}
	h, err := compare.LogSummaries(sums, load)
	if err != nil {
		return nil, err
	}
	x.h = h
	return x, nil
}

// loadOnce reads a run whole, at most once per experiment.
func (x *expBuild) loadOnce(s *results.Summary) (*results.Run, error) {
	if r, ok := x.loaded[s]; ok {
		return r, nil
	}
	r, err := x.load(s)
	if err == nil {
		x.loaded[s] = r
	}
	return r, err
}

func (x *expBuild) swept() bool {
	for _, r := range x.runs {
		if len(r.Swept) > 0 {
			return true
		}
	}
	return false
}

// diffPage is the diff of the latest against the previous ok invocation
// of each point, and its page; nil without two invocations.
func (x *expBuild) diffPage(id string, opts Options) (*compare.Report, *Page, error) {
	pa, pb := previousAndLatestRuns(x.runs)
	if len(pb) == 0 {
		return nil, nil, nil
	}
	// As many rounds of an invocation as `rigor diff` compares, and the
	// same warning, among the comparison's, when there are more.
	pa, sampledA := x.boundRounds("previous", pa)
	pb, sampledB := x.boundRounds("latest", pb)
	a, err := loadRuns(pa, x.sumOf, x.loadOnce)
	if err != nil {
		return nil, nil, err
	}
	b, err := loadRuns(pb, x.sumOf, x.loadOnce)
	if err != nil {
		return nil, nil, err
	}
	hist := make([]results.Run, len(x.sums))
	for i, s := range x.sums {
		hist[i] = compare.HistoryRun(s)
	}
	sa, _ := results.SplitSampled(sampledA)
	sb, _ := results.SplitSampled(sampledB)
	rep, err := compare.Compare(compare.Side{Label: "previous", Runs: a}, compare.Side{Label: "latest", Runs: b}, compare.Options{History: hist, SampledA: sa, SampledB: sb})
	if err != nil {
		return nil, nil, err
	}
	p := diffPath(id)
	page, err := newDiffPage(rep, "Latest against previous invocation: "+id, p, id)
	if err != nil {
		return nil, nil, err
	}
	html, err := render("diff.html", opts, page.Title, rel(p, "index.html"), page)
	if err != nil {
		return nil, nil, err
	}
	return rep, &Page{Path: p, Title: page.Title, HTML: html}, nil
}

// boundRounds keeps, of the runs of one side of the diff page (each
// point's ok runs of one invocation, in start order), the rounds `rigor
// diff` compares of an invocation of more than [results.MaxRounds]:
// [results.SampleRounds] of all the invocation's rounds at the point, the
// side's latest run included; the warnings say which were sampled.
func (x *expBuild) boundRounds(which string, side []*results.Run) ([]*results.Run, []error) {
	type key struct{ point, inv string }
	chosen := map[key]*results.Run{}
	for _, r := range side {
		if r.Invocation != "" {
			chosen[key{r.Point, r.Invocation}] = r // the last is the latest
		}
	}
	rounds := map[key]int{}
	for _, r := range x.runs {
		if _, ok := chosen[key{r.Point, r.Invocation}]; ok {
			rounds[key{r.Point, r.Invocation}]++
		}
	}
	var warnings []error
	keep := map[*results.Run]bool{}
	sampled := map[key]bool{}
	for _, r := range side {
		k := key{r.Point, r.Invocation}
		c, ok := chosen[k]
		if !ok || c != r || rounds[k] <= results.MaxRounds {
			continue
		}
		var others []*results.Summary
		run := map[*results.Summary]*results.Run{}
		for _, o := range x.runs {
			if o != c && o.Point == c.Point && o.Invocation == c.Invocation {
				others = append(others, x.sumOf[o])
				run[x.sumOf[o]] = o
			}
		}
		kept, w := results.SampleRounds(which, x.sumOf[c], others)
		if w == nil {
			continue
		}
		warnings = append(warnings, w)
		sampled[k], keep[c] = true, true
		for _, s := range kept {
			keep[run[s]] = true
		}
	}
	if len(warnings) == 0 {
		return side, nil
	}
	out := make([]*results.Run, 0, len(side))
	for _, r := range side {
		if !sampled[key{r.Point, r.Invocation}] || keep[r] {
			out = append(out, r)
		}
	}
	return out, warnings
}

// sweepPage is the page of a sweep's points, and how many it has.
func (x *expBuild) sweepPage(id string, opts Options) (*Page, int, error) {
	p := sweepPath(id)
	page, err := newSweepPage(id, x.runs, x.h, p)
	if err != nil {
		return nil, 0, err
	}
	html, err := render("sweep.html", opts, page.Title, rel(p, "index.html"), page)
	if err != nil {
		return nil, 0, err
	}
	return &Page{Path: p, Title: page.Title, HTML: html}, page.Points, nil
}

// experimentPage is the experiment's own page, with its speed-vs-quality
// view when its latest runs measured quality; it returns the latest run
// of each point too, for the index row.
func (x *expBuild) experimentPage(id string, row *indexRow, peers func() ([]*results.Run, error), opts Options) (*Page, []*results.Run, error) {
	ep, err := newExperimentPage(id, x.h, x.byID, experimentPath(id), opts.CommitOrder[id])
	if err != nil {
		return nil, nil, err
	}
	if row.SweepHref != "" {
		ep.SweepHref = rel(ep.Path, row.SweepHref)
	}
	if row.DiffHref != "" {
		ep.DiffHref = rel(ep.Path, row.DiffHref)
	}
	latest := results.LatestPerPoint(x.runs)
	latestFull := make([]*results.Run, len(latest))
	for i, r := range latest {
		if latestFull[i], err = x.loadOnce(x.sumOf[r]); err == nil && latestFull[i] == nil {
			err = errors.New("not found")
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading run %s for the speed-vs-quality view: %w", r.ID, err)
		}
	}
	var peerRuns []*results.Run
	if peers != nil && len(measuredRuns(latestFull)) > 0 {
		if peerRuns, err = peers(); err != nil {
			return nil, nil, err
		}
	}
	if ep.Quality, err = newQualityView(id, latestFull, peerRuns); err != nil {
		return nil, nil, err
	}
	row.quality = ep.Quality != nil
	html, err := render("experiment.html", opts, ep.Title, rel(ep.Path, "index.html"), ep)
	if err != nil {
		return nil, nil, err
	}
	return &Page{Path: ep.Path, Title: ep.Title, HTML: html}, latest, nil
}

// fillRow completes the index row: the headline metric of the latest ok
// run (of the best point, for a sweep), the drift markers, the verdicts
// of the latest diff.
func (x *expBuild) fillRow(row *indexRow, latest []*results.Run, diff *compare.Report) {
	for _, e := range x.h.Entries {
		if len(e.Drift) > 0 {
			row.Drifts++
			row.LastDrift = day(e.Start)
			row.DriftTitle = driftText(e.Drift, 4)
		}
		if e.Status != results.StatusOK {
			row.Failed++
		}
	}
	if len(x.h.Metrics) > 0 {
		row.Headline = headline(x.h.Metrics[0], latest, x.h)
	}
	if diff == nil {
		return
	}
	for _, t := range diff.Tables {
		for _, r := range t.Rows {
			switch r.Verdict {
			case compare.Better:
				row.Better++
			case compare.Worse:
				row.Worse++
			}
		}
	}
}

// previousAndLatest returns, for each point with ok runs from two
// invocations or more, the ok runs of its previous invocation (side A)
// and of its latest (side B): invocations are compared, never two rounds
// of one invocation. A run without an invocation is one of its own.
func previousAndLatest(runs []*results.Run) (a, b []results.Run) {
	pa, pb := previousAndLatestRuns(runs)
	for _, r := range pa {
		a = append(a, *r)
	}
	for _, r := range pb {
		b = append(b, *r)
	}
	return a, b
}

// previousAndLatestRuns is [previousAndLatest] without copying the runs.
func previousAndLatestRuns(runs []*results.Run) (a, b []*results.Run) {
	type inv struct {
		id   string
		runs []*results.Run
	}
	byPoint := map[string][]*inv{}
	var order []string
	for _, r := range runs { // in start order
		if r.Status != results.StatusOK {
			continue
		}
		id := r.Invocation
		if id == "" {
			id = "run:" + r.ID
		}
		if byPoint[r.Point] == nil {
			order = append(order, r.Point)
		}
		invs := byPoint[r.Point]
		var cur *inv
		for _, x := range invs {
			if x.id == id {
				cur = x
			}
		}
		if cur == nil {
			cur = &inv{id: id}
			byPoint[r.Point] = append(invs, cur)
		}
		cur.runs = append(cur.runs, r)
	}
	for _, p := range order {
		invs := byPoint[p]
		if len(invs) < 2 {
			continue
		}
		a = append(a, invs[len(invs)-2].runs...)
		b = append(b, invs[len(invs)-1].runs...)
	}
	return a, b
}

// loadRuns reads the whole records of runs made by [summaryRun].
func loadRuns(runs []*results.Run, sumOf map[*results.Run]*results.Summary, load func(*results.Summary) (*results.Run, error)) ([]results.Run, error) {
	out := make([]results.Run, len(runs))
	for i, r := range runs {
		full, err := load(sumOf[r])
		if err == nil && full == nil {
			err = errors.New("not found")
		}
		if err != nil {
			return nil, fmt.Errorf("reading run %s for the diff page: %w", r.ID, err)
		}
		out[i] = *full
	}
	return out, nil
}

// summaryRun is the part of a run its summary and detail hold, which is
// what the experiment, sweep and index pages show of it: identity,
// status, invocation, swept values, and each metric's name, unit,
// direction, samples (its mean alone when it has fewer than two).
func summaryRun(x *results.Summary) *results.Run {
	r := &results.Run{ID: x.ID, Experiment: x.Experiment, Point: x.Point, Start: x.Start, Status: x.Status, Error: x.Error,
		Invocation: x.Invocation, Engine: results.Engine{Commit: x.Engine.Commit, Ref: x.Engine.Ref, Version: x.Engine.Version}}
	d := x.Detail
	if d == nil {
		d = &results.Detail{}
	}
	r.End, r.Round = d.End, d.Round
	if d.Swept != "" {
		json.Unmarshal([]byte(d.Swept), &r.Swept)
	}
	r.Metrics = make([]results.Metric, len(x.Metrics))
	for j, m := range x.Metrics {
		r.Metrics[j] = results.Metric{Name: m.Name, Test: m.Test, Unit: m.Unit, Value: m.Mean}
		if j < len(d.Directions) {
			r.Metrics[j].Direction = d.Directions[j]
		}
		if j < len(d.Samples) && len(d.Samples[j]) > 1 {
			r.Metrics[j].Samples = d.Samples[j]
		}
	}
	return r
}

// runStat is one metric of one run: mean and interval of its samples.
type runStat struct {
	Sum  compare.Summary
	Unit string
	Dir  string
}

// histStats holds the per-run statistics [compare.Log] computed (the
// mean and its 95% interval of each metric of each run), by run id and
// metric key, so that the pages show the figures `rigor log` shows.
type histStats map[string]map[string]compare.MetricStat

func newHistStats(h *compare.History) histStats {
	hs := make(histStats, len(h.Entries))
	for _, e := range h.Entries {
		m := make(map[string]compare.MetricStat, len(e.Metrics))
		for _, s := range e.Metrics {
			m[s.Key] = s
		}
		hs[e.ID] = m
	}
	return hs
}

// of returns the statistics of the metric m of the run id.
func (hs histStats) of(id string, m results.Metric) runStat {
	st := runStat{Unit: m.Unit, Dir: compare.MetricDirection(m.Name, m.Direction)}
	ms, ok := hs[id][m.Key()]
	if !ok {
		nan := math.NaN()
		st.Sum = compare.Summary{Center: nan, Low: nan, High: nan}
		return st
	}
	st.Sum = compare.Summary{N: ms.N, Center: ms.Mean, Low: ms.Low, High: ms.High}
	if !math.IsNaN(ms.Low) && !math.IsNaN(ms.High) {
		st.Sum.Confidence = confidence
	}
	return st
}

func metricOf(r *results.Run, key string) (results.Metric, bool) {
	for _, m := range r.Metrics {
		if m.Key() == key {
			return m, true
		}
	}
	return results.Metric{}, false
}

// headline describes the key metric of the latest ok runs: the run's for
// one point, the best point's for a sweep.
func headline(key string, latest []*results.Run, h *compare.History) *headlineCell {
	hs := newHistStats(h)
	label := map[string]string{}
	for _, e := range h.Entries {
		label[e.ID] = e.Point
	}
	var best *headlineCell
	for _, r := range latest {
		if r.Status != results.StatusOK {
			continue
		}
		m, ok := metricOf(r, key)
		if !ok {
			continue
		}
		st := hs.of(r.ID, m)
		c := &headlineCell{Metric: key, Value: compare.FormatNum(st.Sum.Center),
			Unit: m.Unit, N: st.Sum.N, Point: label[r.ID], center: st.Sum.Center, Date: day(r.Start)}
		if st.Sum.N > 1 {
			c.CI = text.FormatCI(st.Sum, confidence)
		}
		if best == nil || (st.Dir == results.LowerIsBetter && c.center < best.center) ||
			(st.Dir != results.LowerIsBetter && c.center > best.center) {
			best = c
		}
	}
	if best != nil && len(latest) > 1 {
		best.Best = true
	}
	return best
}

func day(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02")
}

func minute(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04")
}

// driftText lists changes as "path: old → new", at most n of them.
func driftText(cs []compare.Change, n int) string {
	var parts []string
	for i, c := range cs {
		if i == n {
			parts = append(parts, fmt.Sprintf("and %d more", len(cs)-n))
			break
		}
		parts = append(parts, c.Path+": "+compare.ShowValue(c.Old)+" → "+compare.ShowValue(c.New))
	}
	return strings.Join(parts, "; ")
}

// fmtStat formats a mean with its interval: "16.30 ± 1.2%".
func fmtStat(s compare.Summary) string {
	if s.N == 0 || math.IsNaN(s.Center) {
		return "–"
	}
	v := compare.FormatNum(s.Center)
	if ci := text.FormatCI(s, confidence); ci != "" && s.N > 1 {
		v += " " + ci
	}
	return v
}

// DirError says why a report cannot be written into a directory.
type DirError struct {
	Dir, Reason string
}

func (e *DirError) Error() string { return fmt.Sprintf("writing report: %s %s", e.Dir, e.Reason) }

// Match selects the runs of the experiments the patterns name: an
// experiment id, a directory of experiments ("qwen" for qwen/…), or a glob
// over experiment ids ('qwen/*'). No pattern selects every run. Patterns
// that select nothing are returned in missing.
func Match(runs []*results.Run, patterns []string) (selected []*results.Run, missing []string, err error) {
	if len(patterns) == 0 {
		return runs, nil, nil
	}
	hit := make([]bool, len(patterns))
	cache := map[string]bool{}
	for _, r := range runs {
		keep, seen := cache[r.Experiment]
		if !seen {
			for i, p := range patterns {
				ok, err := matchID(p, r.Experiment)
				if err != nil {
					return nil, nil, err
				}
				if ok {
					keep, hit[i] = true, true
				}
			}
			cache[r.Experiment] = keep
		}
		if keep {
			selected = append(selected, r)
		}
	}
	for i, p := range patterns {
		if !hit[i] {
			missing = append(missing, p)
		}
	}
	return selected, missing, nil
}

// MatchID reports whether a report pattern (an experiment id, a directory
// of experiments or a glob) selects the experiment id; a malformed
// pattern is an error.
func MatchID(pattern, id string) (bool, error) { return matchID(pattern, id) }

func matchID(pattern, id string) (bool, error) {
	p := strings.TrimSuffix(pattern, "/")
	if p == id || strings.HasPrefix(id, p+"/") {
		return true, nil
	}
	ok, err := path.Match(p, id)
	if err != nil {
		return false, fmt.Errorf("pattern %q: %w", pattern, err)
	}
	return ok, nil
}

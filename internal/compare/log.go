package compare

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rigorbench/rigor/internal/compare/stats"
	"github.com/rigorbench/rigor/internal/metric"
	"github.com/rigorbench/rigor/internal/results"
)

// History is an experiment's runs over time, the substance of `rigor log`.
type History struct {
	// Experiments lists the experiment ids seen, in order of first run.
	Experiments []string
	// Metrics lists the metric keys seen, tokSOut first, then tokSPrompt,
	// then the others in order of appearance.
	Metrics []string
	// Entries are the runs in the order they started, oldest first (runs
	// that share a start time, as an imported sweep's do, by point).
	Entries []Entry
	// Chart is the tokSOut series over time, one series per point; nil
	// when no run has tokSOut.
	Chart *Chart
}

// Entry is one run in a [History].
type Entry struct {
	ID         string
	Experiment string
	Point      string // swept values ("ub=16"); "" without a sweep
	// Round is the run's round within its invocation (from 1) and Rounds
	// the invocation's last round seen; both 0 for a run of an invocation
	// of one round.
	Round, Rounds int
	Start, End    time.Time
	// Rig summarizes the machine: "4× Intel Arc Pro B70", else the CPU.
	Rig  string
	Host string
	// Commit is the engine commit, shortened to 7 digits; the requested
	// ref when no commit was resolved.
	Commit  string
	Status  string
	Error   string
	Metrics []MetricStat
	// Drift lists what changed since the previous run: the lock (engine,
	// patches, model files) against the previous run of any point, the rig
	// against the previous run on the same host, and the spec against the
	// previous run of the same point. A lock digest that changed with no
	// recorded fact to show for it appears as the path "lockDigest".
	Drift []Change
	// Busy says why the machine was busy while the run ran ("other
	// processes took 1.6 of 2 cores while the engine ran (load 3.1)"); ""
	// when it was not, or the record has no machine state.
	Busy string
}

// MetricStat is one metric of one run: the mean of its samples, the 95%
// confidence interval of the mean and the spread.
type MetricStat struct {
	Key    string
	Name   string
	Test   string
	Unit   string
	N      int
	Mean   float64
	Stddev float64 // NaN with fewer than two samples
	// Low and High bound the Student-t 95% interval of the mean; NaN with
	// fewer than two samples.
	Low, High float64
	Min       float64
	Max       float64
}

// Chart is one metric's per-run mean over time.
type Chart struct {
	Metric string
	Unit   string
	Series []Series
}

// Series is the chart of one point: one value per run of the point, oldest
// first, NaN where the run has no value for the metric (a failed run).
type Series struct {
	Point  string
	Values []float64
}

// Log builds the history of runs: ordered by start time, each with its
// rig, engine commit, status and metrics, and a drift marker where the lock,
// the rig or the spec changed between consecutive runs.
func Log(runs []results.Run) *History {
	sums := make([]*results.Summary, len(runs))
	full := make(map[*results.Summary]*results.Run, len(runs))
	for i := range runs {
		sums[i] = results.Summarize(&runs[i])
		full[sums[i]] = &runs[i]
	}
	h, _ := LogSummaries(sums, func(s *results.Summary) (*results.Run, error) { return full[s], nil })
	return h
}

// LogSummaries is [Log] over the runs' summaries, each with its
// [results.Detail] (from the index: [results.Store.Details]): a run's
// record is read, through load, only where a section of its
// configuration hashes differently from the run it is compared with, to
// say what changed.
func LogSummaries(sums []*results.Summary, load func(*results.Summary) (*results.Run, error)) (*History, error) {
	ptrs := slices.Clone(sums)
	slices.SortStableFunc(ptrs, func(a, b *results.Summary) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	swept := sweptCache{}
	sortRounds(ptrs, swept)
	h := &History{}
	rc := &runConfigs{load: load, cache: newConfigCache(), configs: map[*results.Summary]config{}}
	configOf := rc.of
	detail := func(s *results.Summary) *results.Detail {
		if s.Detail == nil {
			return &results.Detail{}
		}
		return s.Detail
	}
	prevHost := map[string]*results.Summary{}
	prevPoint := map[string]*results.Summary{}
	history := map[string][]*results.Summary{}
	// Label points with the same short names Compare uses.
	var pts []*point
	keyOf := make([]string, len(ptrs))
	byKey := map[string]*point{}
	for i, r := range ptrs {
		key, sw := swept.of(detail(r).Swept)
		keyOf[i] = r.Experiment + "\x00" + key
		if byKey[keyOf[i]] == nil {
			p := &point{key: key, swept: sw}
			byKey[keyOf[i]] = p
			pts = append(pts, p)
		}
	}
	short := shortNames(pts)
	byLabel := map[string]*point{}
	for _, p := range pts {
		p.label = pointLabel(p.swept, short)
		byLabel[p.label] = p
	}

	rounds := map[string]int{}
	for _, r := range ptrs {
		if r.Invocation != "" {
			rounds[r.Invocation] = max(rounds[r.Invocation], detail(r).Round)
		}
	}

	seenMetric := map[string]bool{}
	var metricOrder []string
	for i, r := range ptrs {
		d := detail(r)
		if r.Experiment != "" && !slices.Contains(h.Experiments, r.Experiment) {
			h.Experiments = append(h.Experiments, r.Experiment)
		}
		e := Entry{ID: r.ID, Experiment: r.Experiment, Point: byKey[keyOf[i]].label,
			Start: r.Start, End: d.End, Rig: d.Rig, Host: d.Host, Commit: shortCommitRef(r.Engine.Commit, r.Engine.Ref, r.Engine.Version),
			Status: r.Status, Error: r.Error, Busy: d.Busy}
		if d.Round > 0 && rounds[r.Invocation] > 1 {
			// Every run is round 1 of its invocation; only an
			// invocation of several rounds says so.
			e.Round, e.Rounds = d.Round, rounds[r.Invocation]
		}
		e.Metrics = metricStats(r, d)
		for _, m := range e.Metrics {
			if !seenMetric[m.Key] {
				seenMetric[m.Key] = true
				metricOrder = append(metricOrder, m.Key)
			}
		}

		// A section whose hash did not change did not change: only the
		// others are diffed, reading the two records. A run is compared
		// with the previous run of its own point: two points of a sweep
		// differ by design.
		key := keyOf[i]
		if p := prevPoint[key]; p != nil {
			if detail(p).Hashes.Lock != d.Hashes.Lock {
				e.Drift = append(e.Drift, rc.lockDrift(p, r, history[key])...)
			}
			if len(e.Drift) == 0 && detail(p).LockDigest != d.LockDigest {
				e.Drift = append(e.Drift, Change{Section: SectionLock, Path: "lockDigest",
					Old: rawString(detail(p).LockDigest), New: rawString(d.LockDigest)})
			}
		}
		if p := prevHost[e.Host+"\x00"+key]; p != nil && detail(p).Hashes.Rig != d.Hashes.Rig {
			e.Drift = append(e.Drift, diffConfigs(configOf(p), configOf(r), onlySection(SectionRig))...)
		}
		if p := prevPoint[keyOf[i]]; p != nil && (detail(p).SpecDigest != d.SpecDigest || d.SpecDigest == "") && detail(p).Hashes.Spec != d.Hashes.Spec {
			e.Drift = append(e.Drift, diffConfigs(configOf(p), configOf(r), onlySection(SectionSpec))...)
		}
		if p := prevPoint[keyOf[i]]; p != nil && detail(p).Hashes.Env != d.Hashes.Env {
			// passEnv values come from the caller: the spec digest does
			// not see them change.
			e.Drift = append(e.Drift, diffConfigs(configOf(p), configOf(r), onlySection(SectionEnv))...)
		}
		prevHost[e.Host+"\x00"+key], prevPoint[key] = r, r
		history[key] = append(history[key], r)
		h.Entries = append(h.Entries, e)
	}
	if rc.err != nil {
		return nil, rc.err
	}

	h.Metrics = orderMetrics(metricOrder)

	h.Chart = tokSOutChart(h, byLabel)
	return h, nil
}

// runConfigs reads the configurations of summarized runs, each once, for
// the drift between them; the first run that cannot be read is err.
type runConfigs struct {
	load    func(*results.Summary) (*results.Run, error)
	cache   *configCache
	configs map[*results.Summary]config
	err     error
}

func (rc *runConfigs) of(s *results.Summary) config {
	if c, ok := rc.configs[s]; ok {
		return c
	}
	r, err := rc.load(s)
	if err != nil || r == nil {
		if rc.err == nil {
			rc.err = fmt.Errorf("reading run %s to show what changed: %w", s.ID, cmp.Or(err, errors.New("not found")))
		}
		return nil
	}
	c := rc.cache.build(r)
	rc.configs[s] = c
	return c
}

// lockDrift is what changed in the lock section from p, the point's
// previous run, to r. The engine's report of its build is absent from a
// run that failed before the engine reported it: that is no change, and
// r's build is compared with the last of earlier, the point's runs, that
// reported one.
func (rc *runConfigs) lockDrift(p, r *results.Summary, earlier []*results.Summary) []Change {
	var out []Change
	absent := false
	for _, c := range diffConfigs(rc.of(p), rc.of(r), onlySection(SectionLock)) {
		if strings.HasPrefix(c.Path, buildPrefix) && (c.Old == nil || c.New == nil) {
			absent = true
			continue
		}
		out = append(out, c)
	}
	if !absent || !hasBuild(rc.of(r)) {
		return out
	}
	for j := len(earlier) - 1; j >= 0; j-- {
		q := earlier[j]
		if !hasBuild(rc.of(q)) {
			continue
		}
		for _, c := range diffConfigs(rc.of(q), rc.of(r), onlySection(SectionLock)) {
			if strings.HasPrefix(c.Path, buildPrefix) && c.Old != nil && c.New != nil {
				out = append(out, c)
			}
		}
		break
	}
	return out
}

// metricStats are a run's metrics with their statistics, from its samples
// (else its mean alone).
func metricStats(r *results.Summary, d *results.Detail) []MetricStat {
	var out []MetricStat
	for j, m := range r.Metrics {
		var x []float64
		if j < len(d.Samples) {
			x = d.Samples[j]
		}
		if len(x) == 0 {
			x = []float64{m.Mean}
		}
		ci := stats.MeanCI(x, 0.95)
		out = append(out, MetricStat{Key: m.Key(), Name: m.Name, Test: m.Test, Unit: m.Unit,
			N: len(x), Mean: stats.Mean(x), Stddev: stats.Stddev(x), Low: ci.Low, High: ci.High, Min: slices.Min(x), Max: slices.Max(x)})
	}
	return out
}

// orderMetrics puts tokSOut first, then tokSPrompt, then the rest as they
// came.
func orderMetrics(metricOrder []string) []string {
	rank := func(k string) int {
		switch {
		case strings.HasPrefix(k, metric.TokSOut+" ") || k == metric.TokSOut:
			return 0
		case strings.HasPrefix(k, metric.TokSPrompt+" ") || k == metric.TokSPrompt:
			return 1
		}
		return 2
	}
	out := slices.Clone(metricOrder)
	slices.SortStableFunc(out, func(a, b string) int { return rank(a) - rank(b) })
	return out
}

// tokSOutChart is the chart of the history's first metric when it is a
// tokSOut key: one series per point, a gap where a run of the point has
// no value (a failed run); nil otherwise.
func tokSOutChart(h *History, byLabel map[string]*point) *Chart {
	if len(h.Metrics) == 0 || !(strings.HasPrefix(h.Metrics[0], metric.TokSOut+" ") || h.Metrics[0] == metric.TokSOut) {
		return nil
	}
	k := h.Metrics[0]
	c := &Chart{Metric: k}
	idx := map[string]int{}
	for _, e := range h.Entries {
		j, ok := idx[e.Point]
		if !ok {
			j = len(c.Series)
			idx[e.Point] = j
			c.Series = append(c.Series, Series{Point: e.Point})
		}
		v := math.NaN()
		for _, m := range e.Metrics {
			if m.Key == k {
				v, c.Unit = m.Mean, m.Unit
			}
		}
		c.Series[j].Values = append(c.Series[j].Values, v)
	}
	c.Series = slices.DeleteFunc(c.Series, func(s Series) bool {
		return !slices.ContainsFunc(s.Values, func(v float64) bool { return !math.IsNaN(v) })
	})
	slices.SortStableFunc(c.Series, func(a, b Series) int {
		return comparePoints(byLabel[a.Point], byLabel[b.Point])
	})
	return c
}

// sweptCache parses each distinct swept-values JSON of a history once:
// the canonical key and normalized map [sweptKey] makes of it.
type sweptCache map[string]struct {
	key   string
	swept map[string]any
}

func (c sweptCache) of(js string) (string, map[string]any) {
	if js == "" {
		return "", nil
	}
	if v, ok := c[js]; ok {
		return v.key, v.swept
	}
	var m map[string]any
	json.Unmarshal([]byte(js), &m)
	k, sw := sweptKey(m)
	c[js] = struct {
		key   string
		swept map[string]any
	}{k, sw}
	return k, sw
}

// sortRounds orders the runs of one experiment that share a start time
// (an imported sweep, whose records differ only in their ids' random
// suffixes) by their sweep points' values. Every other run keeps the order
// it started in, the runs of a shuffled round too: a log is a time series,
// and rows of a round sorted by point read as one whose dates go back
// (issue 25); the round column says which runs ran together.
func sortRounds(runs []*results.Summary, swept sweptCache) {
	same := func(a, b *results.Summary) bool {
		return a.Experiment == b.Experiment && !a.Start.IsZero() && a.Start.Equal(b.Start)
	}
	sweptOf := func(r *results.Summary) map[string]any {
		if r.Detail == nil {
			return nil
		}
		_, sw := swept.of(r.Detail.Swept)
		return sw
	}
	for i := 0; i < len(runs); {
		j := i + 1
		for j < len(runs) && same(runs[i], runs[j]) {
			j++
		}
		if j-i > 1 {
			group := runs[i:j]
			slices.SortStableFunc(group, func(a, b *results.Summary) int {
				return comparePoints(&point{swept: sweptOf(a)}, &point{swept: sweptOf(b)})
			})
		}
		i = j
	}
}

// buildPrefix starts the paths of the engine's report of its build.
const buildPrefix = "lock.engine.build."

// hasBuild reports whether a configuration holds the engine's report of
// its build.
func hasBuild(c config) bool {
	for _, l := range c {
		if strings.HasPrefix(l.path, buildPrefix) {
			return true
		}
	}
	return false
}

func onlySection(s string) func(string) bool {
	return func(sec string) bool { return sec == s }
}

func rawString(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(quote(s))
}

// shortCommitRef is the engine commit shortened to 7 digits, else the
// requested ref, else the version (node-llama-cpp's npm version).
func shortCommitRef(commit, ref, version string) string {
	c := commit
	if c == "" {
		c = ref
	}
	if c == "" {
		c = version
	}
	if len(c) > 7 && hexRE.MatchString(c) {
		c = c[:7]
	}
	return c
}

// sparkline draws values (NaN as a gap) with eight block heights between
// lo and hi, averaging neighbours when there are more values than width.
func sparkline(values []float64, lo, hi float64, width int) string {
	const bars = "▁▂▃▄▅▆▇█"
	levels := []rune(bars)
	if width > 0 && len(values) > width {
		out := make([]float64, width)
		for i := range out {
			from, to := i*len(values)/width, (i+1)*len(values)/width
			var s float64
			n := 0
			for _, v := range values[from:to] {
				if !math.IsNaN(v) {
					s += v
					n++
				}
			}
			out[i] = math.NaN()
			if n > 0 {
				out[i] = s / float64(n)
			}
		}
		values = out
	}
	var b strings.Builder
	for _, v := range values {
		switch {
		case math.IsNaN(v):
			b.WriteRune(' ')
		case hi <= lo:
			b.WriteRune(levels[3])
		default:
			i := int(math.Round((v - lo) / (hi - lo) * float64(len(levels)-1)))
			b.WriteRune(levels[max(0, min(i, len(levels)-1))])
		}
	}
	return b.String()
}

// logColumns is how many metric columns the text form shows.
const logColumns = 3

// ciBarWidth is the width of a run's confidence-interval bar in the log.
const ciBarWidth = 21

// chartMinSpan is the least half-range of the sparkline's scale, as a
// share of the middle value: ±5%.
const chartMinSpan = 0.05

// chartScale widens [lo, hi] to at least ±chartMinSpan around its middle.
func chartScale(lo, hi float64) (float64, float64) {
	mid := (lo + hi) / 2
	half := math.Max((hi-lo)/2, math.Abs(mid)*chartMinSpan)
	return mid - half, mid + half
}

// ciLevel is the confidence of a run's interval: 0.95 when it has one.
func ciLevel(m MetricStat) float64 {
	if math.IsNaN(m.Low) {
		return 0
	}
	return 0.95
}

// barScale is the common scale of the CI bars of metric key: the lowest
// interval bound (or mean) to the highest, widened like the chart's.
func barScale(h *History, key string) (float64, float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, e := range h.Entries {
		for _, m := range e.Metrics {
			if m.Key != key {
				continue
			}
			for _, v := range []float64{m.Low, m.High, m.Mean} {
				if !math.IsNaN(v) && !math.IsInf(v, 0) {
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
		}
	}
	if math.IsInf(lo, 0) {
		return 0, 0
	}
	return chartScale(lo, hi)
}

// ciBar draws a run's 95% interval on [lo, hi] in width cells: "├" and "┤"
// at the bounds, "─" between, "●" at the mean; the mean alone without an
// interval.
func ciBar(m MetricStat, lo, hi float64, width int) string {
	pos := func(v float64) int {
		i := int(math.Round((v - lo) / (hi - lo) * float64(width-1)))
		return max(0, min(i, width-1))
	}
	cells := []rune(strings.Repeat(" ", width))
	if !math.IsNaN(m.Low) && !math.IsNaN(m.High) {
		l, r := pos(m.Low), pos(m.High)
		for i := l; i <= r; i++ {
			cells[i] = '─'
		}
		cells[l], cells[r] = '├', '┤'
	}
	cells[pos(m.Mean)] = '●'
	return strings.TrimRight(string(cells), " ")
}

// WriteLogText writes the history as aligned text for a terminal of the
// given width (0: no wrapping): one line per run, oldest first, a drift
// line before each run whose lock, rig or spec changed, and a sparkline of
// tokSOut per point.
func WriteLogText(w io.Writer, h *History, width int) error {
	return writeLogText(w, h, width, false)
}

// WriteLogTextFit is [WriteLogText] with the table fitted to width: it
// leaves out, in this order, the CI bars, the min–max columns, the
// metrics after the first, the rig and the first metric's interval, until
// the table fits, and says how many columns it left out (rigor log
// without --wide).
func WriteLogTextFit(w io.Writer, h *History, width int) error {
	return writeLogText(w, h, width, true)
}

// fitGrid drops columns of g (header row first) until its lines fit
// width, and returns how many it dropped.
func fitGrid(g *grid, width int) int {
	lineWidth := func() int {
		wd := g.widths()
		n := 0
		for _, r := range g.rows {
			n = max(n, utf8.RuneCountInString(g.line(r, wd)))
		}
		return n
	}
	dropped := 0
	drop := func(match func(i int, head string) bool) bool {
		head := g.rows[0]
		for i := len(head) - 1; i >= 0; i-- {
			if !match(i, head[i]) {
				continue
			}
			for r := range g.rows {
				if i < len(g.rows[r]) {
					g.rows[r] = append(g.rows[r][:i:i], g.rows[r][i+1:]...)
				}
			}
			if i < len(g.right) {
				g.right = append(g.right[:i:i], g.right[i+1:]...)
			}
			dropped++
			return true
		}
		return false
	}
	metricAt := func() int { return slices.Index(g.rows[0], "status") + 1 }
	steps := []func(int, string) bool{
		func(_ int, h string) bool { return strings.HasPrefix(h, "95% CI ") },
		func(_ int, h string) bool { return h == "min–max" },
	}
	for _, step := range steps {
		for lineWidth() > width && drop(step) {
		}
	}
	// The metrics after the first, last first: their value, interval and n.
	for lineWidth() > width && len(g.rows[0]) > metricAt()+3 {
		last := len(g.rows[0]) - 1
		for k := 0; k < 3 && len(g.rows[0]) > metricAt()+3; k++ {
			drop(func(i int, _ string) bool { return i == last-k })
		}
	}
	for _, name := range []string{"rig", "± 95% CI", "n"} {
		if lineWidth() > width {
			drop(func(_ int, h string) bool { return h == name })
		}
	}
	return dropped
}

func writeLogText(w io.Writer, h *History, width int, fit bool) error {
	var b strings.Builder
	if len(h.Entries) == 0 {
		b.WriteString("no runs\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	b.WriteString(logTitle(h) + "\n\n")

	hasPoint, hasRound := false, false
	for _, e := range h.Entries {
		hasPoint = hasPoint || e.Point != ""
		hasRound = hasRound || e.Round > 0
	}
	metrics := h.Metrics
	if len(metrics) > logColumns {
		metrics = metrics[:logColumns]
	}
	g := &grid{}
	head := []string{"date", "run"}
	if hasPoint {
		head = append(head, "point")
	}
	if hasRound {
		head = append(head, "round")
	}
	head = append(head, "rig", "commit", "status")
	g.right = make([]bool, len(head))
	for _, m := range metrics {
		head = append(head, m, "± 95% CI", "min–max", "n")
		g.right = append(g.right, true, false, true, true)
	}
	// CI bars of the first metric, on one scale for every run.
	bar := ""
	var barLo, barHi float64
	if len(metrics) > 0 {
		bar = metrics[0]
		barLo, barHi = barScale(h, bar)
		if barHi > barLo {
			head = append(head, "95% CI "+fmtNum(barLo)+" … "+fmtNum(barHi))
			g.right = append(g.right, false)
		} else {
			bar = ""
		}
	}
	g.rows = append(g.rows, head)
	drift, failure := map[int]string{}, map[int]string{}
	for i, e := range h.Entries {
		date := ""
		if !e.Start.IsZero() {
			date = e.Start.UTC().Format("2006-01-02 15:04")
		}
		cells := []string{date, e.ID}
		if hasPoint {
			cells = append(cells, e.Point)
		}
		if hasRound {
			round := ""
			if e.Round > 0 {
				round = strconv.Itoa(e.Round) + "/" + strconv.Itoa(e.Rounds)
			}
			cells = append(cells, round)
		}
		cells = append(cells, e.Rig, e.Commit, e.Status)
		cells = append(cells, logMetricCells(e, metrics)...)
		if bar != "" {
			cell := ""
			for _, m := range e.Metrics {
				if m.Key == bar {
					cell = ciBar(m, barLo, barHi, ciBarWidth)
				}
			}
			cells = append(cells, cell)
		}
		g.rows = append(g.rows, cells)
		d, f := entryNotes(e, width)
		if d != "" {
			drift[i+1] = d
		}
		if f != "" {
			failure[i+1] = f
		}
	}
	left := 0
	if fit && width > 0 {
		left = fitGrid(g, width)
	}
	wd := g.widths()
	for i, row := range g.rows {
		b.WriteString(g.line(row, wd) + "\n")
		// Under its own run, as the failure is: what drifted since the
		// point's previous run.
		if d, ok := drift[i]; ok {
			b.WriteString(d + "\n")
		}
		if f, ok := failure[i]; ok {
			b.WriteString(f + "\n")
		}
	}
	if len(h.Metrics) > len(metrics) {
		fmt.Fprintf(&b, "(%d more metrics in --json)\n", len(h.Metrics)-len(metrics))
	}
	if left > 0 {
		cols := "columns"
		if left == 1 {
			cols = "column"
		}
		fmt.Fprintf(&b, "(%d %s left out to fit %d columns: --wide shows them)\n", left, cols, width)
	}

	if h.Chart != nil {
		writeLogChart(&b, h.Chart, width)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// logTitle is the log's first line: its experiments, how many runs and
// the days they span.
func logTitle(h *History) string {
	first, last := h.Entries[0].Start, h.Entries[len(h.Entries)-1].Start
	runs := "runs"
	if len(h.Entries) == 1 {
		runs = "run"
	}
	title := fmt.Sprintf("%s: %d %s", strings.Join(h.Experiments, ", "), len(h.Entries), runs)
	if !first.IsZero() {
		title += fmt.Sprintf(", %s … %s", day(first), day(last))
	}
	return title
}

// logMetricCells are an entry's cells of the metrics shown: mean, 95% CI,
// min–max and n of each, empty where the run has no value.
func logMetricCells(e Entry, metrics []string) []string {
	var cells []string
	for _, k := range metrics {
		mean, ci, span, n := "", "", "", ""
		for _, m := range e.Metrics {
			if m.Key == k {
				mean, n = fmtNum(m.Mean), strconv.Itoa(m.N)
				ci = fmtCI(Summary{N: m.N, Center: m.Mean, Low: m.Low, High: m.High, Confidence: ciLevel(m)}, 0.95)
				if m.N > 1 {
					span = fmtNum(m.Min) + "–" + fmtNum(m.Max)
				}
			}
		}
		cells = append(cells, mean, ci, span, n)
	}
	return cells
}

// entryNotes are the lines printed under an entry's row, wrapped to
// width: what drifted since the point's previous run, and its failure or
// busy machine.
func entryNotes(e Entry, width int) (drift, failure string) {
	if len(e.Drift) > 0 {
		parts := make([]string, len(e.Drift))
		for j, c := range e.Drift {
			parts[j] = c.Path + ": " + showValue(c.Old, 12) + " → " + showValue(c.New, 12)
		}
		drift = wrap("  ▲ drift: "+strings.Join(parts, "; "), width, 12)
	}
	if e.Status != results.StatusOK && e.Error != "" {
		failure = wrap("  ✗ "+e.Status+": "+e.Error, width, 6)
	}
	if e.Busy != "" {
		if failure != "" {
			failure += "\n"
		}
		failure += wrap("  ⚠ busy machine: "+e.Busy, width, 6)
	}
	return drift, failure
}

// writeLogChart writes the chart under the log's table: a sparkline per
// point on one scale.
func writeLogChart(b *strings.Builder, c *Chart, width int) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		for _, v := range s.Values {
			if !math.IsNaN(v) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	unit := ""
	if c.Unit != "" {
		unit = " " + c.Unit
	}
	// The bars' scale is never narrower than ±chartMinSpan of the
	// middle, so that a wiggle of a fraction of a percent does not
	// look like a cliff; the title says the scale and the span.
	slo, shi := chartScale(lo, hi)
	span := ""
	if mid := (lo + hi) / 2; mid != 0 {
		span = ", the values span " + fmtPercent((hi-lo)/math.Abs(mid)*100)
	}
	fmt.Fprintf(b, "\n%s over time, oldest first (%s … %s%s; bars from %s to %s%s):\n",
		c.Metric, fmtNum(lo), fmtNum(hi), unit, fmtNum(slo), fmtNum(shi), span)
	lo, hi = slo, shi
	lw := 0
	for _, s := range c.Series {
		lw = max(lw, utf8.RuneCountInString(s.Point))
	}
	for _, s := range c.Series {
		vals := s.Values
		sw := 0
		if width > 0 {
			sw = max(8, width-lw-4)
		}
		label := s.Point + strings.Repeat(" ", lw-utf8.RuneCountInString(s.Point))
		line := "  " + label
		if lw > 0 {
			line += "  "
		}
		b.WriteString(strings.TrimRight(line+sparkline(vals, lo, hi, sw), " ") + "\n")
	}
}

type jsonHistory struct {
	Version     int         `json:"version"`
	Experiments []string    `json:"experiments"`
	Metrics     []string    `json:"metrics"`
	Runs        []jsonEntry `json:"runs"`
	Chart       *jsonChart  `json:"chart"`
}

type jsonEntry struct {
	ID         string       `json:"id"`
	Experiment string       `json:"experiment"`
	Point      string       `json:"point"`
	Round      int          `json:"round,omitempty"`
	Rounds     int          `json:"rounds,omitempty"`
	Start      time.Time    `json:"start,omitzero"`
	End        time.Time    `json:"end,omitzero"`
	Rig        string       `json:"rig"`
	Host       string       `json:"host,omitempty"`
	Commit     string       `json:"commit"`
	Status     string       `json:"status"`
	Error      string       `json:"error,omitempty"`
	Metrics    []jsonMetric `json:"metrics"`
	Drift      []Change     `json:"drift"`
	Busy       string       `json:"busy,omitempty"`
}

type jsonMetric struct {
	Key    string `json:"key"`
	Name   string `json:"name"`
	Test   string `json:"test"`
	Unit   string `json:"unit"`
	N      int    `json:"n"`
	Mean   jnum   `json:"mean"`
	Stddev jnum   `json:"stddev"`
	Low    jnum   `json:"ciLow"`
	High   jnum   `json:"ciHigh"`
	Min    jnum   `json:"min"`
	Max    jnum   `json:"max"`
}

type jsonChart struct {
	Metric string       `json:"metric"`
	Unit   string       `json:"unit"`
	Series []jsonSeries `json:"series"`
}

type jsonSeries struct {
	Point  string `json:"point"`
	Values []jnum `json:"values"`
}

// WriteLogJSON writes the history as one indented JSON object:
// {version, experiments, metrics, runs: [{id, experiment, point, round and
// rounds (the run's round of its invocation's rounds, when it had several), start,
// end, rig, host, commit, status, error, metrics: [{key, name, test, unit,
// n, mean, stddev, ciLow, ciHigh (the 95% interval of the mean), min,
// max}], drift: [Change], busy (why the machine was busy, when it
// was)}], chart: {metric, unit,
// series: [{point, values}]}}, with null for a missing number.
func WriteLogJSON(w io.Writer, h *History) error {
	out := jsonHistory{Version: JSONVersion, Experiments: orEmpty(h.Experiments),
		Metrics: orEmpty(h.Metrics), Runs: []jsonEntry{}}
	for _, e := range h.Entries {
		je := jsonEntry{ID: e.ID, Experiment: e.Experiment, Point: e.Point, Round: e.Round, Rounds: e.Rounds, Start: e.Start.UTC(), End: e.End.UTC(),
			Rig: e.Rig, Host: e.Host, Commit: e.Commit, Status: e.Status, Error: e.Error,
			Metrics: []jsonMetric{}, Drift: orEmpty(e.Drift), Busy: e.Busy}
		for _, m := range e.Metrics {
			je.Metrics = append(je.Metrics, jsonMetric{m.Key, m.Name, m.Test, m.Unit, m.N,
				jnum(m.Mean), jnum(m.Stddev), jnum(m.Low), jnum(m.High), jnum(m.Min), jnum(m.Max)})
		}
		out.Runs = append(out.Runs, je)
	}
	if c := h.Chart; c != nil {
		jc := &jsonChart{Metric: c.Metric, Unit: c.Unit, Series: []jsonSeries{}}
		for _, s := range c.Series {
			vals := make([]jnum, len(s.Values))
			for i, v := range s.Values {
				vals[i] = jnum(v)
			}
			jc.Series = append(jc.Series, jsonSeries{s.Point, vals})
		}
		out.Chart = jc
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

package text

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rigorbench/rigor/internal/compare"
	"github.com/rigorbench/rigor/internal/results"
)

var _ = compare.FormatNum

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
func ciLevel(m compare.MetricStat) float64 {
	if math.IsNaN(m.Low) {
		return 0
	}
	return 0.95
}

// barScale is the common scale of the CI bars of metric key: the lowest
// interval bound (or mean) to the highest, widened like the chart's.
func barScale(h *compare.History, key string) (float64, float64) {
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
func ciBar(m compare.MetricStat, lo, hi float64, width int) string {
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
func WriteLogText(w io.Writer, h *compare.History, width int) error {
	return writeLogText(w, h, width, false)
}

// WriteLogTextFit is [WriteLogText] with the table fitted to width: it
// leaves out, in this order, the CI bars, the min–max columns, the
// metrics after the first, the rig and the first metric's interval, until
// the table fits, and says how many columns it left out (rigor log
// without --wide).
func WriteLogTextFit(w io.Writer, h *compare.History, width int) error {
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

func writeLogText(w io.Writer, h *compare.History, width int, fit bool) error {
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
			head = append(head, "95% CI "+compare.FormatNum(barLo)+" … "+compare.FormatNum(barHi))
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
	if h.Quality != nil {
		writeSpeedQuality(&b, h.Quality)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// logTitle is the log's first line: its experiments, how many runs and
// the days they span.
func logTitle(h *compare.History) string {
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
func logMetricCells(e compare.Entry, metrics []string) []string {
	var cells []string
	for _, k := range metrics {
		mean, ci, span, n := "", "", "", ""
		for _, m := range e.Metrics {
			if m.Key == k {
				mean, n = compare.FormatNum(m.Mean), strconv.Itoa(m.N)
				ci = fmtCI(compare.Summary{N: m.N, Center: m.Mean, Low: m.Low, High: m.High, Confidence: ciLevel(m)}, 0.95)
				if m.N > 1 {
					span = compare.FormatNum(m.Min) + "–" + compare.FormatNum(m.Max)
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
func entryNotes(e compare.Entry, width int) (drift, failure string) {
	if len(e.Drift) > 0 {
		parts := make([]string, len(e.Drift))
		for j, c := range e.Drift {
			parts[j] = c.Path + ": " + compare.ShowValue(c.Old) + " → " + compare.ShowValue(c.New)
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
func writeLogChart(b *strings.Builder, c *compare.Chart, width int) {
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
		span = ", the values span " + compare.FormatPercent((hi-lo)/math.Abs(mid)*100)
	}
	fmt.Fprintf(b, "\n%s over time, oldest first (%s … %s%s; bars from %s to %s%s):\n",
		c.Metric, compare.FormatNum(lo), compare.FormatNum(hi), unit, compare.FormatNum(slo), compare.FormatNum(shi), span)
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
	// Quality is the speed-vs-quality view; absent when no point
	// measured quality.
	Quality *jsonSpeedQuality `json:"quality,omitempty"`
}

type jsonEntry struct {
	ID         string           `json:"id"`
	Experiment string           `json:"experiment"`
	Point      string           `json:"point"`
	Round      int              `json:"round,omitempty"`
	Rounds     int              `json:"rounds,omitempty"`
	Start      time.Time        `json:"start,omitzero"`
	End        time.Time        `json:"end,omitzero"`
	Rig        string           `json:"rig"`
	Host       string           `json:"host,omitempty"`
	Commit     string           `json:"commit"`
	Status     string           `json:"status"`
	Error      string           `json:"error,omitempty"`
	Metrics    []jsonMetric     `json:"metrics"`
	Drift      []compare.Change `json:"drift"`
	Busy       string           `json:"busy,omitempty"`
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
// series: [{point, values}]}, quality: {baseline, corpus, ctx, tokens,
// metric, unit, points: [{point, run, speed (a metric as above), kld,
// kldErr, sameTop, pplRatio, baseline, pareto}], unmeasured, other,
// noSpeed} (only when a point measured quality)}, with null for a
// missing number.
func WriteLogJSON(w io.Writer, h *compare.History) error {
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
	out.Quality = speedQualityJSON(h.Quality)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

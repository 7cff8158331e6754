package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"

	"github.com/rigorbench/rigor/internal/compare"
	"github.com/rigorbench/rigor/internal/compare/stats"
	"github.com/rigorbench/rigor/internal/results"
)

// figureHTML is a figure ready for a page.
type figureHTML struct {
	ID      string
	Title   string
	SVG     template.HTML
	Caption string
}

func embed(f *Figure, id, caption string) (figureHTML, error) {
	svg, err := f.inlineSVG(id)
	if err != nil {
		return figureHTML{}, err
	}
	// The SVG comes from gonum's writer, which escapes every text it
	// draws; the title and description were escaped by inlineSVG.
	return figureHTML{ID: id, Title: f.Title, SVG: template.HTML(svg), Caption: caption}, nil
}

// indexPage is the list of experiments.
type indexPage struct {
	Title string
	Runs  int
	Rows  []indexRow
}

type indexRow struct {
	ID, Href            string
	SweepHref, DiffHref string
	Runs, Points        int
	Failed              int
	Last, LastStatus    string
	Headline            *headlineCell
	Drifts              int
	LastDrift           string
	DriftTitle          string
	Better, Worse       int
	// quality is set when the experiment's page has a speed-vs-quality
	// view, which draws other experiments' runs ([Group.PeersKey]).
	quality bool
}

type headlineCell struct {
	Metric, Value, CI, Unit, Point, Date string
	N                                    int
	Best                                 bool
	center                               float64
}

// experimentPage is one experiment's runs over time.
type experimentPage struct {
	Path, Title, ID     string
	Summary             string
	SweepHref, DiffHref string
	Figures             []figureHTML
	HasPoint            bool
	// HasRig is set when the runs were made on more than one rig; with
	// one, the summary names it and the table leaves it out.
	HasRig bool
	// NumFrom is the 1-based index of the first numeric column.
	NumFrom int
	Columns []string
	Rows    []expRow
	// RowsHTML is Rows as table rows (see rowsHTML).
	RowsHTML template.HTML
	More     []string
	// ByCommit is the view over engine commits, when there are two or
	// more.
	ByCommit *commitView
	// Quality is the speed-vs-quality scatter and table, when the
	// experiment measured quality (quality.measure).
	Quality *qualityView
}

// commitView pools each engine commit's ok runs, point by point.
type commitView struct {
	Figures  []figureHTML
	HasPoint bool
	Columns  []string
	Rows     []commitRow
}

type commitRow struct {
	Commit, First, Point string
	Runs                 int
	Cells                []statCell
}

// commitMetrics is how many metrics the view over commits plots.
const commitMetrics = 2

type expRow struct {
	Date, ID, Point, Rig, Commit, Status, Error string
	Cells                                       []statCell
	Drift                                       string
}

type statCell struct{ Value, N string }

func newExperimentPage(id string, h *compare.History, byID map[string]*results.Run, path string, order []string) (*experimentPage, error) {
	p := &experimentPage{Path: path, ID: id, Title: id + ": runs over time"}
	hs := newHistStats(h)
	metrics := h.Metrics
	if len(metrics) > maxMetrics {
		p.More = metrics[maxMetrics:]
		metrics = metrics[:maxMetrics]
	}
	commits, rigs := []string{}, []string{}
	failed, drifts := 0, 0
	for _, e := range h.Entries {
		p.HasPoint = p.HasPoint || e.Point != ""
		if e.Commit != "" && !slices.Contains(commits, e.Commit) {
			commits = append(commits, e.Commit)
		}
		if e.Rig != "" && !slices.Contains(rigs, e.Rig) {
			rigs = append(rigs, e.Rig)
		}
		if e.Status != results.StatusOK {
			failed++
		}
		if len(e.Drift) > 0 {
			drifts++
		}
	}
	n := len(h.Entries)
	p.Summary = plural(n, "run", "runs")
	if n > 0 {
		first, last := day(h.Entries[0].Start), day(h.Entries[n-1].Start)
		if first != last {
			p.Summary += ", " + first + " … " + last
		} else if first != "" {
			p.Summary += ", " + first
		}
	}
	if failed > 0 {
		p.Summary += fmt.Sprintf("; %d not ok", failed)
	}
	if drifts > 0 {
		p.Summary += "; " + plural(drifts, "drift marker", "drift markers")
	}
	if len(commits) > 0 {
		p.Summary += "; engine " + listShort(commits, 5)
	}
	if len(rigs) > 0 {
		p.Summary += "; " + listShort(rigs, 3)
	}
	p.HasRig = len(rigs) > 1
	p.NumFrom = 5
	if p.HasPoint {
		p.NumFrom++
	}
	if p.HasRig {
		p.NumFrom++
	}

	for i, key := range metrics {
		f := historyFigure(h, hs, byID, key)
		fig, err := embed(f, fmt.Sprintf("plot-%d", i+1), "Each run's mean with its 95% interval; the table of runs below holds the values.")
		if err != nil {
			return nil, err
		}
		p.Figures = append(p.Figures, fig)
	}
	units := map[string]string{}
	for _, e := range h.Entries {
		for _, m := range e.Metrics {
			if units[m.Key] == "" {
				units[m.Key] = m.Unit
			}
		}
	}
	for _, k := range metrics {
		c := k
		if u := units[k]; u != "" {
			c += " (" + u + ")"
		}
		p.Columns = append(p.Columns, c)
	}
	if len(commits) > 1 {
		cv, err := newCommitView(id, h, byID, metrics, p.Columns, len(p.Figures), order)
		if err != nil {
			return nil, err
		}
		p.ByCommit = cv
	}
	for _, e := range h.Entries {
		row := expRow{Date: minute(e.Start), ID: e.ID, Point: e.Point, Rig: e.Rig, Commit: e.Commit, Status: e.Status, Error: e.Error}
		r := byID[e.ID]
		for _, k := range metrics {
			cell := statCell{Value: "–"}
			if m, ok := metricOf(r, k); ok {
				st := hs.of(r.ID, m)
				cell = statCell{Value: fmtStat(st.Sum), N: strconv.Itoa(st.Sum.N)}
			}
			row.Cells = append(row.Cells, cell)
		}
		if len(e.Drift) > 0 {
			row.Drift = driftText(e.Drift, 3)
		}
		p.Rows = append(p.Rows, row)
	}
	p.RowsHTML = rowsHTML(p)
	return p, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

func listShort(xs []string, n int) string {
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:n], ", ") + fmt.Sprintf(" and %d more", len(xs)-n)
}

// historyFigure plots one metric of a history over time: a series per
// point, drift lines, failed runs.
func historyFigure(h *compare.History, hs histStats, byID map[string]*results.Run, key string) *Figure {
	unit, dir := "", ""
	type ser struct {
		label string
		pts   []point
	}
	var order []*ser
	byPoint := map[string]*ser{}
	var drift, failed []float64
	var first, last float64 = math.Inf(1), math.Inf(-1)
	nRuns := 0
	for i, e := range h.Entries {
		x := float64(e.Start.Unix())
		if e.Start.IsZero() {
			x = float64(i)
		}
		first, last = math.Min(first, x), math.Max(last, x)
		if len(e.Drift) > 0 {
			drift = append(drift, x)
		}
		s := byPoint[e.Point]
		if s == nil {
			s = &ser{label: e.Point}
			byPoint[e.Point] = s
			order = append(order, s)
		}
		m, ok := metricOf(byID[e.ID], key)
		if !ok || e.Status == results.StatusFailed {
			if e.Status != results.StatusOK {
				failed = append(failed, x)
			}
			continue
		}
		st := hs.of(e.ID, m)
		unit, dir = cmp.Or(unit, st.Unit), cmp.Or(dir, st.Dir)
		s.pts = append(s.pts, point{X: x, Y: st.Sum.Center, Low: st.Sum.Low, High: st.Sum.High})
		nRuns++
		if e.Status != results.StatusOK {
			failed = append(failed, x)
		}
	}
	// Series in the order of their points, as `rigor log` charts them.
	if h.Chart != nil {
		rank := map[string]int{}
		for i, s := range h.Chart.Series {
			rank[s.Point] = i
		}
		slices.SortStableFunc(order, func(a, b *ser) int { return cmp.Compare(rank[a.label], rank[b.label]) })
	}
	title := key + " over time"
	p := newPlot(title, "run start (UTC)", axisLabel(unit, dir))
	withDates := len(h.Entries) > 0 && !h.Entries[0].Start.IsZero()
	if withDates {
		p.X.Tick.Marker = dateTicks{}
	} else {
		p.X.Label.Text = "run"
	}
	var all [][]point
	for _, s := range order {
		all = append(all, s.pts)
	}
	fitY(p, unit, all)
	named := 0
	for i, s := range order {
		if len(s.pts) == 0 {
			continue
		}
		sr := &series{Points: s.pts, Color: colorOf(i), Shape: shapes[i%len(shapes)], Line: true}
		p.Add(sr)
		if s.label != "" {
			p.Legend.Add(s.label, sr)
			named++
		}
	}
	legend := named
	if len(drift) > 0 {
		v := &vlines{X: drift, Color: driftColor}
		p.Add(v)
		p.Legend.Add("drift", v)
		legend++
	}
	if len(failed) > 0 {
		m := &marks{X: failed, Color: failColor}
		p.Add(m)
		p.Legend.Add("not ok", m)
		legend++
	}
	if first == last {
		p.X.Min, p.X.Max = first-86400, last+86400
	} else {
		pad := (last - first) * 0.03
		p.X.Min, p.X.Max = first-pad, last+pad
	}
	desc := fmt.Sprintf("%s of %s over time: the mean of each run with its 95%% interval", key, strings.Join(h.Experiments, ", "))
	if named > 0 {
		desc += fmt.Sprintf(", one line per point (%d)", named)
	}
	desc += fmt.Sprintf("; %s with a value", plural(nRuns, "run", "runs"))
	if len(drift) > 0 {
		desc += fmt.Sprintf("; dashed lines mark %s where the lock, rig or spec changed", plural(len(drift), "run", "runs"))
	}
	if len(failed) > 0 {
		desc += fmt.Sprintf("; crosses mark %s that did not end ok", plural(len(failed), "run", "runs"))
	}
	return &Figure{Title: title + " (" + strings.Join(h.Experiments, ", ") + ")", Desc: desc + ".", Plots: []*plot.Plot{p}}
}

// HistoryFigure plots the history's metrics over time (at most four, the
// key ones first), stacked, for `rigor log --plot`. runs are the runs the
// history was built from.
func HistoryFigure(h *compare.History, runs []results.Run) *Figure {
	byID := make(map[string]*results.Run, len(runs))
	for i := range runs {
		byID[runs[i].ID] = &runs[i]
	}
	metrics := h.Metrics
	if len(metrics) > maxMetrics {
		metrics = metrics[:maxMetrics]
	}
	out := &Figure{Title: strings.Join(h.Experiments, ", ") + " over time"}
	var descs []string
	hs := newHistStats(h)
	for _, k := range metrics {
		f := historyFigure(h, hs, byID, k)
		// A file stands alone: its titles name the experiment.
		f.Plots[0].Title.Text = f.Title
		out.Plots = append(out.Plots, f.Plots...)
		descs = append(descs, f.Desc)
	}
	out.Desc = strings.Join(descs, " ")
	return out
}

// sweepPage plots the metrics against the swept values.
type sweepPage struct {
	Path, Title, ID string
	ExperimentHref  string
	Summary         string
	Figures         []figureHTML
	Axes            []string
	Columns         []string
	NumFrom         int
	Rows            []sweepRow
	Points          int
	More            []string
}

type sweepRow struct {
	Point, Run, Date, Status string
	Values                   []string
	Cells                    []statCell
}

// axis is one swept field.
type axis struct {
	Field, Name string
	Numeric     bool
	Values      []any // distinct, ordered
}

// sweptPoint is the latest run of one point with its normalized values.
type sweptPoint struct {
	run    *results.Run
	label  string
	values map[string]any
}

func normalize(v any) any {
	switch x := v.(type) {
	case string, float64, bool, nil:
		return x
	case int:
		return float64(x)
	}
	var y any
	if b, err := json.Marshal(v); err == nil && json.Unmarshal(b, &y) == nil {
		return y
	}
	return fmt.Sprint(v)
}

func showAny(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func newSweepPage(id string, runs []*results.Run, h *compare.History, path string) (*sweepPage, error) {
	p := &sweepPage{Path: path, ID: id, Title: id + ": sweep", ExperimentHref: rel(path, experimentPath(id))}
	hs := newHistStats(h)
	label := map[string]string{}
	for _, e := range h.Entries {
		label[e.ID] = e.Point
	}
	latest := results.LatestPerPoint(runs)
	var pts []sweptPoint
	fields := map[string]bool{}
	for _, r := range latest {
		sp := sweptPoint{run: r, label: label[r.ID], values: map[string]any{}}
		for k, v := range r.Swept {
			sp.values[k] = normalize(v)
			fields[k] = true
		}
		pts = append(pts, sp)
	}
	p.Points = len(pts)
	axes := sweepAxes(fields, pts)
	for _, a := range axes {
		p.Axes = append(p.Axes, a.Name)
	}
	sortByAxes(pts, axes)

	// Metrics in the history's order, those the latest runs have.
	var metrics []string
	for _, k := range h.Metrics {
		for _, sp := range pts {
			if _, ok := metricOf(sp.run, k); ok && sp.run.Status == results.StatusOK {
				metrics = append(metrics, k)
				break
			}
		}
	}
	if len(metrics) > maxMetrics {
		p.More = metrics[maxMetrics:]
		metrics = metrics[:maxMetrics]
	}
	okRuns, notOK := 0, 0
	for _, sp := range pts {
		if sp.run.Status == results.StatusOK {
			okRuns++
		} else {
			notOK++
		}
	}
	p.Summary = fmt.Sprintf("%s over %s; the latest ok run of each point (the runs 'rigor diff' compares)",
		plural(len(pts), "point", "points"), strings.Join(p.Axes, " × "))
	if notOK > 0 {
		p.Summary += fmt.Sprintf("; %s with no ok run", plural(notOK, "point", "points"))
	}

	n := 0
	for _, k := range metrics {
		for ai, a := range axes {
			f := sweepFigure(id, k, a, axes, ai, pts, hs)
			if f == nil {
				continue
			}
			n++
			fig, err := embed(f, fmt.Sprintf("plot-%d", n), "Each point's mean with its 95% interval; the table below holds the values.")
			if err != nil {
				return nil, err
			}
			p.Figures = append(p.Figures, fig)
		}
	}
	for _, k := range metrics {
		c := k
		for _, sp := range pts {
			if m, ok := metricOf(sp.run, k); ok && m.Unit != "" {
				c += " (" + m.Unit + ")"
				break
			}
		}
		p.Columns = append(p.Columns, c)
	}
	p.NumFrom = 5 + len(axes)
	for _, sp := range pts {
		row := sweepRow{Point: sp.label, Run: sp.run.ID, Date: minute(sp.run.Start), Status: sp.run.Status}
		for _, a := range axes {
			v, ok := sp.values[a.Field]
			s := "–"
			if ok {
				s = showAny(v)
			}
			row.Values = append(row.Values, s)
		}
		for _, k := range metrics {
			cell := statCell{Value: "–"}
			if m, ok := metricOf(sp.run, k); ok && sp.run.Status == results.StatusOK {
				st := hs.of(sp.run.ID, m)
				cell = statCell{Value: fmtStat(st.Sum), N: strconv.Itoa(st.Sum.N)}
			}
			row.Cells = append(row.Cells, cell)
		}
		p.Rows = append(p.Rows, row)
	}
	return p, nil
}

// sweepAxes are the swept fields of the points, each with its values in
// order (numbers by value, else as text), named by the field's last part
// when no other axis shares it.
func sweepAxes(fields map[string]bool, pts []sweptPoint) []*axis {
	var axes []*axis
	lastCount := map[string]int{}
	for f := range fields {
		lastCount[f[strings.LastIndexByte(f, '.')+1:]]++
	}
	for _, f := range sortedKeys(fields) {
		a := &axis{Field: f, Name: f, Numeric: true}
		if short := f[strings.LastIndexByte(f, '.')+1:]; lastCount[short] == 1 {
			a.Name = short
		}
		for _, sp := range pts {
			v, ok := sp.values[f]
			if !ok {
				continue
			}
			if _, num := v.(float64); !num {
				a.Numeric = false
			}
			if !slices.ContainsFunc(a.Values, func(x any) bool { return showAny(x) == showAny(v) }) {
				a.Values = append(a.Values, v)
			}
		}
		slices.SortFunc(a.Values, func(x, y any) int {
			fx, okx := x.(float64)
			fy, oky := y.(float64)
			if okx && oky {
				return cmp.Compare(fx, fy)
			}
			return strings.Compare(showAny(x), showAny(y))
		})
		axes = append(axes, a)
	}
	return axes
}

// sortByAxes puts the points in the order of their values, axis by axis.
func sortByAxes(pts []sweptPoint, axes []*axis) {
	slices.SortStableFunc(pts, func(x, y sweptPoint) int {
		for _, a := range axes {
			ix := slices.IndexFunc(a.Values, func(v any) bool { return showAny(v) == showAny(x.values[a.Field]) })
			iy := slices.IndexFunc(a.Values, func(v any) bool { return showAny(v) == showAny(y.values[a.Field]) })
			if c := cmp.Compare(ix, iy); c != 0 {
				return c
			}
		}
		return 0
	})
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// sweepFigure plots one metric against one swept field, one line per
// combination of the other fields; nil when no point has a value.
func sweepFigure(id, key string, a *axis, axes []*axis, ai int, pts []sweptPoint, hs histStats) *Figure {
	type line struct {
		label string
		pts   []point
	}
	var lines []*line
	byLabel := map[string]*line{}
	unit, dir := "", ""
	xOf := func(v any) float64 {
		if a.Numeric {
			return v.(float64)
		}
		return float64(slices.IndexFunc(a.Values, func(x any) bool { return showAny(x) == showAny(v) }))
	}
	for _, sp := range pts {
		v, ok := sp.values[a.Field]
		if !ok || sp.run.Status != results.StatusOK {
			continue
		}
		m, ok := metricOf(sp.run, key)
		if !ok {
			continue
		}
		var others []string
		for j, b := range axes {
			if j == ai {
				continue
			}
			if ov, ok := sp.values[b.Field]; ok {
				others = append(others, b.Name+"="+showAny(ov))
			}
		}
		lbl := strings.Join(others, " ")
		l := byLabel[lbl]
		if l == nil {
			l = &line{label: lbl}
			byLabel[lbl] = l
			lines = append(lines, l)
		}
		st := hs.of(sp.run.ID, m)
		unit, dir = cmp.Or(unit, st.Unit), cmp.Or(dir, st.Dir)
		l.pts = append(l.pts, point{X: xOf(v), Y: st.Sum.Center, Low: st.Sum.Low, High: st.Sum.High})
	}
	if len(lines) == 0 {
		return nil
	}
	title := fmt.Sprintf("%s against %s", key, a.Name)
	p := newPlot(title, a.Name+" (swept)", axisLabel(unit, dir))
	xs := []float64{}
	for _, v := range a.Values {
		xs = append(xs, xOf(v))
	}
	if a.Numeric {
		lo, hi := slices.Min(xs), slices.Max(xs)
		logX := lo > 0 && hi/lo >= 4
		if logX {
			p.X.Scale = plot.LogScale{}
			p.X.Min, p.X.Max = lo/math.Pow(hi/lo, 0.05), hi*math.Pow(hi/lo, 0.05)
		} else {
			pad := math.Max((hi-lo)*0.05, 0.5)
			p.X.Min, p.X.Max = lo-pad, hi+pad
		}
		if len(xs) <= 16 {
			p.X.Tick.Marker = valueTicks(xs)
		} else if logX {
			p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		}
	} else {
		names := make([]string, len(a.Values))
		for i, v := range a.Values {
			names[i] = showAny(v)
		}
		p.X.Tick.Marker = nominalTicks(names)
		slantTicks(p, len(names))
		p.X.Min, p.X.Max = -0.5, float64(len(names))-0.5
	}
	var all [][]point
	for _, l := range lines {
		all = append(all, l.pts)
	}
	fitY(p, unit, all)
	for i, l := range lines {
		slices.SortFunc(l.pts, func(x, y point) int { return cmp.Compare(x.X, y.X) })
		sr := &series{Points: l.pts, Color: colorOf(i), Shape: shapes[i%len(shapes)], Line: true}
		p.Add(sr)
		if l.label != "" {
			p.Legend.Add(l.label, sr)
		}
	}
	desc := fmt.Sprintf("%s of %s against the swept %s, the latest ok run of each point: mean with its 95%% interval", key, id, a.Field)
	if len(lines) > 1 || lines[0].label != "" {
		desc += fmt.Sprintf(", one line per value of the other swept fields (%d)", len(lines))
	}
	return &Figure{Title: title + " (" + id + ")", Desc: desc + ".", Plots: []*plot.Plot{p}}
}

// pooledKey names one point at one commit.
type pooledKey struct{ commit, point string }

// newCommitView pools the samples of each commit's ok runs, point by
// point, and summarizes them with the mean and its Student-t interval
// ([stats.MeanCI]), in the order the commits were first run, or in
// history order (oldest first; commits it lacks after them) when order
// is given.
func newCommitView(id string, h *compare.History, byID map[string]*results.Run, metrics, columns []string, figs int, order []string) (*commitView, error) {
	cv := &commitView{Columns: columns}
	var commits, points []string
	first := map[string]string{}
	runs := map[pooledKey]int{}
	samples := map[pooledKey]map[string][]float64{}
	units, dirs := map[string]string{}, map[string]string{}
	for _, e := range h.Entries {
		if e.Commit == "" {
			continue
		}
		if _, ok := first[e.Commit]; !ok {
			first[e.Commit] = day(e.Start)
			commits = append(commits, e.Commit)
		}
		if !slices.Contains(points, e.Point) {
			points = append(points, e.Point)
		}
		if e.Status != results.StatusOK {
			continue
		}
		k := pooledKey{e.Commit, e.Point}
		runs[k]++
		if samples[k] == nil {
			samples[k] = map[string][]float64{}
		}
		for _, m := range byID[e.ID].Metrics {
			x := m.Samples
			if len(x) == 0 {
				x = []float64{m.Value}
			}
			samples[k][m.Key()] = append(samples[k][m.Key()], x...)
			units[m.Key()] = cmp.Or(units[m.Key()], m.Unit)
			dirs[m.Key()] = cmp.Or(dirs[m.Key()], compare.MetricDirection(m.Name, m.Direction))
		}
	}
	axisName, orderDesc := orderCommits(commits, order)
	if h.Chart != nil {
		rank := map[string]int{}
		for i, s := range h.Chart.Series {
			rank[s.Point] = i
		}
		slices.SortStableFunc(points, func(a, b string) int { return cmp.Compare(rank[a], rank[b]) })
	}
	for i, key := range metrics {
		if i == commitMetrics {
			break
		}
		title := key + " by engine commit"
		p := newPlot(title, axisName, axisLabel(units[key], dirs[key]))
		p.X.Tick.Marker = nominalTicks(commits)
		slantTicks(p, len(commits))
		p.X.Min, p.X.Max = -0.5, float64(len(commits))-0.5
		all := make([][]point, len(points))
		for j, pt := range points {
			for c, commit := range commits {
				x := samples[pooledKey{commit, pt}][key]
				if len(x) == 0 {
					continue
				}
				s := pooledSummary(x)
				all[j] = append(all[j], point{X: float64(c), Y: s.Center, Low: s.Low, High: s.High})
			}
		}
		fitY(p, units[key], all)
		for j, pt := range points {
			if len(all[j]) == 0 {
				continue
			}
			sr := &series{Points: all[j], Color: colorOf(j), Shape: shapes[j%len(shapes)], Line: true}
			p.Add(sr)
			if pt != "" {
				p.Legend.Add(pt, sr)
			}
		}
		f := &Figure{Title: title + " (" + id + ")", Plots: []*plot.Plot{p},
			Desc: fmt.Sprintf("%s of %s for each of %d engine commits, %s: the samples of the commit's ok runs pooled, their mean with its 95%% interval", key, id, len(commits), orderDesc)}
		if len(points) > 1 {
			f.Desc += fmt.Sprintf(", one line per point (%d)", len(points))
		}
		f.Desc += "."
		fig, err := embed(f, fmt.Sprintf("plot-%d", figs+i+1), "Each commit's ok runs pooled: the mean with its 95% interval; the table below holds the values.")
		if err != nil {
			return nil, err
		}
		cv.Figures = append(cv.Figures, fig)
	}
	for _, commit := range commits {
		for _, pt := range points {
			k := pooledKey{commit, pt}
			if runs[k] == 0 {
				continue
			}
			row := commitRow{Commit: commit, First: first[commit], Point: pt, Runs: runs[k]}
			cv.HasPoint = cv.HasPoint || pt != ""
			for _, key := range metrics {
				cell := statCell{Value: "–"}
				if x := samples[k][key]; len(x) > 0 {
					s := pooledSummary(x)
					cell = statCell{Value: fmtStat(s), N: strconv.Itoa(s.N)}
				}
				row.Cells = append(row.Cells, cell)
			}
			cv.Rows = append(cv.Rows, row)
		}
	}
	return cv, nil
}

// orderCommits puts the commits in history order when an order is given
// (a bisect's first-parent walk; commits match by prefix), else leaves
// them in the order first run, and says which for the plot's axis and
// description.
func orderCommits(commits, order []string) (axisName, orderDesc string) {
	if len(order) == 0 {
		return "engine commit, in the order first run", "in the order they were first run"
	}
	pos := func(c string) int {
		for i, o := range order {
			if c != "" && (strings.HasPrefix(o, c) || strings.HasPrefix(c, o)) {
				return i
			}
		}
		return len(order)
	}
	slices.SortStableFunc(commits, func(a, b string) int { return cmp.Compare(pos(a), pos(b)) })
	return "engine commit, in history order (oldest first)", "in history order (the first-parent walk of rigor bisect)"
}

// pooledSummary is the mean of pooled samples with its interval; NaN when
// there are none.
func pooledSummary(x []float64) compare.Summary {
	if len(x) == 0 {
		nan := math.NaN()
		return compare.Summary{Center: nan, Low: nan, High: nan}
	}
	iv := stats.MeanCI(x, confidence)
	return compare.Summary{N: len(x), Center: stats.Mean(x), Low: iv.Low, High: iv.High, Confidence: iv.Confidence}
}

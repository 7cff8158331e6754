package report

import (
	"cmp"
	"fmt"
	"io"
	"strings"

	"gonum.org/v1/plot"

	"github.com/rigorbench/rigor/internal/compare"
	"github.com/rigorbench/rigor/internal/report/text"
)

// diffPage is a comparison: the configuration diff beside the metric
// tables, a strip plot per metric.
type diffPage struct {
	Path, Title string
	// Experiment links back to the experiment's page in a site.
	ExperimentHref string
	A, B           string
	ALabel, BLabel string
	Config         []configRow
	Tables         []metricTable
	OnlyA, OnlyB   string
	Untested       string
	Notes          []string
	Warnings       []string
	Center         string
	Level          string
}

type configRow struct {
	Section, Path, Old, New, Points string
}

type metricTable struct {
	Metric, Caption string
	Single, Holm    bool
	Rows            []diffRow
	Figure          *figureHTML
}

type diffRow struct {
	Point, A, AN, B, BN, Delta, P, PHolm, WelchP, Verdict string
	Class                                                 string
	Geomean                                               bool
}

func newDiffPage(rep *compare.Report, title, path, experiment string) (*diffPage, error) {
	p := &diffPage{Path: path, Title: title, A: text.SideLine(rep.A), B: text.SideLine(rep.B),
		ALabel: rep.A.Label, BLabel: rep.B.Label, Center: string(rep.Center),
		Level: strings.TrimSuffix(fmt.Sprintf("%g", rep.Confidence*100), ".0")}
	if experiment != "" {
		p.ExperimentHref = rel(path, experimentPath(experiment))
	}
	for _, c := range rep.Config {
		p.Config = append(p.Config, configRow{Section: c.Section, Path: c.Path,
			Old: compare.ShowValue(c.Old), New: compare.ShowValue(c.New), Points: strings.Join(c.Points, ", ")})
	}
	single, holm := rep.SinglePoint(), rep.HolmApplied()
	for i, t := range rep.Tables {
		mt := metricTable{Metric: t.Metric, Single: single, Holm: holm}
		mt.Caption = fmt.Sprintf("%s; %s with its %s%% interval", text.DescribeDirection(t.Direction), rep.Center, p.Level)
		if t.Unit != "" {
			mt.Caption = t.Unit + ", " + mt.Caption
		}
		cell := func(s compare.Summary) string {
			if s.N == 0 {
				return "–"
			}
			return compare.FormatNum(s.Center) + " " + text.FormatCI(s, rep.Confidence)
		}
		n := func(s compare.Summary) string {
			if s.N == 0 {
				return ""
			}
			return fmt.Sprint(s.N)
		}
		for _, r := range t.Rows {
			mt.Rows = append(mt.Rows, diffRow{Point: r.Point, A: cell(r.A), AN: n(r.A), B: cell(r.B), BN: n(r.B),
				Delta: compare.FormatDelta(r.Delta), P: compare.FormatP(r.P), PHolm: compare.FormatP(r.PAdjusted),
				WelchP: compare.FormatP(r.WelchP), Verdict: string(r.Verdict), Class: verdictClass(r.Verdict)})
		}
		if g := t.Geomean; g != nil {
			mt.Rows = append(mt.Rows, diffRow{Point: "geomean", A: compare.FormatNum(g.A.Center), B: compare.FormatNum(g.B.Center),
				Delta: compare.FormatDelta(g.Delta), Geomean: true})
		}
		if f := stripFigure(rep, t); f != nil {
			fig, err := embed(f, fmt.Sprintf("plot-%d", i+1), "Every sample of each side; the black bar is the "+string(rep.Center)+" with its interval. The table holds the figures.")
			if err != nil {
				return nil, err
			}
			mt.Figure = &fig
		}
		p.Tables = append(p.Tables, mt)
	}
	p.OnlyA = strings.Join(rep.OnlyA, ", ")
	p.OnlyB = strings.Join(rep.OnlyB, ", ")
	// The same caveats as the CLI's text: why rows are untested and what
	// the samples are.
	p.Untested = rep.Untested
	p.Notes = rep.Notes
	for _, w := range rep.Warnings {
		p.Warnings = append(p.Warnings, w.Error())
	}
	return p, nil
}

func verdictClass(v compare.Verdict) string {
	switch v {
	case compare.Better:
		return "better"
	case compare.Worse:
		return "worse"
	case compare.Changed, compare.Confounded:
		return "changed"
	case compare.Untested:
		return "untested"
	}
	return ""
}

// stripFigure plots both sides' samples of one metric, point by point;
// nil when neither side has a sample.
func stripFigure(rep *compare.Report, t compare.Table) *Figure {
	title := t.Metric + ": " + rep.A.Label + " against " + rep.B.Label
	p := newPlot(title, "point", axisLabel(t.Unit, t.Direction))
	var names []string
	samples := 0
	var legendA, legendB *strip
	for i, r := range t.Rows {
		name := r.Point
		if name == "" {
			name = "all samples"
		}
		names = append(names, name)
		for j, s := range []compare.Summary{r.A, r.B} {
			if s.N == 0 {
				continue
			}
			samples += s.N
			st := &strip{X: float64(i) + []float64{-0.2, 0.2}[j], Samples: s.Samples, Center: s.Center,
				Low: s.Low, High: s.High, Color: colorOf(j), Shape: shapes[j]}
			p.Add(st)
			if j == 0 && legendA == nil {
				legendA = st
			}
			if j == 1 && legendB == nil {
				legendB = st
			}
		}
	}
	if samples == 0 {
		return nil
	}
	if legendA != nil {
		p.Legend.Add("A: "+rep.A.Label, legendA)
	}
	if legendB != nil {
		p.Legend.Add("B: "+rep.B.Label, legendB)
	}
	if len(t.Rows) == 1 && t.Rows[0].Point == "" {
		p.X.Label.Text = ""
	}
	p.X.Tick.Marker = nominalTicks(names)
	slantTicks(p, len(names))
	p.X.Min, p.X.Max = -0.6, float64(len(names))-0.4
	padY(p)
	desc := fmt.Sprintf("Every sample of %s on side A (%s) and side B (%s)", t.Metric, rep.A.Label, rep.B.Label)
	if len(names) > 1 {
		desc += fmt.Sprintf(", at %d points", len(names))
	}
	desc += fmt.Sprintf(", each with its %s and interval; %s.", rep.Center, text.DescribeDirection(t.Direction))
	return &Figure{Title: title, Desc: desc, Plots: []*plot.Plot{p}}
}

// DiffFigure plots a report's metrics, one strip plot per metric table
// (at most four, in the report's order), stacked; for `rigor diff --plot`.
// It returns nil when no table has a sample.
func DiffFigure(rep *compare.Report) *Figure {
	out := &Figure{Title: rep.A.Label + " against " + rep.B.Label}
	var descs []string
	for _, t := range rep.Tables {
		if len(out.Plots) == maxMetrics {
			break
		}
		if f := stripFigure(rep, t); f != nil {
			out.Plots = append(out.Plots, f.Plots...)
			descs = append(descs, f.Desc)
		}
	}
	if len(out.Plots) == 0 {
		return nil
	}
	out.Desc = strings.Join(descs, " ")
	return out
}

// DiffOptions tune [DiffPage].
type DiffOptions struct {
	// Title heads the page; "" means "A against B".
	Title   string
	Version string
}

// DiffPage writes a comparison as one self-contained HTML page: the
// configuration diff beside the metric tables, a strip plot of both
// sides' samples per metric, and the warnings.
func DiffPage(w io.Writer, rep *compare.Report, opts DiffOptions) error {
	title := cmp.Or(opts.Title, rep.A.Label+" against "+rep.B.Label)
	p, err := newDiffPage(rep, title, "diff.html", "")
	if err != nil {
		return err
	}
	html, err := render("diff.html", Options{Version: opts.Version}, title, "", p)
	if err != nil {
		return err
	}
	_, err = w.Write(html)
	return err
}

package report

import (
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/rigorbench/rigor/internal/compare"
	"github.com/rigorbench/rigor/internal/results"
)

// qualityView is an experiment page's speed-vs-quality section: the
// scatter of its points and its baseline's peers (mean KLD against the
// decode rate) with the Pareto front, and the table below it.
type qualityView struct {
	Figure  figureHTML
	Caption string
	// Unit is the speed's unit, for the table's head.
	Metric, Unit string
	Rows         []qualityRow
	// NotDrawn says which points are left out and why; "" when none.
	NotDrawn string
}

type qualityRow struct {
	Point, Run, Speed, SpeedN, KLD, KLD99, SameTop, PPLRatio string
	Pareto, Baseline                                         bool
}

// measuredRuns are the runs that measured quality: the peers every
// experiment's speed-vs-quality view may draw from.
func measuredRuns(runs []*results.Run) []*results.Run {
	var out []*results.Run
	for _, r := range runs {
		if r.Quality != nil && r.Quality.Measured != nil {
			out = append(out, r)
		}
	}
	return out
}

// newQualityView is the speed-vs-quality section of experiment id from
// its runs and peers (runs of other experiments, of which those measured
// against the same baseline are drawn); nil when no run of id measured
// quality.
func newQualityView(id string, runs, peers []*results.Run) (*qualityView, error) {
	all := make([]*results.Run, 0, len(runs)+len(peers))
	all = append(all, runs...)
	for _, r := range peers {
		if r.Experiment != id {
			all = append(all, r)
		}
	}
	sq := compare.SpeedQualityOf(all, id)
	if sq == nil {
		return nil, nil
	}
	v := &qualityView{Metric: sq.Metric, Unit: sq.Unit, NotDrawn: notDrawn(sq)}
	for _, p := range sq.Points {
		row := qualityRow{Point: p.Point, Run: p.Run, Speed: fmtMetricStat(p.Speed), SpeedN: strconv.Itoa(p.Speed.N),
			KLD:   fmtKLD(p.Q.KLD) + " ± " + fmtKLD(1.96*p.Q.KLDErr),
			KLD99: fmtKLD(p.Q.KLD99), SameTop: strconv.FormatFloat(p.Q.SameTop, 'f', 1, 64) + "%",
			PPLRatio: strconv.FormatFloat(p.Q.PPLRatio, 'f', 4, 64), Pareto: p.Pareto, Baseline: p.Baseline}
		if p.Baseline {
			row.KLD = "0"
		}
		v.Rows = append(v.Rows, row)
	}
	v.Caption = fmt.Sprintf("Speed against quality, each point's latest ok run: %s (the primary output rate, its mean with a 95%% interval) against the mean KL divergence from %s on %s (ctx %d, %d tokens), on a log axis; the baseline, 0 KLD against itself, sits at the axis' left edge. The line joins the Pareto front: the points no other point beats on both, by their means.",
		sq.Metric, sq.Baseline, sq.Corpus, sq.Ctx, sq.Tokens)
	if sq.Form != "full" {
		v.Caption += " The KL divergence is the " + sq.Form + " form: a lower bound of the full."
	}
	if v.NotDrawn != "" {
		v.Caption += " " + v.NotDrawn
	}
	if len(sq.Points) == 0 {
		return v, nil
	}
	fig, err := embed(speedQualityFigure(id, sq), "plot-quality", v.Caption)
	if err != nil {
		return nil, err
	}
	v.Figure = fig
	return v, nil
}

// notDrawn says which points the view leaves out.
func notDrawn(sq *compare.SpeedQuality) string {
	var parts []string
	if sq.Unmeasured > 0 {
		parts = append(parts, plural(sq.Unmeasured, "point", "points")+" with no quality measured")
	}
	if sq.Other > 0 {
		parts = append(parts, plural(sq.Other, "point", "points")+" measured on another corpus, ctx or baseline lock")
	}
	if sq.NoSpeed > 0 {
		parts = append(parts, plural(sq.NoSpeed, "point", "points")+" without "+sq.Metric)
	}
	if len(parts) == 0 {
		return ""
	}
	return "Not drawn: " + strings.Join(parts, "; ") + "."
}

// fmtKLD writes a divergence as diff's quality table does.
func fmtKLD(v float64) string { return compare.FormatKLD(v) }

func fmtMetricStat(m compare.MetricStat) string {
	return fmtStat(compare.Summary{N: m.N, Center: m.Mean, Low: m.Low, High: m.High, Confidence: confidence})
}

// speedQualityFigure draws the view: x the mean KLD on a log axis, the
// baseline's 0 at its left edge, labelled; y the speed with its interval;
// the front as a line through its points, in KLD order.
func speedQualityFigure(id string, sq *compare.SpeedQuality) *Figure {
	minPos := math.Inf(1)
	maxPos := 0.0
	for _, p := range sq.Points {
		if p.Q.KLD > 0 {
			minPos, maxPos = math.Min(minPos, p.Q.KLD), math.Max(maxPos, p.Q.KLD)
		}
	}
	if math.IsInf(minPos, 1) { // every point at 0 KLD
		minPos, maxPos = 1e-6, 1e-6
	}
	lo := math.Floor(math.Log10(minPos)) - 0.5 // the baseline's 0 is drawn here
	hi := math.Ceil(math.Log10(maxPos) + 0.1)
	xOf := func(kld float64) float64 {
		if kld <= 0 {
			return lo
		}
		return math.Log10(kld)
	}
	p := newPlot(id+": speed against quality", "mean KL divergence from "+sq.Baseline+" (log), lower is better ←",
		axisLabel(sq.Metric+" "+sq.Unit, "higher"))
	p.X.Min, p.X.Max = lo-0.15, hi
	p.X.Tick.Marker = kldTicks{lo: lo}
	var front, others []point
	var fy [][]point
	for _, q := range sq.Points {
		pt := point{X: xOf(q.Q.KLD), Y: q.Speed.Mean, Low: q.Speed.Low, High: q.Speed.High}
		if q.Pareto {
			front = append(front, pt)
		} else {
			others = append(others, pt)
		}
	}
	fy = append(fy, front, others)
	fitY(p, sq.Unit, fy)
	fs := &series{Points: front, Color: colorOf(0), Shape: draw.CircleGlyph{}, Line: true}
	os := &series{Points: others, Color: colorOf(1), Shape: draw.SquareGlyph{}}
	p.Add(fs)
	p.Legend.Add("Pareto front", fs)
	if len(others) > 0 {
		p.Add(os)
		p.Legend.Add("beaten", os)
	}
	p.Add(&pointLabels{pts: sq.Points, xOf: xOf})
	var desc strings.Builder
	fmt.Fprintf(&desc, "%d points, mean KLD from %s against %s:", len(sq.Points), sq.Baseline, sq.Metric)
	for _, q := range sq.Points {
		mark := ""
		if q.Pareto {
			mark = " (Pareto front)"
		}
		fmt.Fprintf(&desc, " %s %s KLD, %s %s%s;", q.Point, fmtKLD(q.Q.KLD), compare.FormatNum(q.Speed.Mean), sq.Unit, mark)
	}
	return &Figure{Title: id + ": speed against quality (KL divergence from " + sq.Baseline + ")", Desc: strings.TrimSuffix(desc.String(), ";"), Plots: []*plot.Plot{p}}
}

// kldTicks label a log10 axis of KLD at its powers of ten, and its left
// edge, lo, as the baseline's 0.
type kldTicks struct{ lo float64 }

func (k kldTicks) Ticks(min, max float64) []plot.Tick {
	out := []plot.Tick{{Value: k.lo, Label: "0 (baseline)"}}
	for e := math.Ceil(min); e <= max; e++ {
		if e-k.lo < 0.4 {
			continue
		}
		out = append(out, plot.Tick{Value: e, Label: "1e" + strconv.Itoa(int(e))})
	}
	return out
}

// pointLabels names each point beside its marker.
type pointLabels struct {
	pts []compare.QualityPoint
	xOf func(float64) float64
}

func (l *pointLabels) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	sty := draw.TextStyle{Color: color.Gray{60}, Font: p.X.Tick.Label.Font, Handler: p.X.Tick.Label.Handler}
	sty.Font.Size = vg.Points(8.5)
	for _, q := range l.pts {
		name := q.Point
		if i := strings.LastIndexByte(name, '/'); i >= 0 && !strings.Contains(name[:i], "[") {
			name = name[i+1:]
		}
		c.FillText(sty, vg.Point{X: trX(l.xOf(q.Q.KLD)) + vg.Points(5), Y: trY(q.Speed.Mean) + vg.Points(3)}, name)
	}
}

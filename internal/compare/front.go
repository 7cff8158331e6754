package compare

import (
	"cmp"
	"slices"
	"strings"

	"github.com/rigorbench/rigor/internal/compare/stats"
	"github.com/rigorbench/rigor/internal/metric"
	"github.com/rigorbench/rigor/internal/results"
)

// SpeedQuality is the speed-vs-quality view of points measured against
// one baseline (quality.measure): each point's decode rate beside its
// mean KL divergence from the baseline, and the Pareto front of the two.
// It is the substance of the speed–quality table of `rigor log` and of
// the scatter of `rigor report`.
type SpeedQuality struct {
	// Baseline is the baseline experiment; Corpus, Ctx and Tokens what
	// every point was measured on.
	Baseline string
	Corpus   string
	Ctx      int
	Tokens   int
	// Form is the KL divergence's form every point has ("full", or
	// "top-20": a lower bound of the full).
	Form string
	// Metric is the speed metric's key (the primary output rate: the
	// first tokSOut key the points have, as the log's chart takes it) and
	// Unit its unit.
	Metric string
	Unit   string
	// Points are ordered by mean KLD, then by speed, fastest first.
	Points []QualityPoint
	// Unmeasured counts the points of the experiment whose latest ok run
	// measured no quality (a run before quality.measure); Other
	// those measured on another corpus, ctx or baseline lock than the
	// view's; NoSpeed those measured whose run has no Metric. None of
	// them is drawn.
	Unmeasured, Other, NoSpeed int
}

// QualityPoint is one point of a [SpeedQuality]: the latest ok run of a
// point, which measured quality, its speed and its quality.
type QualityPoint struct {
	// Point is the point's id (the experiment id, with its swept values).
	Point string
	Run   string
	// Speed is the run's speed metric: the mean of its samples and their
	// 95% interval (NaN bounds with one sample).
	Speed MetricStat
	Q     *results.QualityMeasured
	// Baseline is the baseline experiment's own run (0 KLD by
	// definition); Pareto marks the points of the front.
	Baseline bool
	Pareto   bool
}

// SpeedQualityOf is the speed-vs-quality view of experiment id: its
// points and those of the other experiments among runs measured against
// the same baseline (the baseline's own runs included), each point's
// latest ok run that measured quality. nil when no run of id measured
// quality.
func SpeedQualityOf(runs []*results.Run, id string) *SpeedQuality {
	// The latest ok run of each point (as diff takes it), and whether it
	// measured quality.
	latest := map[string]*results.Run{}
	var order []string
	ownPoints := map[string]bool{}
	for _, r := range runs {
		if r.Experiment == id {
			ownPoints[r.Point] = true
		}
		if r.Status != results.StatusOK {
			continue
		}
		prev, ok := latest[r.Point]
		if !ok {
			order = append(order, r.Point)
		}
		if !ok || runOrder(prev, r) < 0 {
			latest[r.Point] = r
		}
	}
	measured := func(r *results.Run) bool { return r != nil && r.Quality != nil && r.Quality.Measured != nil }
	order = slices.DeleteFunc(order, func(p string) bool { return !measured(latest[p]) })
	// The view's reference: the measurement of id's latest measured run.
	var ref *results.Run
	for _, p := range order {
		if r := latest[p]; r.Experiment == id && (ref == nil || runOrder(ref, r) < 0) {
			ref = r
		}
	}
	if ref == nil {
		return nil
	}
	q0 := ref.Quality.Measured
	sq := &SpeedQuality{Baseline: q0.Baseline, Corpus: q0.Corpus, Ctx: q0.Ctx, Tokens: q0.Tokens, Form: q0.FormName()}
	for p := range ownPoints {
		if !measured(latest[p]) {
			sq.Unmeasured++
		}
	}
	var members []*results.Run
	for _, p := range order {
		r := latest[p]
		q := r.Quality.Measured
		if q.Baseline != q0.Baseline {
			continue // another baseline's view
		}
		if q0.Comparable(q) != "" {
			sq.Other++
			continue
		}
		members = append(members, r)
	}
	sq.Metric = speedMetric(members)
	for _, r := range members {
		ms, ok := runMetric(r, sq.Metric)
		if !ok {
			sq.NoSpeed++
			continue
		}
		sq.Unit = cmp.Or(sq.Unit, ms.Unit)
		sq.Points = append(sq.Points, QualityPoint{Point: r.Point, Run: r.ID, Speed: ms, Q: r.Quality.Measured,
			Baseline: r.Experiment == q0.Baseline})
	}
	slices.SortStableFunc(sq.Points, func(a, b QualityPoint) int {
		if c := cmp.Compare(a.Q.KLD, b.Q.KLD); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Speed.Mean, a.Speed.Mean); c != 0 {
			return c
		}
		return strings.Compare(a.Point, b.Point)
	})
	front := ParetoFront(sq.Points)
	for i := range sq.Points {
		sq.Points[i].Pareto = front[i]
	}
	return sq
}

// ParetoFront marks the points no other point beats on both speed and
// KLD: a point is off the front when another is at least as fast and at
// most as divergent, and strictly better in one of the two. The front is
// of the centers (the mean speed, the mean KLD), not of the intervals: two
// points whose intervals overlap are still ordered by their means, and the
// table beside the front shows the intervals that say how sure that order
// is. Points equal on both are both on the front. The baseline (0 KLD
// against itself) is on the front by definition, even where another point
// with 0 KLD is faster.
func ParetoFront(pts []QualityPoint) []bool {
	on := make([]bool, len(pts))
	for i, p := range pts {
		on[i] = true
		if p.Baseline {
			continue
		}
		for j, o := range pts {
			if i == j {
				continue
			}
			if o.Speed.Mean >= p.Speed.Mean && o.Q.KLD <= p.Q.KLD && (o.Speed.Mean > p.Speed.Mean || o.Q.KLD < p.Q.KLD) {
				on[i] = false
				break
			}
		}
	}
	return on
}

// speedMetric is the primary output rate of the runs: the first tokSOut
// key (in the order the runs' metrics come) that the most runs have.
func speedMetric(runs []*results.Run) string {
	count := map[string]int{}
	var keys []string
	for _, r := range runs {
		for _, m := range r.Metrics {
			k := m.Key()
			if !(k == metric.TokSOut || strings.HasPrefix(k, metric.TokSOut+" ")) {
				continue
			}
			if count[k] == 0 {
				keys = append(keys, k)
			}
			count[k]++
		}
	}
	best := ""
	for _, k := range keys {
		if best == "" || count[k] > count[best] {
			best = k
		}
	}
	return best
}

// runMetric is the run's metric key with its statistics, from its samples
// (else its value alone).
func runMetric(r *results.Run, key string) (MetricStat, bool) {
	if key == "" {
		return MetricStat{}, false
	}
	for _, m := range r.Metrics {
		if m.Key() != key {
			continue
		}
		x := m.Samples
		if len(x) == 0 {
			x = []float64{m.Value}
		}
		ci := stats.MeanCI(x, 0.95)
		return MetricStat{Key: key, Name: m.Name, Test: m.Test, Unit: m.Unit, N: len(x), Mean: stats.Mean(x),
			Stddev: stats.Stddev(x), Low: ci.Low, High: ci.High, Min: slices.Min(x), Max: slices.Max(x)}, true
	}
	return MetricStat{}, false
}

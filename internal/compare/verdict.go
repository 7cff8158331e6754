package compare

import (
	"fmt"
	"math"
	"slices"

	"github.com/rigorbench/rigor/internal/compare/stats"
	"github.com/rigorbench/rigor/internal/results"
)

// This file decides which rows may carry a verdict (issue 25). A verdict
// (better, worse, changed) is given only when the units are runs and the
// design separates the change from the machine's drift:
//
//  1. paired rounds: runs of A and B interleaved in the rounds of one
//     invocation (rigor run A B --rounds K), tested by the paired t-test of
//     the log ratios ([DecidePairedT]);
//  2. separate invocations with a noise estimate: the mean of each side's
//     invocations, tested against the spread of the invocation means of
//     earlier invocations of the same experiment, point, lock and host
//     ([DecideHistory]), at the stricter level [Options.HistoryAlpha]
//     (a fifth of α by default): it assumes today's noise is the
//     history's, which the paired design does not.
//
// Everything else (one run a side, the repetitions inside runs, the
// requests of a serve run, runs of separate invocations without a noise
// estimate) is [Untested]: the row shows the delta and each side's
// interval, and the report says which command would make it testable.

// Test decided by the history of earlier invocations.
const DecideHistory = "invocations-t"

// MinHistoryDF is the least number of degrees of freedom of the noise
// between invocations (invocations minus one, summed over the groups of
// one lock and host) that a [DecideHistory] test needs: three earlier
// invocations of one lock.
const MinHistoryDF = 2

// serveTest is the test name of a serve run's metrics (internal/engine/serve.Test):
// their samples are requests, not repetitions, so a run counts as one
// sample, its summary (mean, median, percentile) as recorded.
const serveTest = "serve"

// noise is the spread of the log invocation means of one point and
// metric: the sum of squared deviations from each group's mean and its
// degrees of freedom.
type invNoise struct {
	ss          float64
	df          int
	invocations int
}

func (n invNoise) sd() float64 { return math.Sqrt(n.ss / float64(n.df)) }

// invocationOf is the invocation a run belongs to: its recorded
// invocation, else the run itself.
func invocationOf(r *results.Run) string {
	if r.Invocation != "" {
		return r.Invocation
	}
	return "run:" + r.ID
}

// runValue is a run's one value of a metric: the mean of its samples, or
// the recorded value of a serve metric or one without samples; ok false
// when the run has none.
func runValue(m results.Metric) (float64, bool) {
	switch {
	case m.Test == serveTest || len(m.Samples) == 0:
		if m.Value == 0 && m.Unit == "" {
			return 0, false
		}
		return m.Value, true
	}
	return stats.Mean(m.Samples), true
}

// historyNoise estimates, per point and metric, the noise between
// invocations from the history: runs grouped by experiment, point, lock
// digest and host, each invocation one value (the mean of its runs' log
// values). Only groups of an experiment, lock and host that one of the
// sides ran on count, and the sides' own invocations are left out, so
// that the estimate is independent of the difference it judges.
func historyNoise(hist []results.Run, sides []*side) map[string]invNoise {
	if len(hist) == 0 {
		return nil
	}
	type gkey struct{ exp, point, lock, host string }
	own := map[string]bool{}
	want := map[gkey]bool{}
	for _, sd := range sides {
		for _, p := range sd.order {
			for _, r := range p.used {
				own[invocationOf(r)] = true
				want[gkey{r.Experiment, p.key, r.LockDigest, hostOf(r)}] = true
			}
		}
	}
	// group → metric → invocation → log values
	vals := map[gkey]map[string]map[string][]float64{}
	for i := range hist {
		r := &hist[i]
		if r.Status != results.StatusOK || own[invocationOf(r)] {
			continue
		}
		pk, _ := sweptKey(r.Swept)
		g := gkey{r.Experiment, pk, r.LockDigest, hostOf(r)}
		if !want[g] {
			continue
		}
		if vals[g] == nil {
			vals[g] = map[string]map[string][]float64{}
		}
		for _, m := range r.Metrics {
			v, ok := runValue(m)
			if !ok || !(v > 0) {
				continue
			}
			k := m.Key()
			if vals[g][k] == nil {
				vals[g][k] = map[string][]float64{}
			}
			inv := invocationOf(r)
			vals[g][k][inv] = append(vals[g][k][inv], math.Log(v))
		}
	}
	// Each invocation adds the mean squared deviation of its runs from
	// the group's mean (the mean of the invocation means): for a
	// one-run invocation its squared deviation; for one of several runs
	// about σ²between + σ²within, the variance of one run's value, not of
	// a mean of several. The estimate is then right for sides of one run
	// an invocation and conservative for sides of several, even when the
	// history mixes rounds invocations with single runs.
	out := map[string]invNoise{}
	for g, byMetric := range vals {
		for k, byInv := range byMetric {
			if len(byInv) < 2 {
				continue
			}
			var means []float64
			for _, xs := range byInv {
				means = append(means, stats.Mean(xs))
			}
			mu := stats.Mean(means)
			n := out[g.point+"\x00"+k]
			for _, xs := range byInv {
				var sq float64
				for _, x := range xs {
					sq += (x - mu) * (x - mu)
				}
				n.ss += sq / float64(len(xs))
			}
			n.df += len(means) - 1
			n.invocations += len(means)
			out[g.point+"\x00"+k] = n
		}
	}
	return out
}

// hostOf is the host a run ran on, by its rig's hostname (what the
// results index keeps).
func hostOf(r *results.Run) string {
	if r.Rig == nil {
		return ""
	}
	return r.Rig.Hostname
}

// invocationMeans returns a side's log values of one metric, one per
// invocation (the mean of its runs' log values), in invocation order.
func invocationMeans(recs []recSamples) (vals []float64, invs []string) {
	by := map[string][]float64{}
	for _, r := range recs {
		v := r.mean()
		if !(v > 0) {
			continue
		}
		k := invocationOf(r.run)
		if by[k] == nil {
			invs = append(invs, k)
		}
		by[k] = append(by[k], math.Log(v))
	}
	for _, k := range invs {
		vals = append(vals, stats.Mean(by[k]))
	}
	return vals, invs
}

// historyTest is the test of two sides from separate invocations: the
// difference of the sides' mean log invocation values against the noise
// between invocations of the history, pooled with the sides' own spread
// when a side has several invocations. It returns the two-sided p and the
// sign of the difference; ok false when the sides share an invocation or
// the noise estimate has fewer than [MinHistoryDF] degrees of freedom.
func historyTest(a, b []recSamples, est invNoise) (p float64, up, ok bool) {
	va, ia := invocationMeans(a)
	vb, ib := invocationMeans(b)
	if len(va) == 0 || len(vb) == 0 || est.df < MinHistoryDF {
		return math.NaN(), false, false
	}
	for _, k := range ia {
		if slices.Contains(ib, k) {
			return math.NaN(), false, false
		}
	}
	ss, df := est.ss, est.df
	for _, v := range [][]float64{va, vb} {
		if len(v) > 1 {
			mu := stats.Mean(v)
			for _, x := range v {
				ss += (x - mu) * (x - mu)
			}
			df += len(v) - 1
		}
	}
	s := math.Sqrt(ss / float64(df))
	d := stats.Mean(vb) - stats.Mean(va)
	se := s * math.Sqrt(1/float64(len(va))+1/float64(len(vb)))
	if !(se > 0) {
		return math.NaN(), false, false
	}
	t := d / se
	return math.Min(1, 2*stats.TSF(math.Abs(t), float64(df))), d > 0, true
}

// confounder says whether the machine's state differs between the sides
// enough to explain a change of the observed size and direction, and
// names the state: the share of the cores other processes took, the
// share of the wall time the engine got the CPU on a busy machine, or the
// CPU clock. It compares the mean over each side's runs; "" when nothing
// explains it or a side recorded no state.
func confounder(row *Row, dir string) string {
	if math.IsNaN(row.Delta) || row.Delta == 0 {
		return ""
	}
	observed := math.Log1p(row.Delta / 100)
	sign := 1.0 // a higher figure goes with a faster machine
	if dir == results.LowerIsBetter {
		sign = -1
	}
	explains := func(implied float64) bool {
		// The state predicts a change in the same direction of at least
		// half the size observed.
		return implied*observed > 0 && math.Abs(implied) >= math.Abs(observed)/2
	}
	share := func(runs []*results.Run) (float64, int, bool) {
		var sum float64
		n, cores := 0, 0
		for _, r := range runs {
			st := r.Machine
			if st == nil || st.OtherCores == nil || st.Cores <= 0 {
				continue
			}
			sum += math.Min(1, *st.OtherCores/float64(st.Cores))
			cores = st.Cores
			n++
		}
		if n == 0 {
			return 0, 0, false
		}
		return sum / float64(n), cores, true
	}
	sa, ca, oka := share(row.runsA)
	sb, cb, okb := share(row.runsB)
	if oka && okb && sa < 1 && sb < 1 {
		implied := sign * (math.Log(1-sb) - math.Log(1-sa))
		if explains(implied) && math.Abs(sb-sa) >= 0.05 {
			return fmt.Sprintf("other processes took %.1f of %d cores during B's runs against %.1f of %d during A's",
				sb*float64(cb), cb, sa*float64(ca), ca)
		}
	}
	// On a busy machine, the share of the wall time the engine got the
	// CPU says how much the others took from it.
	engineCPU := func(runs []*results.Run) (float64, bool) {
		var sum float64
		n := 0
		for _, r := range runs {
			st := r.Machine
			if st == nil || st.WallSeconds <= 0 || st.EngineCPUSeconds <= 0 {
				continue
			}
			if busy, _ := st.Busy(0.5); !busy {
				return 0, false
			}
			sum += st.EngineCPUSeconds / st.WallSeconds
			n++
		}
		if n == 0 {
			return 0, false
		}
		return sum / float64(n), true
	}
	ea, oka := engineCPU(row.runsA)
	eb, okb := engineCPU(row.runsB)
	if oka && okb && math.Abs(math.Log(eb/ea)) >= math.Log(1.25) {
		implied := sign * (math.Log(eb) - math.Log(ea))
		if explains(implied) {
			return fmt.Sprintf("the machine was busy and the engine got %.2f of the wall time on the CPU during B's runs against %.2f during A's", eb, ea)
		}
	}
	clock := func(runs []*results.Run) (float64, bool) {
		var sum float64
		n := 0
		for _, r := range runs {
			if st := r.Machine; st != nil && st.Peak != nil && st.Peak.CPUMHzMin > 0 {
				sum += st.Peak.CPUMHzMin
				n++
			}
		}
		if n == 0 {
			return 0, false
		}
		return sum / float64(n), true
	}
	ka, oka := clock(row.runsA)
	kb, okb := clock(row.runsB)
	if oka && okb {
		implied := sign * (math.Log(kb) - math.Log(ka))
		if explains(implied) && math.Abs(kb/ka-1) >= 0.03 {
			return fmt.Sprintf("the lowest CPU clock was %.0f MHz during B's runs against %.0f MHz during A's", kb, ka)
		}
	}
	return ""
}

// untestedWhy says why a row carries no verdict.
func untestedWhy(row *Row, sameInvocation bool) string {
	switch {
	case row.serve:
		if row.A.N < 2 || row.B.N < 2 {
			return "serve runs, one a side: the requests of a run are not repetitions, the unit is the run"
		}
	case row.SampleUnit == UnitRepetitions:
		return "the samples are repetitions inside one run a side, which share the machine's state of their minute"
	}
	if sameInvocation {
		return "the runs of A and B do not pair up by round"
	}
	return "A and B ran in separate invocations and there is no estimate of the noise between invocations"
}

// sideID is the id to name a side by in a command: its one point, else its
// one experiment, else "".
func sideID(sd *side) string {
	var points, exps []string
	for _, p := range sd.order {
		for _, r := range p.used {
			if r.Point != "" && !slices.Contains(points, r.Point) {
				points = append(points, r.Point)
			}
			if r.Experiment != "" && !slices.Contains(exps, r.Experiment) {
				exps = append(exps, r.Experiment)
			}
		}
	}
	switch {
	case len(points) == 1:
		return points[0]
	case len(exps) == 1:
		return exps[0]
	}
	return ""
}

// testableLine is the one line that says what makes an untested
// comparison testable: the command that interleaves the sides, or the
// invocations that give a noise estimate.
func testableLine(sa, sb *side, why string) string {
	a, b := sideID(sa), sideID(sb)
	switch {
	case a != "" && b != "" && a != b:
		return fmt.Sprintf("untested: %s; 'rigor run %s %s --rounds 5' runs A and B interleaved in one invocation and gives a verdict", why, a, b)
	case a != "":
		return fmt.Sprintf("untested: %s; a verdict needs A and B interleaved in one invocation ('rigor run %s OTHER --rounds 5'), or %d earlier invocations of the same lock on this host ('rigor run %s', repeated) for an estimate of the noise between invocations",
			why, a, MinHistoryDF+1, a)
	}
	return fmt.Sprintf("untested: %s; 'rigor run A B --rounds 5' runs two experiments interleaved in one invocation and gives a verdict", why)
}

// sharesInvocation reports whether any run of one list ran in an
// invocation of the other.
func sharesInvocation(a, b []recSamples) bool {
	inv := map[string]bool{}
	for _, r := range a {
		if r.run.Invocation != "" {
			inv[r.run.Invocation] = true
		}
	}
	for _, r := range b {
		if inv[r.run.Invocation] {
			return true
		}
	}
	return false
}

func runsOf(recs []recSamples) []*results.Run {
	out := make([]*results.Run, len(recs))
	for i, r := range recs {
		out[i] = r.run
	}
	return out
}

// describeFamily is the note on the Holm family: how many comparisons it
// held, over metrics and points.
func describeFamily(k int) string {
	if k < 2 {
		return ""
	}
	return fmt.Sprintf("the p-values of the %d tested rows (every metric at every point) are one family, corrected together by Holm's method", k)
}

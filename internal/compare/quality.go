package compare

import (
	"math"
	"slices"

	"github.com/rigorbench/rigor/internal/compare/stats"
	"github.com/rigorbench/rigor/internal/results"
)

// QualityRow is the measured quality of one matched point on each side
// (record.quality.measured of the point's latest run that has one), set
// beside the speed tables.
type QualityRow struct {
	// Point labels the point as the speed rows do.
	Point string
	// A and B are each side's measurement; nil when the side measured
	// none.
	A, B *results.QualityMeasured
	// NotComparable says why the two cannot be set side by side (another
	// corpus, context size, tokens or baseline); "" when they can.
	NotComparable string
	// Verdict compares the mean KL divergence: [Better] is less
	// divergence from the baseline; [Inconclusive] when the difference is
	// within the intervals; [NoVerdict] when a side has none or they are
	// not comparable.
	Verdict Verdict
	// Delta is B's mean KLD minus A's.
	Delta float64
}

// measuredOf is the quality measured by the latest run of p that has one.
func measuredOf(p *point) *results.QualityMeasured {
	runs := p.used
	if len(runs) == 0 {
		runs = p.runs
	}
	var best *results.Run
	for _, r := range runs {
		if r.Quality != nil && r.Quality.Measured != nil && (best == nil || runOrder(best, r) < 0) {
			best = r
		}
	}
	if best == nil {
		return nil
	}
	return best.Quality.Measured
}

// qualityRow compares the quality measured at a matched pair of points;
// false when neither side measured any. The difference of the mean KLDs
// is tested against their standard errors (each the tool's, from the
// spread over the scored tokens) at alpha, two-sided; both sides scored
// the same tokens, so the errors' correlation is left out, which makes
// the test conservative.
func qualityRow(a, b *point, label string, alpha float64) (QualityRow, bool) {
	qa, qb := measuredOf(a), measuredOf(b)
	if qa == nil && qb == nil {
		return QualityRow{}, false
	}
	row := QualityRow{Point: label, A: qa, B: qb}
	if qa == nil || qb == nil {
		return row, true
	}
	if why := qa.Comparable(qb); why != "" {
		row.NotComparable = why
		return row, true
	}
	row.Delta = qb.KLD - qa.KLD
	se := math.Hypot(qa.KLDErr, qb.KLDErr)
	z := stats.ZCritical(alpha)
	switch {
	case row.Delta == 0 || se > 0 && math.Abs(row.Delta) <= z*se:
		row.Verdict = Inconclusive
	case row.Delta < 0:
		row.Verdict = Better
	default:
		row.Verdict = Worse
	}
	return row, true
}

// qualityMeasuredEverywhere reports whether every matched pair has
// comparable measurements on both sides: then a declared quality
// trade-off is shown as measured, not as a mismatch.
func qualityMeasuredEverywhere(rows []QualityRow, pairs int) bool {
	if pairs == 0 || len(rows) != pairs {
		return false
	}
	for _, r := range rows {
		if r.A == nil || r.B == nil || r.NotComparable != "" {
			return false
		}
	}
	return true
}

// dropQualityMismatch removes the quality trade-off mismatch and its
// warning, and says where its cost is: in the quality table.
func dropQualityMismatch(rep *Report) {
	i := slices.IndexFunc(rep.Mismatches, func(m Mismatch) bool { return m.Field == "quality" })
	if i < 0 {
		return
	}
	m := rep.Mismatches[i]
	rep.Mismatches = slices.Delete(rep.Mismatches, i, i+1)
	msg := shortenHashes(m.String())
	rep.Warnings = slices.DeleteFunc(rep.Warnings, func(w Warning) bool { return w.Kind == WarnIncomparable && w.Message == msg })
	rep.Notes = append(rep.Notes, msg+": measured on both sides, its cost is in the quality table")
}

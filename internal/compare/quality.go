package compare

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

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
	z := zCritical(alpha)
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

// zCritical is the two-sided normal critical value at alpha.
func zCritical(alpha float64) float64 {
	return math.Sqrt2 * math.Erfinv(1-alpha)
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

// renderQuality writes the quality table: mean KLD ± its interval, PPL
// ratio to the baseline, same top token, per point and side.
func renderQuality(rep *Report, confidence float64) string {
	if len(rep.Quality) == 0 {
		return ""
	}
	var b strings.Builder
	z := zCritical(1 - confidence)
	var base *results.QualityMeasured
	for _, r := range rep.Quality {
		if r.A != nil {
			base = r.A
			break
		}
		if r.B != nil {
			base = r.B
			break
		}
	}
	fmt.Fprintf(&b, "quality against %s (%s, ctx %d, %d tokens; ± %.0f%% CI)\n", base.Baseline, base.Corpus, base.Ctx, base.Tokens, confidence*100)
	cell := func(q *results.QualityMeasured) string {
		if q == nil {
			return "(not measured)"
		}
		return fmt.Sprintf("KLD %s ± %s  PPL×%.4f  top %.2f%%", fmtKLD(q.KLD), fmtKLD(z*q.KLDErr), q.PPLRatio, q.SameTop)
	}
	w := max(utf8.RuneCountInString(rep.A.Label), utf8.RuneCountInString(rep.B.Label))
	for _, r := range rep.Quality {
		point := r.Point
		if point == "" {
			point = "(no sweep)"
		}
		fmt.Fprintf(&b, "  %s\n", point)
		fmt.Fprintf(&b, "    %-*s  %s\n", w, rep.A.Label, cell(r.A))
		fmt.Fprintf(&b, "    %-*s  %s\n", w, rep.B.Label, cell(r.B))
		switch {
		case r.NotComparable != "":
			fmt.Fprintf(&b, "    not comparable: %s\n", r.NotComparable)
		case r.Verdict == Better:
			fmt.Fprintf(&b, "    KLD %s: closer to the baseline\n", fmtKLD(r.Delta))
		case r.Verdict == Worse:
			fmt.Fprintf(&b, "    KLD +%s: further from the baseline\n", fmtKLD(r.Delta))
		case r.Verdict == Inconclusive:
			fmt.Fprintf(&b, "    KLD %s: ~ (within the intervals)\n", fmtKLD(r.Delta))
		}
	}
	return b.String()
}

// fmtKLD writes a KL divergence: 0 as 0, below 0.001 with 3 significant
// digits in exponent form (a Q8_0's 1.41e-05), else with 6 decimals.
func fmtKLD(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.Abs(v) < 0.001:
		return strconv.FormatFloat(v, 'e', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 6, 64)
}

package text

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/rigorbench/rigor/internal/compare"
	"github.com/rigorbench/rigor/internal/compare/stats"
	"github.com/rigorbench/rigor/internal/results"
)

var _ = compare.FormatNum

// renderQuality writes the quality table: mean KLD ± its interval, PPL
// ratio to the baseline, same top token, per point and side.
func renderQuality(rep *compare.Report, confidence float64) string {
	if len(rep.Quality) == 0 {
		return ""
	}
	var b strings.Builder
	z := stats.ZCritical(1 - confidence)
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
	form := ""
	if base.Form == results.FormTopK {
		form = fmt.Sprintf(", %s KLD: a lower bound of the full", base.FormName())
	}
	fmt.Fprintf(&b, "quality against %s (%s, ctx %d, %d tokens%s; ± %.0f%% CI)\n", base.Baseline, base.Corpus, base.Ctx, base.Tokens, form, confidence*100)
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
		case r.Verdict == compare.Better:
			fmt.Fprintf(&b, "    KLD %s: closer to the baseline\n", fmtKLD(r.Delta))
		case r.Verdict == compare.Worse:
			fmt.Fprintf(&b, "    KLD +%s: further from the baseline\n", fmtKLD(r.Delta))
		case r.Verdict == compare.Inconclusive:
			fmt.Fprintf(&b, "    KLD %s: ~ (within the intervals)\n", fmtKLD(r.Delta))
		}
	}
	return b.String()
}

// fmtKLD writes a KL divergence ([compare.FormatKLD]).
func fmtKLD(v float64) string { return compare.FormatKLD(v) }

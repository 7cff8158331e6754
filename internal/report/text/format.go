package text

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rigorbench/rigor/internal/compare"
	"github.com/rigorbench/rigor/internal/compare/stats"
	"github.com/rigorbench/rigor/internal/metric"
	"github.com/rigorbench/rigor/internal/results"
)

// Formatters for renderers outside this package (the HTML report of
// internal/report), so that every form shows the same figures with the
// same precision as the text and Markdown tables.

// FormatCI formats the half-width of a summary's interval relative to its
// center, as benchstat does: "± 6.3%"; "± ∞" when no interval reaches the
// level; "" without samples.
func FormatCI(s compare.Summary, level float64) string { return fmtCI(s, level) }

// DescribeDirection says which way a metric is better: "higher is
// better", "lower is better" or "no direction".
func DescribeDirection(d string) string { return describeDirection(d) }

// RunLine is what a run summary prints of one metric, in the one meaning
// of ± every renderer uses: the value for people ("15,244 tok/s", never an
// exponent) and, with two samples or more, the 95% confidence interval of
// the mean and the spread apart: "  (n=3, ± 1.6% 95% CI, min–max
// 16.26–16.45)". An engine-counter metric (engine*) says so.
func RunLine(m results.Metric) (value, spread string) {
	value = strings.TrimSpace(compare.FormatNum(m.Value) + " " + m.Unit)
	var parts []string
	if n := len(m.Samples); n > 1 {
		ci := stats.MeanCI(m.Samples, 0.95)
		s := compare.Summary{N: n, Center: stats.Mean(m.Samples), Low: ci.Low, High: ci.High, Confidence: ci.Confidence}
		parts = append(parts, fmt.Sprintf("n=%d", n), fmtCI(s, 0.95)+" 95% CI",
			"min–max "+compare.FormatNum(slices.Min(m.Samples))+"–"+compare.FormatNum(slices.Max(m.Samples)))
	}
	if in, ok := metric.Lookup(m.Name); ok && in.EngineCounter {
		parts = append(parts, "engine's own counters")
	}
	if len(parts) > 0 {
		spread = "  (" + strings.Join(parts, ", ") + ")"
	}
	return value, spread
}

package compare

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/rigorbench/rigor/internal/compare/stats"
	"github.com/rigorbench/rigor/internal/metric"
	"github.com/rigorbench/rigor/internal/results"
)

// Formatters for renderers outside this package (the HTML report of
// internal/report), so that every form shows the same figures with the
// same precision as the text and Markdown tables.

// FormatNum formats a value with 4 significant digits; "–" for NaN.
func FormatNum(v float64) string { return fmtNum(v) }

// FormatSpread formats a standard deviation with 2 significant digits.
func FormatSpread(v float64) string { return fmtSpread(v) }

// FormatDelta formats a change in percent with its sign: "+14.6%".
func FormatDelta(v float64) string { return fmtDelta(v) }

// FormatP formats a p-value with three decimals: "0.100", "<0.001".
func FormatP(p float64) string { return fmtP(p) }

// FormatCI formats the half-width of a summary's interval relative to its
// center, as benchstat does: "± 6.3%"; "± ∞" when no interval reaches the
// level; "" without samples.
func FormatCI(s Summary, level float64) string { return fmtCI(s, level) }

// DescribeDirection says which way a metric is better: "higher is
// better", "lower is better" or "no direction".
func DescribeDirection(d string) string { return describeDirection(d) }

// ShowValue formats a configuration leaf for people, long hashes cut to
// 12 digits, "(absent)" for a missing side.
func ShowValue(v json.RawMessage) string { return showValue(v, 12) }

// MetricDirection returns a metric's direction, or the one its name
// implies when the record has none (tokS* higher, *Ms and *Gb lower).
func MetricDirection(name, recorded string) string {
	return direction(results.Metric{Name: name, Direction: recorded})
}

// String describes the side as the text report's header does: the label,
// its runs, points, dates and experiments.
func (s SideSummary) String() string { return sideLine(s) }

// SinglePoint reports whether the report compares one unswept point.
func (r *Report) SinglePoint() bool { return r.singlePoint() }

// HolmApplied reports whether any table corrected over several rows.
func (r *Report) HolmApplied() bool { return r.holmApplied() }

// RunLine is what a run summary prints of one metric, in the one meaning
// of ± every renderer uses: the value for people ("15,244 tok/s", never an
// exponent) and, with two samples or more, the 95% confidence interval of
// the mean and the spread apart: "  (n=3, ± 1.6% 95% CI, min–max
// 16.26–16.45)". An engine-counter metric (engine*) says so.
func RunLine(m results.Metric) (value, spread string) {
	value = strings.TrimSpace(fmtNum(m.Value) + " " + m.Unit)
	var parts []string
	if n := len(m.Samples); n > 1 {
		ci := stats.MeanCI(m.Samples, 0.95)
		s := Summary{N: n, Center: stats.Mean(m.Samples), Low: ci.Low, High: ci.High, Confidence: ci.Confidence}
		parts = append(parts, fmt.Sprintf("n=%d", n), fmtCI(s, 0.95)+" 95% CI",
			"min–max "+fmtNum(slices.Min(m.Samples))+"–"+fmtNum(slices.Max(m.Samples)))
	}
	if in, ok := metric.Lookup(m.Name); ok && in.EngineCounter {
		parts = append(parts, "engine's own counters")
	}
	if len(parts) > 0 {
		spread = "  (" + strings.Join(parts, ", ") + ")"
	}
	return value, spread
}

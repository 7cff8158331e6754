package compare

// The numbers for people that compare's messages use and every renderer
// (internal/report/text, internal/report) shares, and the questions a
// renderer asks of a report.

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/rigorbench/rigor/internal/results"
)

// FormatKLD writes a KL divergence: 0 as 0, below 0.001 with 3
// significant digits in exponent form (a Q8_0's 1.41e-05), else with 6
// decimals. diff's quality table, log's and the report's speed-vs-quality
// tables share it.
func FormatKLD(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.Abs(v) < 0.001:
		return strconv.FormatFloat(v, 'e', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 6, 64)
}

// FormatNum formats a value with 4 significant digits and never an exponent
// ("15,244", "14.29", "0.0001234"), thousands grouped with commas; "–" for
// NaN.
func FormatNum(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 1e4:
		return group(strconv.FormatFloat(v, 'f', 0, 64))
	}
	digits := 3 - int(math.Floor(math.Log10(a)))
	return group(strconv.FormatFloat(v, 'f', max(digits, 0), 64))
}

// group puts commas between the thousands of a formatted number's integer
// part: "15244.5" → "15,244.5".
func group(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	intPart, frac, hasFrac := strings.Cut(s, ".")
	if len(intPart) <= 3 {
		return sign + s
	}
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if hasFrac {
		b.WriteString("." + frac)
	}
	return sign + b.String()
}

// FormatSpread formats a spread (a half-width, a standard deviation) with 2
// significant digits, grouped like [FormatNum].
func FormatSpread(v float64) string {
	if math.IsNaN(v) || v == 0 {
		return FormatNum(v)
	}
	digits := 1 - int(math.Floor(math.Log10(math.Abs(v))))
	if digits < 0 {
		p := math.Pow(10, float64(-digits))
		v = math.Round(v/p) * p
	}
	return group(strconv.FormatFloat(v, 'f', max(digits, 0), 64))
}

// FormatPercent formats a magnitude in percent: one decimal, two below 1%.
func FormatPercent(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	if math.IsInf(v, 0) {
		return "∞%"
	}
	if math.Abs(v) < 1 {
		return strconv.FormatFloat(v, 'f', 2, 64) + "%"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + "%"
}

// FormatDelta formats a change in percent with its sign: "+14.6%".
func FormatDelta(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	s := FormatPercent(v)
	if v >= 0 {
		s = "+" + s
	}
	return s
}

// FormatP formats a p-value with three decimals.
func FormatP(p float64) string {
	switch {
	case math.IsNaN(p):
		return "–"
	case p < 0.001:
		return "<0.001"
	}
	return strconv.FormatFloat(p, 'f', 3, 64)
}

// FormatLevel formats a level or a threshold as short as it is: "95", "14.826".
func FormatLevel(a float64) string { return strconv.FormatFloat(a, 'g', -1, 64) }

// SinglePoint reports whether the report compares one unswept point, so
// that tables can drop the point column.
func (r *Report) SinglePoint() bool {
	for _, t := range r.Tables {
		for _, row := range t.Rows {
			if row.Point != "" {
				return false
			}
		}
	}
	return true
}

// HolmApplied reports whether the family of tested rows, over every
// metric and point, held several.
func (r *Report) HolmApplied() bool {
	k := 0
	for _, t := range r.Tables {
		for _, row := range t.Rows {
			if !math.IsNaN(row.P) {
				k++
			}
		}
	}
	return k > 1
}

// Tested reports whether any row was tested.
func (r *Report) Tested() bool {
	for _, t := range r.Tables {
		for _, row := range t.Rows {
			if !math.IsNaN(row.P) {
				return true
			}
		}
	}
	return false
}

// ComparePointValues orders two points by their swept values: numbers by
// value, then strings, as diff and log list them.
func ComparePointValues(a, b map[string]any) int {
	_, sa := sweptKey(a)
	_, sb := sweptKey(b)
	return comparePoints(&point{swept: sa}, &point{swept: sb})
}

// ShowValue formats a configuration leaf for people, long hashes cut to
// 12 digits, "(absent)" for a missing side.
func ShowValue(v json.RawMessage) string { return showValue(v, 12) }

// MetricDirection returns a metric's direction, or the one its name
// implies when the record has none (tokS* higher, *Ms and *Gb lower).
func MetricDirection(name, recorded string) string {
	return direction(results.Metric{Name: name, Direction: recorded})
}

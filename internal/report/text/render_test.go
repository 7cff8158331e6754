package text

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/compare"
	"github.com/rigorbench/rigor/internal/results"
)

var update = flag.Bool("update", os.Getenv("RIGOR_UPDATE") != "", "rewrite the golden files under testdata/")

// golden compares got with testdata/name. On a mismatch it writes
// testdata/name.got (gitignored) and shows the first differing lines; with
// -update (or RIGOR_UPDATE=1) it rewrites the golden file instead.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file: %v (run go test -update to create it)", err)
	}
	if bytes.Equal(got, want) {
		os.Remove(path + ".got")
		return
	}
	if err := os.WriteFile(path+".got", got, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Errorf("%s differs from the golden file; got is in %s.got\n%s", name, path, lineDiff(string(want), string(got)))
}

// lineDiff shows the first differing line of want and got with a little
// context.
func lineDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d:\n  want: %q\n  got:  %q", i+1, w, g)
		}
	}
	return "(same lines, different bytes)"
}

func render(t *testing.T, f func(io.Writer) error) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := f(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestGolden_report(t *testing.T) {
	sa, sb := seedSides(t)
	seed, err := compare.Compare(sa, sb, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, b := sweepSides()
	sweep, err := compare.Compare(a, b, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	median, err := compare.Compare(sa, sb, compare.Options{Center: compare.CenterMedian})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		rep  *compare.Report
	}{{"seed000", seed}, {"sweep", sweep}, {"seed000-median", median}} {
		golden(t, c.name+".txt", render(t, func(w io.Writer) error { return WriteText(w, c.rep, 100) }))
		golden(t, c.name+".md", render(t, func(w io.Writer) error { return WriteMarkdown(w, c.rep) }))
		golden(t, c.name+".csv", render(t, func(w io.Writer) error { return WriteCSV(w, c.rep) }))
		golden(t, c.name+".json", render(t, func(w io.Writer) error { return WriteJSON(w, c.rep) }))
	}
	// A narrow terminal wraps the configuration and the warnings.
	golden(t, "seed000-narrow.txt", render(t, func(w io.Writer) error { return WriteText(w, seed, 60) }))
}

func TestGolden_log(t *testing.T) {
	h := compare.Log(historyRuns())
	golden(t, "log.txt", render(t, func(w io.Writer) error { return WriteLogText(w, h, 100) }))
	golden(t, "log.json", render(t, func(w io.Writer) error { return WriteLogJSON(w, h) }))

	a, _ := sweepSides()
	sweep := compare.Log(a.Runs)
	golden(t, "log-sweep.txt", render(t, func(w io.Writer) error { return WriteLogText(w, sweep, 100) }))
}

func TestFormatting(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{
		{14.2924, "14.29"}, {16.3836, "16.38"}, {2.798544, "2.799"}, {7147.55, "7,148"},
		{123.44, "123.4"}, {54321, "54,321"}, {0.012345, "0.01235"}, {0, "0"},
		// never an exponent (issue 18: "1.524e+04")
		{15244, "15,244"}, {1.524e4, "15,240"}, {-1234567.8, "-1,234,568"}, {0.00012344, "0.0001234"}, {2965063, "2,965,063"},
	} {
		if got := compare.FormatNum(c.v); got != c.want {
			t.Errorf("fmtNum(%g) = %q, want %q", c.v, got, c.want)
		}
	}
	for _, c := range []struct {
		v    float64
		want string
	}{{14.6315, "+14.6%"}, {-6.02, "-6.0%"}, {0.234, "+0.23%"}} {
		if got := compare.FormatDelta(c.v); got != c.want {
			t.Errorf("fmtDelta(%g) = %q, want %q", c.v, got, c.want)
		}
	}
	for _, c := range []struct {
		v    float64
		want string
	}{{0.11, "0.11"}, {9.14, "9.1"}, {1234, "1,200"}, {15.6, "16"}} {
		if got := compare.FormatSpread(c.v); got != c.want {
			t.Errorf("fmtSpread(%g) = %q, want %q", c.v, got, c.want)
		}
	}
	if got := wrap("aaa bbb ccc ddd", 8, 2); got != "aaa bbb\n  ccc\n  ddd" {
		t.Errorf("wrap = %q", got)
	}
	if got := sparkline([]float64{1, 2, 3, 4, 5, 6, 7, 8}, 1, 8, 0); got != "▁▂▃▄▅▆▇█" {
		t.Errorf("sparkline = %q", got)
	}
	if got := sparkline([]float64{1, 1, 8, 8}, 1, 8, 2); got != "▁█" {
		t.Errorf("sparkline downsampled = %q", got)
	}
}

func TestSideLine_experimentNamedByLabel(t *testing.T) {
	day := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		label, exp, want string
	}{
		{"qwen/base", "qwen/base", "qwen/base (1 run, 2026-06-01)"},
		{"qwen/base@HEAD~1", "qwen/base", "qwen/base@HEAD~1 (1 run, 2026-06-01)"},
		{"qwen/s[ub=16]", "qwen/s", "qwen/s[ub=16] (1 run, 2026-06-01)"},
		{"qwen/basement", "qwen/base", "qwen/basement (1 run, 2026-06-01) qwen/base"},
		{"baseline", "m/baseline", "baseline (1 run, 2026-06-01) m/baseline"},
	} {
		s := compare.SideSummary{Label: c.label, Runs: 1, Used: 1, Points: 1, Experiments: []string{c.exp}, First: day, Last: day}
		if got := SideLine(s); got != c.want {
			t.Errorf("sideLine(label %q, experiment %q) = %q, want %q", c.label, c.exp, got, c.want)
		}
	}
}

func TestRunLine(t *testing.T) {
	for _, c := range []struct {
		m             results.Metric
		value, spread string
	}{
		{results.Metric{Name: "tokSOut", Unit: "tok/s", Value: 16.3836, Samples: []float64{16.2585, 16.4391, 16.4532}},
			"16.38 tok/s", "  (n=3, ± 1.6% 95% CI, min–max 16.26–16.45)"},
		// issue 18: "1.524e+04"
		{results.Metric{Name: "tokSPrompt", Unit: "tok/s", Value: 15244.4}, "15,244 tok/s", ""},
		{results.Metric{Name: "engineTokSOut", Unit: "tok/s", Value: 7989, Samples: []float64{7989}}, "7,989 tok/s", "  (engine's own counters)"},
	} {
		v, s := RunLine(c.m)
		if v != c.value || s != c.spread {
			t.Errorf("RunLine(%s %v) = %q, %q; want %q, %q", c.m.Name, c.m.Samples, v, s, c.value, c.spread)
		}
	}
}

package text

// Renderers of a Report: an aligned text table for terminals, Markdown,
// CSV and JSON. Numbers for people have 4 significant digits (tok/s
// differences of 1% matter, and 14.3 against 14.4 is already 0.7%); CSV and
// JSON carry full precision.

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rigorbench/rigor/internal/compare"
	"github.com/rigorbench/rigor/internal/compare/stats"
	"github.com/rigorbench/rigor/internal/metric"
	"github.com/rigorbench/rigor/internal/results"
)

// fmtCI formats the half-width of the interval relative to the center, as
// benchstat does: "± 6.3%"; "± ∞" when no interval reaches the level.
func fmtCI(s compare.Summary, level float64) string {
	if s.N == 0 {
		return ""
	}
	if s.N == 1 {
		return "n = 1"
	}
	if !(stats.Interval{Low: s.Low, High: s.High, Confidence: s.Confidence}).Available(level) || s.Center == 0 {
		return "± ∞"
	}
	h := math.Max(s.Center-s.Low, s.High-s.Center) / math.Abs(s.Center) * 100
	switch {
	case h < 10:
		return "± " + strconv.FormatFloat(h, 'f', 1, 64) + "%"
	}
	return "± " + strconv.FormatFloat(h, 'f', 0, 64) + "%"
}

func fmtN(s compare.Summary) string {
	if s.N == 0 {
		return ""
	}
	return strconv.Itoa(s.N)
}

func fmtCenter(s compare.Summary) string {
	if s.N == 0 && math.IsNaN(s.Center) {
		return "–"
	}
	return compare.FormatNum(s.Center)
}

// fmtVerdict is the verdict for people.
func fmtVerdict(v compare.Verdict) string { return string(v) }

// verdictWord is the verdict for machines (CSV, JSON).
func verdictWord(v compare.Verdict) string {
	switch v {
	case compare.Inconclusive:
		return "inconclusive"
	case compare.NoVerdict:
		return "none"
	}
	// untested, confounded, better, worse, changed
	return string(v)
}

func describeDirection(d string) string {
	switch d {
	case "higher":
		return "higher is better"
	case "lower":
		return "lower is better"
	}
	return "no direction"
}

// describeTable is a table's title: the metric key, its unit and direction,
// and which figure to quote: "tokSOut tg64 (tok/s, higher is better; wall
// clock, the figure to quote)".
func describeTable(t compare.Table) string {
	var parts []string
	if t.Unit != "" {
		parts = append(parts, t.Unit)
	}
	parts = append(parts, describeDirection(t.Direction))
	s := strings.Join(parts, ", ")
	switch in, _ := metric.Lookup(t.Name); {
	case metric.IsHeadline(t.Name):
		s += "; wall clock, the figure to quote"
	case in.EngineCounter:
		base, _ := metric.Base(t.Name)
		s += "; the engine's own counters, without rigor's timing: quote " + base
	}
	return t.Metric + " (" + s + ")"
}

// Colours of verdicts on a terminal (ANSI SGR).
const (
	ansiGreen  = "\x1b[32m"
	ansiRed    = "\x1b[31m"
	ansiYellow = "\x1b[33m"
	ansiReset  = "\x1b[0m"
)

// secondary is the p-value shown beside the one that decided: Welch's
// beside the rank test, the rank test's beside Welch's, the exact
// sign-flip test's beside the paired t-test.
func secondary(row compare.Row) float64 {
	switch row.Test {
	case compare.DecideWelch:
		return row.RankP
	case compare.DecidePairedT:
		return row.SignFlipP
	}
	return row.WelchP
}

// decidingTest names the test that decided the report's rows, "mixed"
// when they differ (each row's decidedBy says), "mann-whitney-u" when
// there is none.
func decidingTest(r *compare.Report) string {
	test := ""
	for _, t := range r.Tables {
		for _, row := range t.Rows {
			if row.Test == "" || row.A.N == 0 || row.B.N == 0 {
				continue
			}
			if test != "" && test != row.Test {
				return "mixed"
			}
			test = row.Test
		}
	}
	if test == "" {
		return "none"
	}
	return test
}

// mixedTests reports whether a table's rows were decided by different
// tests, so that its secondary column needs a legend.
func mixedTests(r *compare.Report) bool {
	for _, t := range r.Tables {
		if secondaryHead(t) == "2nd p" {
			return true
		}
	}
	return false
}

// secondaryHead names a table's secondary p column after the tests that
// decided its rows: "welch p", "rank p", "sign-flip p", or "2nd p" when
// they differ between rows.
func secondaryHead(t compare.Table) string {
	head := ""
	for _, r := range t.Rows {
		if r.A.N == 0 || r.B.N == 0 {
			continue
		}
		h := map[string]string{compare.DecideWelch: "rank p", compare.DecidePairedT: "sign-flip p"}[r.Test]
		if h == "" {
			h = "welch p"
		}
		if head != "" && head != h {
			return "2nd p"
		}
		head = h
	}
	if head == "" {
		return "welch p"
	}
	return head
}

// colorVerdict wraps a verdict in its colour: better green, worse red,
// changed yellow; "~" and no verdict stay plain.
func colorVerdict(v compare.Verdict, s string) string {
	switch v {
	case compare.Better:
		return ansiGreen + s + ansiReset
	case compare.Worse:
		return ansiRed + s + ansiReset
	case compare.Changed, compare.Confounded:
		return ansiYellow + s + ansiReset
	}
	return s
}

func infinite(r *compare.Report) bool {
	for _, t := range r.Tables {
		for _, row := range t.Rows {
			for _, s := range []compare.Summary{row.A, row.B} {
				if s.N > 0 && fmtCI(s, r.Confidence) == "± ∞" {
					return true
				}
			}
		}
	}
	return false
}

// namesExperiment reports whether a side's label is the experiment id,
// possibly with a point or a revision.
func namesExperiment(label, exp string) bool {
	rest, ok := strings.CutPrefix(label, exp)
	return ok && (rest == "" || rest[0] == '@' || rest[0] == '[')
}

func SideLine(s compare.SideSummary) string {
	var b strings.Builder
	b.WriteString(s.Label)
	runs := "runs"
	if s.Runs == 1 {
		runs = "run"
	}
	fmt.Fprintf(&b, " (%d %s", s.Runs, runs)
	if s.Used != s.Runs {
		fmt.Fprintf(&b, ", %d used", s.Used)
	}
	if s.Points > 1 {
		fmt.Fprintf(&b, ", %d points", s.Points)
	}
	if !s.First.IsZero() {
		if day(s.First) == day(s.Last) {
			fmt.Fprintf(&b, ", %s", day(s.First))
		} else {
			fmt.Fprintf(&b, ", %s … %s", day(s.First), day(s.Last))
		}
	}
	b.WriteString(")")
	// The experiments, unless the label already names the only one
	// ("qwen/base", "qwen/base@HEAD~1", "qwen/sweep[ub=16]").
	if len(s.Experiments) > 0 && !(len(s.Experiments) == 1 && namesExperiment(s.Label, s.Experiments[0])) {
		b.WriteString(" " + strings.Join(s.Experiments, ", "))
	}
	return b.String()
}

func day(t time.Time) string { return t.UTC().Format("2006-01-02") }

// wrap breaks s into lines of at most width runes (when width > 0) at
// spaces, indenting continuation lines by indent spaces.
func wrap(s string, width, indent int) string {
	if width <= 0 || utf8.RuneCountInString(s) <= width {
		return s
	}
	// Keep the leading indentation, which strings.Fields drops.
	lead := s[:len(s)-len(strings.TrimLeft(s, " "))]
	var b strings.Builder
	b.WriteString(lead)
	line := len(lead)
	for i, w := range strings.Fields(s) {
		n := utf8.RuneCountInString(w)
		if i > 0 {
			if line+1+n > width {
				b.WriteString("\n" + strings.Repeat(" ", indent))
				line = indent
			} else {
				b.WriteString(" ")
				line++
			}
		}
		b.WriteString(w)
		line += n
	}
	return b.String()
}

// grid aligns cells in columns separated by two spaces; right marks the
// columns aligned right. Trailing spaces are trimmed.
type grid struct {
	rows  [][]string
	right []bool
}

func (g *grid) widths() []int {
	var w []int
	for _, r := range g.rows {
		for i, c := range r {
			if i >= len(w) {
				w = append(w, 0)
			}
			w[i] = max(w[i], utf8.RuneCountInString(c))
		}
	}
	return w
}

func (g *grid) line(row []string, w []int) string {
	var b strings.Builder
	for i, c := range row {
		if i > 0 {
			b.WriteString("  ")
		}
		pad := strings.Repeat(" ", w[i]-utf8.RuneCountInString(c))
		if i < len(g.right) && g.right[i] {
			b.WriteString(pad + c)
		} else {
			b.WriteString(c + pad)
		}
	}
	return strings.TrimRight(b.String(), " ")
}

// TextOptions configure [WriteTextOptions].
type TextOptions struct {
	// Width is the terminal's width; 0 means no wrapping.
	Width int
	// Color colours the verdicts (better green, worse red). The caller
	// decides: a terminal, and NO_COLOR unset.
	Color bool
	// Verbose lists every model file's hash and size change; by default
	// they are one line, "lock.model.files: 3 files differ".
	Verbose bool
}

// filesPrefix is the path of the model files' leaves in a configuration.
const filesPrefix = "lock.model.files."

// summariseFiles replaces the changes of more than one model file (each
// file's sha256 and size) with one change that counts the files, placed
// where the first of them was.
func summariseFiles(changes []compare.Change) []compare.Change {
	files := map[string]bool{}
	var points []string
	for _, c := range changes {
		if rest, ok := strings.CutPrefix(c.Path, filesPrefix); ok {
			files[fileOfLeaf(rest)] = true
			for _, p := range c.Points {
				if !slices.Contains(points, p) {
					points = append(points, p)
				}
			}
		}
	}
	if len(files) < 2 {
		return changes
	}
	var out []compare.Change
	done := false
	for _, c := range changes {
		if !strings.HasPrefix(c.Path, filesPrefix) {
			out = append(out, c)
			continue
		}
		if !done {
			// A change with neither side is a line of its own.
			out = append(out, compare.Change{Section: c.Section, Points: points,
				Path: fmt.Sprintf("lock.model.files: %d files differ (sha256 or size; --verbose lists each)", len(files))})
			done = true
		}
	}
	return out
}

// fileOfLeaf returns the file key of a leaf path under lock.model.files:
// a quoted name ("x.gguf".sha256) or a plain one (x.sha256).
func fileOfLeaf(rest string) string {
	if strings.HasPrefix(rest, `"`) {
		if s, err := strconv.QuotedPrefix(rest); err == nil {
			return s
		}
	}
	if i := strings.LastIndexByte(rest, '.'); i > 0 {
		return rest[:i]
	}
	return rest
}

// WriteText writes the report as aligned text for a terminal of the given
// width (0: no wrapping), without colour: the sides, the configuration
// diff, one table per metric, the points on one side only, the notes on
// the samples and the warnings.
func WriteText(w io.Writer, r *compare.Report, width int) error {
	return WriteTextOptions(w, r, TextOptions{Width: width})
}

// WriteTextOptions is [WriteText] with options.
func WriteTextOptions(w io.Writer, r *compare.Report, opts TextOptions) error {
	width := opts.Width
	var b strings.Builder
	fmt.Fprintf(&b, "A: %s\n", SideLine(r.A))
	fmt.Fprintf(&b, "B: %s\n", SideLine(r.B))

	writeConfigText(&b, r, opts.Verbose, width)

	single, holm, tested := r.SinglePoint(), r.HolmApplied(), r.Tested()
	for _, t := range r.Tables {
		writeTableText(&b, r, t, opts.Color, single, holm, tested)
	}
	if q := renderQuality(r, r.Confidence); q != "" {
		b.WriteString("\n" + q)
	}
	if r.Untested != "" {
		b.WriteString("\n" + wrap(r.Untested, width, 2) + "\n")
	}
	if infinite(r) {
		b.WriteString("\n± ∞: no " + compare.FormatLevel(r.Confidence*100) + "% interval: the mean needs 2 samples, the median 6\n")
	}
	if mixedTests(r) {
		b.WriteString("2nd p: Welch's beside the rank test, the rank test's beside Welch's, the exact sign-flip test's beside the paired t-test\n")
	}
	if len(r.OnlyA) > 0 || len(r.OnlyB) > 0 {
		b.WriteString("\n")
		if len(r.OnlyA) > 0 {
			b.WriteString(wrap("Only in A: "+strings.Join(r.OnlyA, ", "), width, 2) + "\n")
		}
		if len(r.OnlyB) > 0 {
			b.WriteString(wrap("Only in B: "+strings.Join(r.OnlyB, ", "), width, 2) + "\n")
		}
	}
	if len(r.Notes) > 0 {
		b.WriteString("\nSamples:\n")
		for _, n := range r.Notes {
			b.WriteString("  " + wrap(n, width-2, 4) + "\n")
		}
	}
	if len(r.Warnings) > 0 {
		b.WriteString("\nWarnings:\n")
		for _, wn := range r.Warnings {
			b.WriteString("  " + wrap(wn.Error(), width-2, 4) + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeConfigText writes the configuration diff, A → B, files summarised
// unless verbose.
func writeConfigText(b *strings.Builder, r *compare.Report, verbose bool, width int) {
	b.WriteString("\n")
	if len(r.Config) == 0 {
		b.WriteString("Configuration: no differences\n")
	} else {
		b.WriteString("Configuration (A → B):\n")
		config := r.Config
		if !verbose {
			config = summariseFiles(config)
		}
		for _, c := range config {
			line := c.Path + ": " + compare.ShowValue(c.Old) + " → " + compare.ShowValue(c.New)
			if c.Old == nil && c.New == nil {
				line = c.Path
			}
			if len(c.Points) > 0 {
				line += "  [" + strings.Join(c.Points, ", ") + "]"
			}
			b.WriteString("  " + wrap(line, width-2, 6) + "\n")
		}
	}
}

// writeTableText writes one metric's table: a row per point (and the
// geometric mean), the side labels spanning their columns, the verdicts
// coloured when asked.
func writeTableText(b *strings.Builder, r *compare.Report, t compare.Table, color, single, holm, tested bool) {
	b.WriteString("\n")
	b.WriteString(describeTable(t) + "\n")
	g := &grid{}
	var head []string
	if !single {
		head = append(head, "point")
	}
	ci := fmt.Sprintf("± %s%% CI", compare.FormatLevel(r.Confidence*100))
	head = append(head, string(r.Center), ci, "n", string(r.Center), ci, "n", "delta")
	if tested {
		head = append(head, "p")
	}
	if holm {
		head = append(head, "p (Holm)")
	}
	if tested {
		head = append(head, secondaryHead(t))
	}
	head = append(head, "verdict")
	g.rows = append(g.rows, head)
	off := 0
	if !single {
		off = 1
		g.right = append(g.right, false)
	}
	g.right = append(g.right, true, false, true, true, false, true, true)
	if tested {
		g.right = append(g.right, true)
	}
	if holm {
		g.right = append(g.right, true)
	}
	if tested {
		g.right = append(g.right, true)
	}
	g.right = append(g.right, false)
	verdicts := map[int]compare.Verdict{}
	addRow := func(row compare.Row, geo bool) {
		var cells []string
		if !single {
			cells = append(cells, row.Point)
		}
		if geo {
			cells = append(cells, compare.FormatNum(row.A.Center), "", "", compare.FormatNum(row.B.Center), "", "", compare.FormatDelta(row.Delta))
			if tested {
				cells = append(cells, "")
			}
			if holm {
				cells = append(cells, "")
			}
			if tested {
				cells = append(cells, "")
			}
			cells = append(cells, "")
		} else {
			cells = append(cells, fmtCenter(row.A), fmtCI(row.A, r.Confidence), fmtN(row.A),
				fmtCenter(row.B), fmtCI(row.B, r.Confidence), fmtN(row.B), compare.FormatDelta(row.Delta))
			if tested {
				cells = append(cells, compare.FormatP(row.P))
			}
			if holm {
				cells = append(cells, compare.FormatP(row.PAdjusted))
			}
			if tested {
				cells = append(cells, compare.FormatP(secondary(row)))
			}
			cells = append(cells, fmtVerdict(row.Verdict))
			verdicts[len(g.rows)] = row.Verdict
		}
		g.rows = append(g.rows, cells)
	}
	for _, row := range t.Rows {
		addRow(row, false)
	}
	if t.Geomean != nil {
		addRow(*t.Geomean, true)
	}
	wd := g.widths()
	// The side labels span their three columns.
	span := func(col int) int { return wd[col] + wd[col+1] + wd[col+2] + 4 }
	for i, label := range []string{r.A.Label, r.B.Label} {
		col := off + 3*i
		if n := utf8.RuneCountInString(label); n > span(col) {
			wd[col] += n - span(col)
		}
	}
	var lb strings.Builder
	if !single {
		lb.WriteString(strings.Repeat(" ", wd[0]+2))
	}
	for i, label := range []string{r.A.Label, r.B.Label} {
		col := off + 3*i
		lb.WriteString(label + strings.Repeat(" ", span(col)-utf8.RuneCountInString(label)+2))
	}
	b.WriteString(strings.TrimRight(lb.String(), " ") + "\n")
	for i, row := range g.rows {
		line := g.line(row, wd)
		// The verdict is the last column: colour it after alignment,
		// so that the escapes do not count as width.
		if v, ok := verdicts[i]; ok && color {
			if word := fmtVerdict(v); strings.HasSuffix(line, word) {
				line = line[:len(line)-len(word)] + colorVerdict(v, word)
			}
		}
		b.WriteString(line + "\n")
	}
}

// mdEscape escapes what Markdown tables and GFM would interpret.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "~", `\~`, "*", `\*`, "_", `\_`, "`", "\\`").Replace(s)
}

// WriteMarkdown writes the report as GitHub-flavoured Markdown: the sides,
// the configuration diff as a list, one table per metric, and the warnings.
func WriteMarkdown(w io.Writer, r *compare.Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "**A:** %s  \n**B:** %s\n", mdEscape(SideLine(r.A)), mdEscape(SideLine(r.B)))
	b.WriteString("\n### Configuration\n\n")
	if len(r.Config) == 0 {
		b.WriteString("No differences.\n")
	}
	for _, c := range r.Config {
		fmt.Fprintf(&b, "- `%s`: `%s` → `%s`", c.Path, compare.ShowValue(c.Old), compare.ShowValue(c.New))
		if len(c.Points) > 0 {
			fmt.Fprintf(&b, " (%s)", mdEscape(strings.Join(c.Points, ", ")))
		}
		b.WriteString("\n")
	}
	single, holm, tested := r.SinglePoint(), r.HolmApplied(), r.Tested()
	for _, t := range r.Tables {
		fmt.Fprintf(&b, "\n### %s\n\n", mdEscape(t.Metric))
		title := describeTable(t)
		fmt.Fprintf(&b, "%s; %s ± %s%% CI.\n\n", mdEscape(strings.TrimSuffix(strings.TrimPrefix(title, t.Metric+" ("), ")")), r.Center, compare.FormatLevel(r.Confidence*100))
		var head, align []string
		if !single {
			head, align = append(head, "point"), append(align, "---")
		}
		head = append(head, mdEscape(r.A.Label), "n", mdEscape(r.B.Label), "n", "delta")
		align = append(align, "--:", "--:", "--:", "--:", "--:")
		if tested {
			head, align = append(head, "p"), append(align, "--:")
		}
		if holm {
			head, align = append(head, "p (Holm)"), append(align, "--:")
		}
		if tested {
			head, align = append(head, secondaryHead(t)), append(align, "--:")
		}
		head, align = append(head, "verdict"), append(align, ":-:")
		b.WriteString("| " + strings.Join(head, " | ") + " |\n")
		b.WriteString("|" + strings.Join(align, "|") + "|\n")
		row := func(row compare.Row, geo bool) {
			var cells []string
			if !single {
				cells = append(cells, mdEscape(row.Point))
			}
			if geo {
				cells = append(cells, compare.FormatNum(row.A.Center), "", compare.FormatNum(row.B.Center), "", compare.FormatDelta(row.Delta))
				if tested {
					cells = append(cells, "")
				}
				if holm {
					cells = append(cells, "")
				}
				if tested {
					cells = append(cells, "")
				}
				cells = append(cells, "")
			} else {
				cell := func(s compare.Summary) string {
					if s.N == 0 {
						return "–"
					}
					return fmtCenter(s) + " " + fmtCI(s, r.Confidence)
				}
				cells = append(cells, cell(row.A), fmtN(row.A), cell(row.B), fmtN(row.B), compare.FormatDelta(row.Delta))
				if tested {
					cells = append(cells, compare.FormatP(row.P))
				}
				if holm {
					cells = append(cells, compare.FormatP(row.PAdjusted))
				}
				if tested {
					cells = append(cells, compare.FormatP(secondary(row)))
				}
				cells = append(cells, mdEscape(fmtVerdict(row.Verdict)))
			}
			b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
		}
		for _, r := range t.Rows {
			row(r, false)
		}
		if t.Geomean != nil {
			row(*t.Geomean, true)
		}
	}
	if r.Untested != "" {
		b.WriteString("\n" + mdEscape(r.Untested) + "\n")
	}
	if len(r.OnlyA) > 0 || len(r.OnlyB) > 0 {
		b.WriteString("\n")
		if len(r.OnlyA) > 0 {
			fmt.Fprintf(&b, "Only in A: %s  \n", mdEscape(strings.Join(r.OnlyA, ", ")))
		}
		if len(r.OnlyB) > 0 {
			fmt.Fprintf(&b, "Only in B: %s  \n", mdEscape(strings.Join(r.OnlyB, ", ")))
		}
	}
	if len(r.Notes) > 0 {
		b.WriteString("\n### Samples\n\n")
		for _, n := range r.Notes {
			b.WriteString("- " + mdEscape(n) + "\n")
		}
	}
	if len(r.Warnings) > 0 {
		b.WriteString("\n### Warnings\n\n")
		for _, wn := range r.Warnings {
			b.WriteString("- " + mdEscape(wn.Error()) + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// CSVHeader is the header row of [WriteCSV].
var CSVHeader = []string{"metric", "name", "test", "unit", "direction", "point", "center",
	"a_n", "a_center", "a_low", "a_high", "b_n", "b_center", "b_low", "b_high",
	"delta_pct", "p", "p_adjusted", "welch_p", "verdict", "needed_n",
	"sample_unit", "decided_by", "pairs", "mde_pct", "detect_n"}

// WriteCSV writes the metric tables as CSV, one line per row and a
// "geomean" line per table that has one, under [CSVHeader]. Numbers have
// full precision; a missing number is an empty field. The configuration
// diff and the warnings are not part of the CSV form.
func WriteCSV(w io.Writer, r *compare.Report) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	num := func(v float64) string {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return ""
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	n := func(s compare.Summary) string {
		if s.N == 0 {
			return ""
		}
		return strconv.Itoa(s.N)
	}
	for _, t := range r.Tables {
		rows := t.Rows
		if t.Geomean != nil {
			rows = append(rows[:len(rows):len(rows)], *t.Geomean)
		}
		for i, row := range rows {
			verdict, needed := verdictWord(row.Verdict), strconv.Itoa(row.Needed)
			unit, test, pairs, mde, detect := row.SampleUnit, row.Test, "", num(row.MDE), ""
			if row.Pairs > 0 {
				pairs = strconv.Itoa(row.Pairs)
			}
			if math.IsInf(row.MDE, 1) {
				mde = "inf"
			}
			if row.DetectN > 0 {
				detect = strconv.Itoa(row.DetectN)
			}
			if t.Geomean != nil && i == len(rows)-1 {
				verdict, needed, unit, test, mde = "", "", "", "", ""
			}
			rec := []string{t.Metric, t.Name, t.Test, t.Unit, t.Direction, row.Point, string(r.Center),
				n(row.A), num(row.A.Center), num(row.A.Low), num(row.A.High),
				n(row.B), num(row.B.Center), num(row.B.Low), num(row.B.High),
				num(row.Delta), num(row.P), num(row.PAdjusted), num(row.WelchP), verdict, needed,
				unit, test, pairs, mde, detect}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// jnum is a float that encodes NaN and ±Inf as null.
type jnum float64

func (v jnum) MarshalJSON() ([]byte, error) {
	f := float64(v)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

// JSONVersion is the version of the JSON form written by [WriteJSON].
const JSONVersion = 1

type jsonReport struct {
	Version    int      `json:"version"`
	A          jsonSide `json:"a"`
	B          jsonSide `json:"b"`
	Center     string   `json:"center"`
	Test       string   `json:"test"`
	Correction string   `json:"correction"`
	Alpha      float64  `json:"alpha"`
	// HistoryAlpha is the level of the rows tested against the history
	// of earlier invocations (test "invocations-t").
	HistoryAlpha float64          `json:"historyAlpha"`
	Confidence   float64          `json:"confidence"`
	Power        float64          `json:"power"`
	Config       []compare.Change `json:"config"`
	Mismatches   []jsonMismatch   `json:"mismatches"`
	Tables       []jsonTable      `json:"tables"`
	OnlyA        []string         `json:"onlyA"`
	OnlyB        []string         `json:"onlyB"`
	Notes        []string         `json:"notes"`
	Warnings     []jsonWarning    `json:"warnings"`
	Untested     string           `json:"untested,omitempty"`
	// Quality is the quality measured against a baseline, per point
	// (absent when no side measured any).
	Quality []jsonQuality `json:"quality,omitempty"`
}

type jsonQuality struct {
	Point         string                   `json:"point"`
	A             *results.QualityMeasured `json:"a"`
	B             *results.QualityMeasured `json:"b"`
	NotComparable string                   `json:"notComparable,omitempty"`
	Verdict       string                   `json:"verdict"`
	DeltaKLD      *float64                 `json:"deltaKld"`
}

type jsonSide struct {
	Label       string    `json:"label"`
	Runs        int       `json:"runs"`
	Used        int       `json:"used"`
	Points      int       `json:"points"`
	Experiments []string  `json:"experiments"`
	First       time.Time `json:"first,omitzero"`
	Last        time.Time `json:"last,omitzero"`
}

type jsonMismatch struct {
	Field   string   `json:"field"`
	A       []string `json:"a"`
	B       []string `json:"b"`
	Message string   `json:"message"`
}

type jsonTable struct {
	Metric    string    `json:"metric"`
	Name      string    `json:"name"`
	Test      string    `json:"test"`
	Unit      string    `json:"unit"`
	Direction string    `json:"direction"`
	Rows      []jsonRow `json:"rows"`
	Geomean   *jsonGeo  `json:"geomean"`
}

type jsonRow struct {
	Point     string      `json:"point"`
	A         jsonSummary `json:"a"`
	B         jsonSummary `json:"b"`
	Delta     jnum        `json:"deltaPercent"`
	P         jnum        `json:"p"`
	PAdjusted jnum        `json:"pAdjusted"`
	Exact     bool        `json:"exact"`
	Separated bool        `json:"separated"`
	WelchP    jnum        `json:"welchP"`
	RankP     jnum        `json:"rankP"`
	Verdict   string      `json:"verdict"`
	Needed    int         `json:"neededPerSide"`
	Unit      string      `json:"sampleUnit"`
	DecidedBy string      `json:"decidedBy"`
	Pairs     int         `json:"pairs"`
	SignFlipP jnum        `json:"signFlipP"`
	MDE       jnum        `json:"mdePercent"`
	DetectN   int         `json:"detectPerSide,omitempty"`
	Why       string      `json:"why,omitempty"`
	Confound  string      `json:"confound,omitempty"`
	NoiseDF   int         `json:"noiseDF,omitempty"`
}

type jsonGeo struct {
	A     jnum `json:"a"`
	B     jnum `json:"b"`
	Delta jnum `json:"deltaPercent"`
}

type jsonSummary struct {
	N          int    `json:"n"`
	Runs       int    `json:"runs"`
	Center     jnum   `json:"center"`
	Low        jnum   `json:"low"`
	High       jnum   `json:"high"`
	Confidence jnum   `json:"confidence"`
	Mean       jnum   `json:"mean"`
	Median     jnum   `json:"median"`
	Stddev     jnum   `json:"stddev"`
	Min        jnum   `json:"min"`
	Max        jnum   `json:"max"`
	Samples    []jnum `json:"samples"`
	Reps       int    `json:"repetitions"`
	Outliers   []jnum `json:"outliers"`
	WarmupRuns int    `json:"warmupRuns"`
	WarmupRun  bool   `json:"warmupFirstRun"`
}

type jsonWarning struct {
	Kind    string `json:"kind"`
	Metric  string `json:"metric,omitempty"`
	Point   string `json:"point,omitempty"`
	Message string `json:"message"`
}

func toJSONSide(s compare.SideSummary) jsonSide {
	exps := s.Experiments
	if exps == nil {
		exps = []string{}
	}
	return jsonSide{s.Label, s.Runs, s.Used, s.Points, exps, s.First.UTC(), s.Last.UTC()}
}

func toJSONSummary(s compare.Summary) jsonSummary {
	samples := make([]jnum, len(s.Samples))
	for i, v := range s.Samples {
		samples[i] = jnum(v)
	}
	conf := jnum(s.Confidence)
	if s.Confidence == 0 {
		conf = jnum(math.NaN())
	}
	outliers := make([]jnum, len(s.Outliers))
	for i, v := range s.Outliers {
		outliers[i] = jnum(v)
	}
	return jsonSummary{s.N, s.Runs, jnum(s.Center), jnum(s.Low), jnum(s.High), conf,
		jnum(s.Mean), jnum(s.Median), jnum(s.Stddev), jnum(s.Min), jnum(s.Max), samples,
		s.Reps, outliers, s.WarmupRuns, s.WarmupFirstRun}
}

func orEmpty[T any](x []T) []T {
	if x == nil {
		return []T{}
	}
	return x
}

// WriteJSON writes the report as one indented JSON object. The field names
// are stable and documented in the package documentation; numbers that do
// not exist (no interval, no test) are null.
func WriteJSON(w io.Writer, r *compare.Report) error {
	out := jsonReport{
		Version: JSONVersion, A: toJSONSide(r.A), B: toJSONSide(r.B),
		Center: string(r.Center), Test: decidingTest(r), Correction: "holm",
		Alpha: r.Alpha, HistoryAlpha: r.HistoryAlpha, Confidence: r.Confidence, Power: r.Power,
		Config: orEmpty(r.Config), Mismatches: []jsonMismatch{}, Tables: []jsonTable{},
		OnlyA: orEmpty(r.OnlyA), OnlyB: orEmpty(r.OnlyB), Notes: orEmpty(r.Notes), Warnings: []jsonWarning{},
		Untested: r.Untested,
	}
	for _, m := range r.Mismatches {
		out.Mismatches = append(out.Mismatches, jsonMismatch{m.Field, m.A, m.B, m.String()})
	}
	for _, q := range r.Quality {
		jq := jsonQuality{Point: q.Point, A: q.A, B: q.B, NotComparable: q.NotComparable, Verdict: string(q.Verdict)}
		if q.Verdict != compare.NoVerdict {
			d := q.Delta
			jq.DeltaKLD = &d
		}
		out.Quality = append(out.Quality, jq)
	}
	for _, t := range r.Tables {
		jt := jsonTable{Metric: t.Metric, Name: t.Name, Test: t.Test, Unit: t.Unit, Direction: t.Direction, Rows: []jsonRow{}}
		for _, row := range t.Rows {
			jt.Rows = append(jt.Rows, jsonRow{
				Point: row.Point, A: toJSONSummary(row.A), B: toJSONSummary(row.B),
				Delta: jnum(row.Delta), P: jnum(row.P), PAdjusted: jnum(row.PAdjusted),
				Exact: row.Exact, Separated: row.Separated, WelchP: jnum(row.WelchP), RankP: jnum(row.RankP),
				Verdict: verdictWord(row.Verdict), Needed: row.Needed,
				Unit: row.SampleUnit, DecidedBy: row.Test, Pairs: row.Pairs, SignFlipP: jnum(row.SignFlipP),
				MDE: jnum(row.MDE), DetectN: row.DetectN, Why: row.Why, Confound: row.Confound, NoiseDF: row.NoiseDF,
			})
		}
		if g := t.Geomean; g != nil {
			jt.Geomean = &jsonGeo{jnum(g.A.Center), jnum(g.B.Center), jnum(g.Delta)}
		}
		out.Tables = append(out.Tables, jt)
	}
	for _, wn := range r.Warnings {
		out.Warnings = append(out.Warnings, jsonWarning{string(wn.Kind), wn.Metric, wn.Point, wn.Message})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rigorbench/rigor/internal/compare"
	"github.com/rigorbench/rigor/internal/metric"
	"github.com/rigorbench/rigor/internal/results"
)

type resultsCmd struct {
	List resultsListCmd `cmd:"" default:"withargs" help:"List recorded runs, newest last."`
	Sync resultsSyncCmd `cmd:"" help:"Fetch the records Slurm jobs pushed to the module's remote and merge them."`
}

func (resultsCmd) Help() string {
	return `Lists the recorded runs (the default), or merges the records Slurm jobs
pushed (sync).

Examples:
  rigor results
  rigor results example/smoke --json
  rigor results sync`
}

type resultsListCmd struct {
	ID   string `arg:"" optional:"" name:"id" help:"An experiment, point or run id (optionally @REV); all runs when omitted."`
	JSON bool   `help:"Print the runs as JSON."`
}

func (resultsListCmd) Help() string {
	return `Lists recorded runs, newest last: run id, point, start date (UTC), status,
engine commit, and the key metric's mean (tokSOut, else tokSPrompt, else the
first metric) with its sample count. Records that cannot be read are left
out with a warning naming the file.

Examples:
  rigor results
  rigor results example/smoke
  rigor results 'example/smokeBatch[b=16]' --json
  rigor results example/smoke@HEAD~1`
}

// resultRow is one line of rigor results, and its JSON form.
type resultRow struct {
	ID         string     `json:"id"`
	Experiment string     `json:"experiment"`
	Point      string     `json:"point"`
	Start      time.Time  `json:"start"`
	Status     string     `json:"status"`
	Error      string     `json:"error,omitempty"`
	Commit     string     `json:"engineCommit,omitempty"`
	Rig        string     `json:"rig,omitempty"`
	Metric     *keyMetric `json:"metric,omitempty"`
	Path       string     `json:"path,omitempty"`
}

type keyMetric struct {
	Key  string  `json:"key"`
	Unit string  `json:"unit,omitempty"`
	Mean float64 `json:"mean"`
	N    int     `json:"n"`
}

func (c *resultsListCmd) Run(e *env) error {
	limitListingMemory()
	store, err := e.openStore()
	if err != nil {
		return err
	}
	sums, err := c.summaries(e, store)
	if err != nil {
		return err
	}
	if c.JSON {
		return writeResultsJSON(e.stdout, store, sums)
	}
	if len(sums) == 0 {
		fmt.Fprintf(e.stderr, "rigor: no runs recorded in %s/ yet ('rigor run ID' records one)\n", results.Dir)
		return nil
	}
	return writeResultsTable(e.stdout, sums)
}

// limitListingMemory sets a soft memory limit of 160 MiB for a listing
// from the index. One that builds the index from nothing decodes every
// record once, and at 100,000 records peaked at 210 MB, most of it
// garbage not yet collected; under the limit the collector runs sooner
// (that once-only rebuild costs about a fifth more CPU) and stays under
// 170 MB. A warm listing (110 MB at 100,000 records) is not affected.
// GOGC or GOMEMLIMIT set by the user win.
func limitListingMemory() {
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(160 << 20)
	}
}

// row is the line of a run in rigor results.
func row(r *results.Summary) resultRow {
	row := resultRow{ID: r.ID, Experiment: r.Experiment, Point: r.Point, Start: r.Start.UTC(), Status: r.Status,
		Error: r.Error, Commit: shortCommit(r.Engine), Rig: r.Accelerator, Metric: pickMetric(r.Metrics)}
	if r.Accelerators > 1 {
		row.Rig = fmt.Sprintf("%d× %s", r.Accelerators, row.Rig)
	}
	return row
}

// writeResultsJSON prints the runs as one JSON array, a run at a time:
// memory does not grow with the document (100,000 runs are 40 MB of it).
// The text is what one json.Encoder with a two-space indent would print.
func writeResultsJSON(w io.Writer, store *results.Store, sums []*results.Summary) error {
	if len(sums) == 0 {
		_, err := io.WriteString(w, "[]\n")
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	var item bytes.Buffer
	enc := json.NewEncoder(&item)
	enc.SetIndent("  ", "  ")
	enc.SetEscapeHTML(false)
	bw.WriteString("[\n")
	root := filepath.Clean(store.Root) + string(filepath.Separator)
	for i, r := range sums {
		x := row(r)
		if rel, ok := strings.CutPrefix(r.Path, root); ok {
			x.Path = filepath.ToSlash(rel) // the usual case, without Rel's cleaning
		} else if r.Path != "" {
			if rel, err := filepath.Rel(store.Root, r.Path); err == nil {
				x.Path = filepath.ToSlash(rel)
			}
		}
		item.Reset()
		if b, ok := appendRowJSON(item.Bytes(), &x); ok {
			item.Write(b)
		} else if err := enc.Encode(x); err != nil {
			return err
		}
		bw.WriteString("  ")
		bw.Write(bytes.TrimSuffix(item.Bytes(), []byte("\n")))
		if i < len(sums)-1 {
			bw.WriteByte(',')
		}
		bw.WriteByte('\n')
	}
	bw.WriteString("]\n")
	return bw.Flush()
}

// appendRowJSON appends a row as the json.Encoder of writeResultsJSON
// prints it (indented by two spaces under a two-space prefix), for rows
// whose strings need no escaping and whose numbers are finite: the encoder's
// reflection and indentation were most of --json's time. ok is false for
// any other row, which the encoder then prints.
func appendRowJSON(b []byte, x *resultRow) ([]byte, bool) {
	plain := func(s string) bool {
		for i := 0; i < len(s); {
			c := s[i]
			if c < utf8.RuneSelf {
				if c < 0x20 || c == '"' || c == '\\' {
					return false
				}
				i++
				continue
			}
			// The encoder replaces invalid UTF-8 and escapes U+2028
			// and U+2029.
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 || r == '\u2028' || r == '\u2029' {
				return false
			}
			i += n
		}
		return true
	}
	for _, s := range []string{x.ID, x.Experiment, x.Point, x.Status, x.Error, x.Commit, x.Rig, x.Path} {
		if !plain(s) {
			return b, false
		}
	}
	if m := x.Metric; m != nil && (!plain(m.Key) || !plain(m.Unit) || math.IsNaN(m.Mean) || math.IsInf(m.Mean, 0)) {
		return b, false
	}
	field := func(indent, name, value string, last bool) {
		b = append(b, indent...)
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, `": "`...)
		b = append(b, value...)
		b = append(b, '"')
		if !last {
			b = append(b, ',')
		}
		b = append(b, '\n')
	}
	const in = "    "
	b = append(b, "{\n"...)
	field(in, "id", x.ID, false)
	field(in, "experiment", x.Experiment, false)
	field(in, "point", x.Point, false)
	b = append(b, in+`"start": `...)
	b, err := x.Start.AppendText(append(b, '"'))
	if err != nil {
		return b, false
	}
	b = append(b, "\",\n"...)
	// The optional fields after status; each but the last ends in ",".
	var rest []func(last bool)
	opt := func(name, v string) {
		if v != "" {
			rest = append(rest, func(last bool) { field(in, name, v, last) })
		}
	}
	opt("error", x.Error)
	opt("engineCommit", x.Commit)
	opt("rig", x.Rig)
	if m := x.Metric; m != nil {
		rest = append(rest, func(last bool) {
			b = append(b, in+`"metric": {`+"\n"...)
			field(in+"  ", "key", m.Key, false)
			if m.Unit != "" {
				field(in+"  ", "unit", m.Unit, false)
			}
			b = append(b, in+`  "mean": `...)
			b = appendJSONFloat(b, m.Mean)
			b = append(b, ",\n"+in+`  "n": `...)
			b = strconv.AppendInt(b, int64(m.N), 10)
			b = append(b, "\n"+in+"}"...)
			if !last {
				b = append(b, ',')
			}
			b = append(b, '\n')
		})
	}
	opt("path", x.Path)
	field(in, "status", x.Status, len(rest) == 0)
	for i, f := range rest {
		f(i == len(rest)-1)
	}
	return append(b, "  }\n"...), true
}

// appendJSONFloat formats a finite float as encoding/json does.
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9, as encoding/json does
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// writeResultsTable prints the runs as a table whose columns are as wide
// as their widest cell plus two spaces (what text/tabwriter prints),
// measuring the columns first and then writing each line as it is made:
// the table is never held whole.
func writeResultsTable(w io.Writer, sums []*results.Summary) error {
	head := [...]string{"ID", "POINT", "START (UTC)", "STATUS", "COMMIT", "METRIC"}
	const dateLayout = "2006-01-02 15:04"
	var width [5]int
	for i := range width {
		width[i] = utf8.RuneCountInString(head[i])
	}
	width[2] = max(width[2], len(dateLayout))
	for _, r := range sums {
		width[0] = max(width[0], utf8.RuneCountInString(r.ID))
		width[1] = max(width[1], utf8.RuneCountInString(r.Point))
		width[3] = max(width[3], utf8.RuneCountInString(r.Status))
		width[4] = max(width[4], utf8.RuneCountInString(commitCell(r.Engine)))
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	var line []byte
	cell := func(i int, s string) {
		line = append(line, s...)
		for n := utf8.RuneCountInString(s); n < width[i]+2; n++ {
			line = append(line, ' ')
		}
	}
	line = line[:0]
	for i := range width {
		cell(i, head[i])
	}
	line = append(append(line, head[5]...), '\n')
	bw.Write(line)
	for _, r := range sums {
		line = line[:0]
		cell(0, r.ID)
		cell(1, r.Point)
		line = r.Start.UTC().AppendFormat(line, dateLayout)
		for n := len(dateLayout); n < width[2]+2; n++ {
			line = append(line, ' ')
		}
		cell(3, r.Status)
		cell(4, commitCell(r.Engine))
		if m := pickMetric(r.Metrics); m != nil {
			line = fmt.Appendf(line, "%s %s %s (n=%d)", m.Key, formatNum(m.Mean), m.Unit, m.N)
		} else {
			line = append(line, '-')
		}
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// commitCell is the COMMIT column of a run.
func commitCell(en results.EngineRef) string {
	if c := shortCommit(en); c != "" {
		return c
	}
	return "-"
}

// summaries returns the summaries of the runs to list: from the index for
// the working tree (every run, an experiment's or a point's), from the
// records themselves for a run id, a file or a git revision.
func (c *resultsListCmd) summaries(e *env, store *results.Store) ([]*results.Summary, error) {
	id, kind, rev := results.ParseRef(c.ID)
	if c.ID == "" || rev == "" && (kind == results.RefExperiment || kind == results.RefPoint) {
		f := results.Filter{}
		if kind == results.RefExperiment {
			f.Experiment = id
		} else if kind == results.RefPoint {
			f.Experiment, f.Point = id[:strings.IndexByte(id, '[')], id
		}
		if f.Experiment != "" {
			if err := results.CheckExperimentID(f.Experiment); err != nil {
				return nil, err
			}
		}
		sums, warnings, err := store.Summaries(f)
		if err != nil {
			return nil, err
		}
		if c.ID != "" && len(sums) == 0 {
			// Let Resolve say what is missing, with its hints.
			_, err := e.resolveRef(store, c.ID)
			return nil, err
		}
		e.warn(warnings)
		return sums, nil
	}
	sel, err := e.resolveRef(store, c.ID)
	if err != nil {
		return nil, err
	}
	e.warn(sel.Warnings)
	sums := make([]*results.Summary, len(sel.Runs))
	for i, r := range sel.Runs {
		sums[i] = results.Summarize(r)
		if rev == "" {
			sums[i].Path = store.RecordPath(r.Experiment, r.ID)
		}
	}
	return sums, nil
}

// shortCommit is the engine commit shortened to 7 digits, else the
// requested ref, else the version.
func shortCommit(en results.EngineRef) string {
	switch {
	case len(en.Commit) >= 7:
		return en.Commit[:7]
	case en.Commit != "":
		return en.Commit
	case en.Ref != "":
		return cut(en.Ref, 12)
	}
	return cut(en.Version, 12)
}

// cut shortens s to n runes with an ellipsis.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// pickMetric returns the run's key metric: tokSOut, else tokSPrompt, else
// the first one, as the mean of its samples (the value when it has none).
func pickMetric(ms []results.MetricSummary) *keyMetric {
	var m *results.MetricSummary
	for _, name := range []string{metric.TokSOut, metric.TokSPrompt} {
		for i := range ms {
			if ms[i].Name == name {
				m = &ms[i]
				break
			}
		}
		if m != nil {
			break
		}
	}
	if m == nil && len(ms) > 0 {
		m = &ms[0]
	}
	if m == nil {
		return nil
	}
	return &keyMetric{Key: m.Key(), Unit: m.Unit, Mean: m.Mean, N: m.N}
}

// formatNum prints a value as the diff tables do: four significant digits,
// thousands grouped, never an exponent.
func formatNum(v float64) string { return compare.FormatNum(v) }

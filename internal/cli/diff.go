package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"
	"golang.org/x/term"

	"github.com/rigorbench/rigor/internal/compare"
	"github.com/rigorbench/rigor/internal/gitrepo"
	reportsite "github.com/rigorbench/rigor/internal/report"
	"github.com/rigorbench/rigor/internal/report/text"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/spec"
	"github.com/rigorbench/rigor/internal/suggest"
)

type diffCmd struct {
	A      string `arg:"" name:"a" help:"The baseline: an experiment, point or run id, a record file, each optionally @REV."`
	B      string `arg:"" name:"b" help:"What to compare against it, in the same forms."`
	Format string `enum:"text,markdown,csv,json,html" default:"text" help:"Output format: text, markdown, csv, json or html (one self-contained page with plots)."`
	Plot   string `placeholder:"FILE" help:"Also draw each metric's samples, side by side, into FILE (.svg or .png)."`
	Strict bool   `help:"Fail when the sides differ in something not meant to vary (CPU, GPU, driver, backend, engine build and binaries, model file type and hashes, quantization, quality trade-offs)." env:"RIGOR_STRICT"`
	// FailOnRegression is --fail-on-regression[=PERCENT].
	FailOnRegression regressionGate `name:"fail-on-regression" placeholder:"PERCENT" help:"Exit with code 3 when a metric got significantly worse by more than PERCENT (default 0: any significant regression); write it --fail-on-regression=5." env:"RIGOR_FAIL_ON_REGRESSION"`
	Alpha            float64        `default:"0.05" help:"Significance level of the tests."`
	HistoryAlpha     float64        `name:"history-alpha" placeholder:"LEVEL" help:"Level of the rows of separate invocations tested against earlier invocations' noise (default: a fifth of --alpha, 0.01)."`
	Center           string         `enum:"mean,median" default:"mean" help:"Summary statistic: mean (t interval) or median (order-statistic interval, as benchstat)."`
	All              bool           `help:"Pool every recorded run of each point instead of the latest invocation's."`
	Incomplete       bool           `help:"Also use the samples of crashed, timed-out and interrupted runs."`
	Detect           string         `placeholder:"PERCENT" help:"Say how many runs per side would detect a change of PERCENT (e.g. 2%) at the noise observed." env:"RIGOR_DETECT"`
	Color            string         `enum:"auto,always,never" default:"auto" help:"Colour the verdicts: auto (on a terminal, unless NO_COLOR is set), always or never." env:"RIGOR_COLOR"`
	Verbose          bool           `short:"v" help:"List every model file whose hash or size differs (by default they are one line: N files differ)."`
}

// missingArgs: diff needs two sides; say which forms they take, with the
// side that was given as the example.
func (diffCmd) missingArgs(given []string) error {
	a, got := "ID", "got none"
	if len(given) > 0 {
		a, got = given[0], "got one: "+given[0]
	}
	id, _, _ := strings.Cut(a, "@")
	return withHint(fmt.Errorf("diff needs two experiments or runs to compare, A (the baseline) and B; %s", got),
		"each side is an experiment id (its latest runs), a point id, a run id, a record file, or any of these @REV (as committed at a git revision)",
		fmt.Sprintf("rigor diff %s OTHER_ID: against another experiment", id),
		fmt.Sprintf("rigor diff %s@HEAD~1 %s: the same experiment before and now", id, id),
		fmt.Sprintf("'rigor results %s' lists its runs and their ids", id))
}

func (diffCmd) Help() string {
	return `Compares two sides: what differs in their configuration (spec, lock, rig,
as "path: old → new") and, per metric and point, n, the mean ± the 95%
confidence interval of the mean, the change in percent, the p-value
(Holm-corrected across the points of a sweep) and a verdict: better, worse,
or ~ (inconclusive, which is not evidence of no change).

The samples are runs (the mean of each engine process) when both sides have
at least two runs of a point, tested with Welch's t-test, or as pairs with a
paired t-test of the log ratios when the runs ran in the same rounds of one
invocation (rigor run --rounds); otherwise the repetitions inside the runs,
tested with the Mann-Whitney U test. The report says which and why. For an
inconclusive result it says the smallest change the samples could have
detected ("with 5 runs per side, changes under ±9% cannot be told from noise
here"); --detect 2% says how many runs would detect a change of 2%. It warns
about outliers (kept), slow first repetitions, runs on a busy machine and
sides that ran under different machine states, and about sides that differ
in something not meant to vary (--strict makes that an error).

A side is an experiment id (its latest ok run with the other rounds of its
invocation, for a sweep per point; --all pools every run), a point id, a run
id, a record file, or any of these followed by @REV for the results as
committed at a git revision, read without a checkout. Of an invocation of
more than 1,000 rounds, 1,000 evenly spaced ones (the latest included) are
compared, and every format warns so. Sweeps are matched
point by point by their swept values; points on one side only are listed.

--format html writes one self-contained page (no script, nothing fetched):
the configuration diff beside the metric tables and a strip plot of both
sides' samples per metric. --plot FILE draws those strip plots into an SVG
or PNG file to paste into a pull request.

Exit codes: 0 compared, 1 error (or --strict found incomparable sides),
3 --fail-on-regression found a regression beyond the threshold.

Examples:
  rigor diff example/smoke example/smokeLong
  rigor diff example/smoke@HEAD~1 example/smoke --format markdown
  rigor diff results/example/smoke/20261202T031143Z-7cee.json 20261202T031229Z-301d --format json
  rigor diff example/smoke example/smokeLong --fail-on-regression=5
  rigor diff example/smoke example/smokeLong --format html > diff.html
  rigor diff example/smokeBatch@HEAD~1 example/smokeBatch --plot batch.svg

(Run ids are those 'rigor results' lists.)`
}

// regressionGate is the value of --fail-on-regression[=PERCENT]: a bool
// flag that takes an optional value.
type regressionGate struct {
	On      bool
	Percent float64
}

func (g *regressionGate) IsBool() bool { return true }

func (g *regressionGate) Decode(ctx *kong.DecodeContext) error {
	g.On, g.Percent = true, 0
	if ctx.Scan.Peek().Type != kong.FlagValueToken {
		return nil
	}
	tok := ctx.Scan.Pop()
	var s string
	switch v := tok.Value.(type) {
	case string:
		s = v
	case bool:
		g.On = v
		return nil
	default:
		s = fmt.Sprint(v)
	}
	s = strings.TrimSuffix(strings.TrimSpace(s), "%")
	switch strings.ToLower(s) {
	case "":
		g.On = false // an empty RIGOR_FAIL_ON_REGRESSION is unset
		return nil
	case "true", "yes":
		return nil
	case "false", "no":
		g.On = false
		return nil
	}
	p, err := strconv.ParseFloat(s, 64)
	if err != nil || p < 0 || math.IsInf(p, 0) || math.IsNaN(p) {
		return fmt.Errorf("want a percentage such as 5 or 2.5, got %q", s)
	}
	g.Percent = p
	return nil
}

// regressionError is a diff that found a regression under
// --fail-on-regression.
type regressionError struct {
	rows    []compare.Row
	percent float64
}

func (e *regressionError) Error() string {
	var parts []string
	for _, r := range e.rows {
		s := fmt.Sprintf("%s %+.1f%% (p=%.3f)", r.Metric, r.Delta, r.PAdjusted)
		if r.Point != "" {
			s = fmt.Sprintf("%s at %s %+.1f%% (p=%.3f)", r.Metric, r.Point, r.Delta, r.PAdjusted)
		}
		parts = append(parts, s)
	}
	what := "significantly worse"
	if e.percent > 0 {
		what = fmt.Sprintf("significantly worse by more than %g%%", e.percent)
	}
	return fmt.Sprintf("regression: %s: %s", what, strings.Join(parts, ", "))
}

func (e *regressionError) ExitCode() int { return ExitRegression }

// openStore opens the results store of the module around the working
// directory. Without a module it falls back to the working directory when
// every reference is a record file, which needs no module.
func (e *env) openStore(refs ...string) (*results.Store, error) {
	root, err := spec.FindRoot(e.wd)
	if err != nil {
		if errors.Is(err, spec.ErrNoModule) {
			files := len(refs) > 0
			for _, r := range refs {
				if _, kind, _ := results.ParseRef(r); kind != results.RefFile {
					files = false
				}
			}
			if files {
				return results.Open(e.wd), nil
			}
		}
		return nil, err
	}
	return results.Open(root), nil
}

// resolveRef loads the runs a command-line reference names, with hints
// for the ways it goes wrong.
func (e *env) resolveRef(store *results.Store, ref string) (*results.Selection, error) {
	return e.resolveRefLatest(store, ref, false)
}

// resolveRefLatest is resolveRef keeping, when latest is set, only the
// latest run of each point of an experiment or a point, the only records
// then read.
func (e *env) resolveRefLatest(store *results.Store, ref string, latest bool) (*results.Selection, error) {
	resolve := store.Resolve
	if latest {
		resolve = store.ResolveLatest
	}
	sel, err := resolve(context.Background(), ref)
	if err == nil {
		return sel, nil
	}
	err = e.relErr(err)
	_, kind, rev := results.ParseRef(ref)
	var le *results.LoadError
	switch {
	case errors.Is(err, gitrepo.ErrNotRepository):
		return nil, withHint(err, "ID@REV reads results from git history; the module must be in a git repository")
	case errors.As(err, &le) && errors.Is(err, results.ErrNotFound):
		return nil, withHint(err, "check the path; 'rigor results' lists the recorded runs with their ids")
	case errors.As(err, &le):
		return nil, withHint(err, "the record is damaged; restore it from git ('git checkout -- FILE') or remove it")
	case errors.Is(err, results.ErrNotFound) && rev != "":
		return nil, withHint(err, "'git log -- "+results.Dir+"/' shows the revisions that recorded runs; 'rigor log ID' shows an experiment's runs")
	case errors.Is(err, results.ErrNotFound) && kind == results.RefRun:
		return nil, withHint(err, "'rigor results' lists the recorded runs with their ids")
	case errors.Is(err, results.ErrNotFound):
		if unknown := e.unknownExperiment(store, ref); unknown != nil {
			return nil, unknown
		}
		hints := []string{"'rigor run " + strings.SplitN(ref, "[", 2)[0] + "' records a run; 'rigor results' lists what is recorded"}
		if sel != nil && len(sel.Warnings) > 0 {
			e.warn(sel.Warnings)
		}
		return nil, withHint(err, hints...)
	}
	return nil, err
}

// unknownExperiment returns a "no such experiment" error with the nearest
// known ids when the experiment of ref is neither in the module's
// experiments nor in results/, and nil when it is known (it has no runs
// yet, which the caller says).
func (e *env) unknownExperiment(store *results.Store, ref string) error {
	id, _, _ := results.ParseRef(ref)
	exp, _ := spec.SplitPointID(id)
	var known []string
	if ids, err := spec.AllIDs(store.Root); err == nil {
		known = append(known, ids...)
	}
	if dirs, err := store.Experiments(); err == nil {
		known = append(known, dirs...)
	}
	for _, k := range known {
		if k == exp {
			return nil
		}
	}
	if bad := spec.SyntaxProblems(store.Root); len(bad) > 0 {
		// The id may be in a file that does not parse: say so, not
		// "no such experiment".
		return e.unreadableError(bad)
	}
	var hints []string
	if n := suggest.Nearest(exp, known); n != "" {
		hints = append(hints, "did you mean "+n+"?")
	}
	hints = append(hints, "'rigor list' shows every experiment id; 'rigor results' lists what is recorded")
	return withHint(fmt.Errorf("no such experiment: %s", id), hints...)
}

// warn prints non-fatal problems to stderr.
func (e *env) warn(errs []error) {
	for _, w := range errs {
		fmt.Fprintf(e.stderr, "rigor: warning: %v\n", e.relErr(w))
	}
}

// relErr shows the file of a record that could not be loaded relative to
// the working directory, as the user would type it.
func (e *env) relErr(err error) error {
	var le *results.LoadError
	if errors.As(err, &le) && filepath.IsAbs(le.Path) {
		if rel, rerr := filepath.Rel(e.wd, le.Path); rerr == nil && filepath.IsLocal(rel) {
			le.Path = rel
		}
	}
	return err
}

// sideRuns turns a selection into a side: the latest run of each point,
// with the other rounds of its invocation, unless all is set.
func sideRuns(sel *results.Selection, all bool) compare.Side {
	runs := sel.Runs
	if !all && (sel.Kind == results.RefExperiment || sel.Kind == results.RefPoint) {
		runs = results.LatestInvocationPerPoint(runs)
	}
	side := compare.Side{Label: sel.Ref, Runs: make([]results.Run, len(runs))}
	for i, r := range runs {
		side.Runs[i] = *r
	}
	return side
}

// history returns every recorded run of the sides' experiments, as much
// of each as compare needs to estimate the noise between invocations of
// one lock on one host (issue 25): read from the index (results.Details),
// not from the records, so that a diff stays as fast as without it. Runs
// that cannot be listed are left out: the estimate is only smaller, and
// a comparison without one is untested.
func history(store *results.Store, sides ...compare.Side) []results.Run {
	seen := map[string]bool{}
	var out []results.Run
	for _, sd := range sides {
		for _, r := range sd.Runs {
			if r.Experiment == "" || seen[r.Experiment] {
				continue
			}
			seen[r.Experiment] = true
			sums, _, err := store.Details(results.Filter{Experiment: r.Experiment})
			if err != nil {
				continue
			}
			for _, x := range sums {
				out = append(out, compare.HistoryRun(x))
			}
		}
	}
	return out
}

// parseDetect reads --detect: a change in percent, "2%" or "2".
func parseDetect(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	p, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(s, "%")), 64)
	if err != nil || !(p > 0) || math.IsInf(p, 0) {
		return 0, withHint(fmt.Errorf("--detect %q: want a change in percent above 0", s), "write it --detect 2% (or --detect 2)")
	}
	return p, nil
}

// useColor decides whether to colour: always, never, or on a terminal
// when NO_COLOR is unset or empty (no-color.org).
func useColor(mode string, w io.Writer) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// textWidth is the width text output wraps at: the terminal's, else 100.
func textWidth(w io.Writer) int {
	if f, ok := termFile(w); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 40 {
			return cols
		}
	}
	return 100
}

func (c *diffCmd) Run(e *env) error {
	if c.Plot != "" {
		if err := checkPlotPath(c.Plot); err != nil {
			return err
		}
	}
	store, err := e.openStore(c.A, c.B)
	if err != nil {
		return err
	}
	a, err := e.resolveRefLatest(store, c.A, !c.All)
	if err != nil {
		return err
	}
	b, err := e.resolveRefLatest(store, c.B, !c.All)
	if err != nil {
		return err
	}
	if !(c.Alpha > 0 && c.Alpha < 1) {
		return fmt.Errorf("--alpha %g: want a level between 0 and 1, e.g. 0.05", c.Alpha)
	}
	if c.HistoryAlpha != 0 && !(c.HistoryAlpha > 0 && c.HistoryAlpha <= c.Alpha) {
		return fmt.Errorf("--history-alpha %g: want a level above 0 and at most --alpha (%g), e.g. 0.01", c.HistoryAlpha, c.Alpha)
	}
	detect, err := parseDetect(c.Detect)
	if err != nil {
		return err
	}
	opts := compare.Options{Alpha: c.Alpha, HistoryAlpha: c.HistoryAlpha, Center: compare.Center(c.Center), Strict: c.Strict, IncludeIncomplete: c.Incomplete, Detect: detect}
	// A side's sampled rounds are a caveat of the comparison, in every
	// format; records that could not be read are the command's.
	var wa, wb []error
	opts.SampledA, wa = results.SplitSampled(a.Warnings)
	opts.SampledB, wb = results.SplitSampled(b.Warnings)
	e.warn(wa)
	e.warn(wb)
	sa, sb := sideRuns(a, c.All), sideRuns(b, c.All)
	opts.History = history(store, sa, sb)
	rep, cerr := compare.Compare(sa, sb, opts)
	if rep == nil {
		return cerr
	}
	switch c.Format {
	case "markdown":
		err = text.WriteMarkdown(e.stdout, rep)
	case "csv":
		err = text.WriteCSV(e.stdout, rep)
		// CSV holds the tables only: the notes and warnings go to stderr.
		if rep.Untested != "" {
			fmt.Fprintf(e.stderr, "rigor: note: %s\n", rep.Untested)
		}
		for _, n := range rep.Notes {
			fmt.Fprintf(e.stderr, "rigor: note: %s\n", n)
		}
		for _, w := range rep.Warnings {
			fmt.Fprintf(e.stderr, "rigor: warning: %v\n", w)
		}
	case "json":
		err = text.WriteJSON(e.stdout, rep)
	case "html":
		err = reportsite.DiffPage(e.stdout, rep, reportsite.DiffOptions{Version: Version})
	default:
		err = text.WriteTextOptions(e.stdout, rep, text.TextOptions{Width: textWidth(e.stdout), Color: useColor(c.Color, e.stdout), Verbose: c.Verbose})
	}
	if err != nil {
		return err
	}
	if c.Plot != "" {
		f := reportsite.DiffFigure(rep)
		if f == nil {
			return withHint(fmt.Errorf("--plot %s: no metric has a sample on either side", c.Plot), "'rigor results' shows what the runs recorded")
		}
		if err := writePlot(e, c.Plot, f); err != nil {
			return err
		}
	}
	if cerr != nil {
		if errors.Is(cerr, compare.ErrIncomparable) {
			return withHint(cerr, "compare runs of the same rig and model, or drop --strict to compare anyway")
		}
		return cerr
	}
	if c.FailOnRegression.On {
		// The gate fails closed: a comparison whose rows are untested
		// cannot show that nothing regressed.
		if rep.Untested != "" {
			return withHint(fmt.Errorf("--fail-on-regression: some rows are untested, so the gate cannot decide: %s", strings.TrimPrefix(rep.Untested, "untested: ")),
				"compare runs of A and B interleaved in one invocation (rigor run A B --rounds 5), or invocations with a noise estimate from history")
		}
		if rows := rep.Regressions(c.FailOnRegression.Percent); len(rows) > 0 {
			return &regressionError{rows: rows, percent: c.FailOnRegression.Percent}
		}
	}
	return nil
}

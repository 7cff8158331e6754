package compare

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rigorbench/rigor/internal/compare/stats"
	"github.com/rigorbench/rigor/internal/hoststate"
	"github.com/rigorbench/rigor/internal/metric"
	"github.com/rigorbench/rigor/internal/results"
)

// Side is one side of a comparison: a label for people ("baseline",
// "main@HEAD~3", a run id) and the runs it stands for.
type Side struct {
	Label string
	Runs  []results.Run
}

// Center names the statistic a summary is centered on.
type Center string

const (
	// CenterMean is the arithmetic mean with a Student-t interval: the
	// figure llama-bench reports (avg_ts) and leaderboards publish.
	CenterMean Center = "mean"
	// CenterMedian is the median with a distribution-free order-statistic
	// interval, as benchstat reports.
	CenterMedian Center = "median"
)

// Options tune [Compare]. The zero value is the documented default.
type Options struct {
	// Alpha is the significance level; 0 means 0.05.
	Alpha float64
	// HistoryAlpha is the level of the rows tested against the history of
	// earlier invocations ([DecideHistory]); 0 means Alpha/5 (0.01 at the
	// default). That test rests on an assumption the paired design does
	// not make: that today's noise between invocations is the noise of the
	// earlier ones, so it is held to a stricter level (issue 25: at 0.05 a
	// run a side against its history gave false verdicts in 5.4% of real
	// A-vs-A diffs, the level itself). Each such row's p-value is
	// multiplied by Alpha/HistoryAlpha before Holm's correction, which
	// keeps it a valid p-value, so a family mixing both designs still
	// holds Alpha and a family of history rows holds HistoryAlpha.
	HistoryAlpha float64
	// Confidence is the level of the intervals; 0 means 0.95.
	Confidence float64
	// Power is the power the repetition estimate aims at; 0 means 0.8.
	Power float64
	// Center is the summary statistic; "" means CenterMean.
	Center Center
	// Strict makes Compare return an *IncomparableError (with the report)
	// when the comparability guard finds a mismatch.
	Strict bool
	// IncludeIncomplete uses the samples of runs whose status is not ok
	// (crashed, timeout, interrupted runs can hold partial metrics). By
	// default they are left out and counted in a warning.
	IncludeIncomplete bool
	// Detect is a change, in percent, the user wants to be able to see
	// (--detect 2%): each table then says how many runs (or rounds) per
	// side would detect it at the noise observed. 0: not asked.
	Detect float64
	// History holds earlier runs of the sides' experiments (any status,
	// any invocation): the invocations of the same lock on the same host
	// estimate the noise between invocations, which sides from separate
	// invocations need for a verdict. nil: no estimate, such rows are
	// [Untested].
	History []results.Run
	// SampledA and SampledB say which points' invocations had more rounds
	// than [results.MaxRounds] on side A and side B, of which the side's
	// runs are an evenly spaced sample ([results.SampleRounds]): each is
	// a warning of the comparison (kind [WarnSampled]), so that every
	// format of it says what was compared.
	SampledA, SampledB []*results.Sampled
}

func (o Options) withDefaults() (Options, error) {
	if o.Alpha == 0 {
		o.Alpha = 0.05
	}
	if o.Confidence == 0 {
		o.Confidence = 0.95
	}
	if o.HistoryAlpha == 0 {
		o.HistoryAlpha = o.Alpha / 5
	}
	if o.Power == 0 {
		o.Power = 0.8
	}
	if o.Center == "" {
		o.Center = CenterMean
	}
	switch {
	case !(o.Alpha > 0 && o.Alpha < 1):
		return o, fmt.Errorf("alpha %g: want a level between 0 and 1", o.Alpha)
	case !(o.HistoryAlpha > 0 && o.HistoryAlpha <= o.Alpha):
		return o, fmt.Errorf("history alpha %g: want a level above 0 and at most alpha (%g)", o.HistoryAlpha, o.Alpha)
	case !(o.Confidence > 0 && o.Confidence < 1):
		return o, fmt.Errorf("confidence %g: want a level between 0 and 1", o.Confidence)
	case !(o.Power > 0 && o.Power < 1):
		return o, fmt.Errorf("power %g: want a level between 0 and 1", o.Power)
	case o.Center != CenterMean && o.Center != CenterMedian:
		return o, fmt.Errorf("center %q: want %q or %q", o.Center, CenterMean, CenterMedian)
	case o.Detect < 0 || math.IsNaN(o.Detect) || math.IsInf(o.Detect, 0):
		return o, fmt.Errorf("detect %g%%: want a change above 0%%", o.Detect)
	}
	return o, nil
}

// Verdict is the outcome of one comparison.
type Verdict string

const (
	// Better: significantly better in the metric's direction.
	Better Verdict = "better"
	// Worse: significantly worse in the metric's direction.
	Worse Verdict = "worse"
	// Inconclusive ("~"): no significant difference; not evidence of none.
	Inconclusive Verdict = "~"
	// Changed: significantly different, for a metric with no known
	// direction.
	Changed Verdict = "changed"
	// Untested: the design cannot tell a change from the machine's drift
	// (one run a side, repetitions inside runs, requests of a serve run,
	// invocations without a noise estimate): the row shows the delta and
	// the intervals, and no test.
	Untested Verdict = "untested"
	// Confounded: significant, but the machine's state differed between
	// the sides enough to explain the change (Row.Confound names it).
	Confounded Verdict = "confounded"
	// NoVerdict: one side has no value, so there is nothing to test.
	NoVerdict Verdict = ""
)

// Report is the outcome of [Compare].
type Report struct {
	A, B   SideSummary
	Center Center
	Alpha  float64
	// HistoryAlpha is the level of the rows tested against the history
	// ([Options.HistoryAlpha]).
	HistoryAlpha float64
	Confidence   float64
	Power        float64
	// Config lists the configuration differences between the sides' runs
	// (spec, lock, rig), compared point by point.
	Config []Change
	// Mismatches are the comparability guard's findings: differences in
	// what was not meant to vary. They are also among the Warnings.
	Mismatches []Mismatch
	// Tables holds one table per metric, rows per matched point.
	Tables []Table
	// OnlyA and OnlyB label the points measured on one side only.
	OnlyA, OnlyB []string
	// Notes say what the tests used as samples and why (runs or the
	// repetitions inside them; pairs by round), printed before the
	// warnings.
	Notes []string
	// Warnings are non-fatal findings, printed after the tables.
	Warnings []Warning
	// Untested is one line when some rows carry no verdict: why, and the
	// command that would make the comparison testable.
	Untested string
	// Quality holds the quality measured against a baseline
	// (quality.measure), per matched point where a side measured it.
	Quality []QualityRow
}

// Units of the samples a row was tested on.
const (
	// UnitRuns: each run (one engine process, one record) counts as one
	// sample, the mean of its repetitions.
	UnitRuns = "runs"
	// UnitRepetitions: every repetition inside the runs counts as a
	// sample.
	UnitRepetitions = "repetitions"
)

// Tests a row can be decided by.
const (
	DecideMannWhitney = "mann-whitney-u"
	DecideWelch       = "welch-t"
	DecidePairedT     = "paired-t-log"
)

// SideSummary describes one side of a report.
type SideSummary struct {
	Label string
	// Runs counts the runs given; Used those whose samples count.
	Runs, Used int
	// Points counts the distinct points.
	Points      int
	Experiments []string
	// First and Last are the earliest and latest start times.
	First, Last time.Time
}

// Table compares one metric across the matched points.
type Table struct {
	// Metric is the metric key: name plus test ("tokSOut tg64").
	Metric    string
	Name      string
	Test      string
	Unit      string
	Direction string
	Rows      []Row
	// Geomean summarizes the rows by the geometric mean of each side's
	// centers, when at least two rows have both; its P fields are NaN.
	Geomean *Row
}

// Row is one metric at one point.
type Row struct {
	Metric    string
	Unit      string
	Direction string
	// Point labels the point by its swept values ("ub=16"); "" when the
	// sides have a single point.
	Point string
	A, B  Summary
	// Delta is the change of the center from A to B, in percent of A.
	Delta float64
	// P is the two-sided Mann–Whitney U p-value; PAdjusted is P after the
	// Holm correction over the table's rows (equal to P for one row).
	P, PAdjusted float64
	// Exact tells whether P is exact.
	Exact bool
	// Separated is true when the samples do not overlap at all.
	Separated bool
	// WelchP is Welch's t-test p-value, a secondary figure that assumes
	// normal noise; it never decides the verdict.
	WelchP  float64
	Verdict Verdict
	// Needed estimates the samples (of Unit) per side needed to detect a
	// change of the observed size at the observed noise ([Repetitions]);
	// 0 when unknown.
	Needed int
	// SampleUnit is what one sample is: [UnitRuns] when both sides have at
	// least two runs of the point, else [UnitRepetitions].
	SampleUnit string
	// Test is the test that decided: [DecideMannWhitney] on repetitions,
	// [DecideWelch] on runs, [DecidePairedT] on runs that pair up by
	// invocation and round.
	Test string
	// Pairs counts the pairs of a paired row; SignFlipP is the exact
	// sign-flip p-value of the same log ratios, a secondary figure.
	Pairs     int
	SignFlipP float64
	// RankP is the Mann–Whitney p-value of a row Welch's t-test decided,
	// a secondary figure.
	RankP float64
	// MDE is the minimum detectable change at the current n, in percent:
	// changes smaller than this cannot be told from noise (at power
	// [Report.Power]); +Inf when no change can be significant at this n,
	// NaN when the noise is unknown.
	MDE float64
	// DetectN is how many samples (of Unit, or pairs) per side would
	// detect a change of Options.Detect percent; 0 when not asked.
	DetectN int
	// Why says why an [Untested] row has no test.
	Why string
	// Confound names the machine state that explains a [Confounded]
	// row's change.
	Confound string
	// NoiseDF is the degrees of freedom of the noise between invocations
	// a [DecideHistory] row was tested against.
	NoiseDF int

	pairA, pairB []float64 // the paired run means, round by round
	recsA, recsB []recSamples
	runsA, runsB []*results.Run
	serve        bool
	sameInv      bool
	noiseKey     string
}

// Summary describes one side's samples of one metric at one point.
type Summary struct {
	// N counts the samples; Runs the runs they were pooled from.
	N, Runs int
	// Center is the mean or the median, as the report's Center says.
	Center float64
	// Low and High bound the confidence interval of the center; NaN when
	// none is available. Confidence is the coverage achieved, which can be
	// below the level asked for (the median of fewer than 6 samples) or 0.
	Low, High  float64
	Confidence float64
	Mean       float64
	Median     float64
	Stddev     float64
	Min, Max   float64
	Samples    []float64
	// Reps counts the repetitions pooled from the runs (equal to N when the
	// unit is repetitions).
	Reps int
	// Outliers are the samples whose modified z-score is beyond
	// [OutlierThreshold] (hyperfine's rule). They stay in the samples and
	// in the test.
	Outliers []float64
	// WarmupRuns counts the runs whose first repetition is an outlier on
	// the slow side (a warm-up effect).
	WarmupRuns int
	// WarmupFirstRun is true when the samples are runs and the first run
	// (in start order) is an outlier on the slow side: a first process
	// that paid for cold caches.
	WarmupFirstRun bool
}

// Mismatch is a difference in something that was not meant to vary between
// the sides, or within one side.
type Mismatch struct {
	// Field is one of [GuardFields].
	Field string
	// A and B are the distinct values seen on each side; [NotRecorded]
	// stands for runs that do not record the field.
	A, B []string
}

// NotRecorded is the value of a guarded field that a run does not record
// (an older record, an imported one): a field recorded on one side and
// not on the other is a difference, since nothing shows the two agree.
const NotRecorded = "(not recorded)"

// GuardFields are the fields the comparability guard checks, in the order
// it reports them.
var GuardFields = []string{
	"cpu", "cpuCores", "gpu", "gpuCount", "gpuMemoryGB", "driver", "powerLimit",
	"pinned", "backend", "buildId", "binaries", "build",
	"fileType", "modelSHA256", "quant", "quality",
}

var fieldNames = map[string]string{
	"cpu":         "CPU model",
	"cpuCores":    "CPU core count",
	"gpu":         "GPU model",
	"gpuCount":    "GPU count",
	"gpuMemoryGB": "GPU memory (GB)",
	"driver":      "GPU driver",
	"powerLimit":  "GPU power limit",
	"pinned":      "engine not pinned on one side:",
	"backend":     "engine backend",
	"buildId":     "engine build id",
	"binaries":    "engine binary hashes",
	"build":       "engine build flavour",
	"fileType":    "model file type",
	"modelSHA256": "model file hashes",
	"quant":       "quantization",
	"quality":     "quality trade-off",
}

// String says what differs, A's values before B's: "model file type F16
// → Q8_0", "GPU count 4 → 0"; or "GPU driver varies within each side: …"
// when a side pooled runs with several values.
func (m Mismatch) String() string {
	name := fieldNames[m.Field]
	show := func(vs []string) string {
		return strings.Join(vs, " and ")
	}
	if slices.Equal(m.A, m.B) {
		if m.Field == "pinned" {
			return "engine not pinned on some runs of each side: " + show(m.A)
		}
		return fmt.Sprintf("%s varies within each side: %s", name, show(m.A))
	}
	a, b := m.A, m.B
	if m.Field == "pinned" && !slices.Contains(a, "pinned") && !slices.Contains(b, "pinned") {
		return fmt.Sprintf("engine not pinned, and another endpoint: %s → %s", show(a), show(b))
	}
	if m.Field == "binaries" && len(a) == 1 && len(b) == 1 {
		// Name only the binaries that differ.
		a, b = []string{onlyDiffering(a[0], b[0])}, []string{onlyDiffering(b[0], a[0])}
	}
	return fmt.Sprintf("%s %s → %s", name, show(a), show(b))
}

// onlyDiffering keeps the name=hash entries of the list x that the list y
// does not hold.
func onlyDiffering(x, y string) string {
	if x == NotRecorded || y == NotRecorded {
		return x
	}
	ys := strings.Split(y, ",")
	var out []string
	for _, e := range strings.Split(x, ",") {
		if !slices.Contains(ys, e) {
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		return "(none)"
	}
	return strings.Join(out, ",")
}

// ErrIncomparable is matched by an [IncomparableError].
var ErrIncomparable = errors.New("sides are not comparable")

// IncomparableError is returned by [Compare] under Options.Strict when the
// comparability guard finds mismatches.
type IncomparableError struct {
	Mismatches []Mismatch
}

func (e *IncomparableError) Error() string {
	parts := make([]string, len(e.Mismatches))
	for i, m := range e.Mismatches {
		parts[i] = shortenHashes(m.String())
	}
	return "sides are not comparable: " + strings.Join(parts, "; ")
}

// Is makes errors.Is(err, ErrIncomparable) true.
func (e *IncomparableError) Is(target error) bool { return target == ErrIncomparable }

// WarningKind classifies a [Warning].
type WarningKind string

const (
	// WarnIncomparable: the comparability guard found a mismatch.
	WarnIncomparable WarningKind = "incomparable"
	// WarnUnverified: something the guard checks is not recorded.
	WarnUnverified WarningKind = "unverified"
	// WarnSmallSample: too few samples to reach significance, or to detect
	// a change of the observed size.
	WarnSmallSample WarningKind = "small-sample"
	// WarnOneSided: a metric was measured on one side only.
	WarnOneSided WarningKind = "one-sided"
	// WarnStatus: runs were left out (or kept) because of their status.
	WarnStatus WarningKind = "status"
	// WarnMixed: the runs pooled on one side differ in configuration.
	WarnMixed WarningKind = "mixed"
	// WarnOutlier: samples beyond hyperfine's modified z-score bound, or a
	// slow first repetition (warm-up).
	WarnOutlier WarningKind = "outlier"
	// WarnMachine: runs on a busy machine, or sides that ran under
	// different machine states.
	WarnMachine WarningKind = "machine"
	// WarnDetect: how many runs would detect the change asked for with
	// Options.Detect.
	WarnDetect WarningKind = "detect"
	// WarnSampled: an invocation had more rounds than results.MaxRounds;
	// an evenly spaced sample of them was compared ([Options.SampledA]).
	WarnSampled WarningKind = "sampled"
)

// Warning is a non-fatal finding of a comparison.
type Warning struct {
	Kind    WarningKind
	Metric  string
	Point   string
	Message string
}

// Error formats the warning with its metric and point, so that a Warning
// can travel as an error.
func (w Warning) Error() string {
	prefix := w.Metric
	if w.Point != "" {
		if prefix != "" {
			prefix += " at "
		}
		prefix += w.Point
	}
	if prefix == "" {
		return w.Message
	}
	return prefix + ": " + w.Message
}

// Regressions returns the rows that got significantly worse by more than
// thresholdPercent (compared as a magnitude: 5 means a loss of over 5%),
// the condition a CI gate fails on. Geomean rows never count.
func (r *Report) Regressions(thresholdPercent float64) []Row {
	var out []Row
	for _, t := range r.Tables {
		for _, row := range t.Rows {
			if row.Verdict == Worse && math.Abs(row.Delta) > thresholdPercent {
				out = append(out, row)
			}
		}
	}
	return out
}

// Comparable returns an *IncomparableError when the guard found
// mismatches, else nil.
func (r *Report) Comparable() error {
	if len(r.Mismatches) == 0 {
		return nil
	}
	return &IncomparableError{Mismatches: slices.Clone(r.Mismatches)}
}

// point is one point of one side: its runs, and the samples pooled from
// those that count.
type point struct {
	key   string // canonical JSON of the swept values
	label string
	swept map[string]any
	runs  []*results.Run // all, by start time
	used  []*results.Run // those whose samples count
	// metrics in order of first appearance
	metrics []*pooled
	byKey   map[string]*pooled
}

type pooled struct {
	key, name, test, unit, dir string
	samples                    []float64
	runs                       int
	recs                       []recSamples // per run, in start order
}

// recSamples is one run's samples of one metric.
type recSamples struct {
	run     *results.Run
	samples []float64
}

func (r recSamples) mean() float64 { return stats.Mean(r.samples) }

// latest is the run whose configuration stands for the point.
func (p *point) latest() *results.Run {
	if len(p.used) > 0 {
		return p.used[len(p.used)-1]
	}
	return p.runs[len(p.runs)-1]
}

type side struct {
	label   string
	points  map[string]*point
	order   []*point
	summary SideSummary
	skipped map[string]int // status → runs left out
	kept    map[string]int // status → incomplete runs kept
}

func usable(status string, includeIncomplete bool) bool {
	switch status {
	case results.StatusOK, "":
		return true
	case results.StatusFailed:
		return false
	}
	return includeIncomplete
}

func buildSide(s Side, def string, opts Options) *side {
	sd := &side{label: cmp.Or(s.Label, def), points: map[string]*point{},
		skipped: map[string]int{}, kept: map[string]int{}}
	runs := make([]*results.Run, len(s.Runs))
	for i := range s.Runs {
		runs[i] = &s.Runs[i]
	}
	slices.SortStableFunc(runs, runOrder)
	sd.summary = SideSummary{Label: sd.label, Runs: len(runs)}
	for _, r := range runs {
		if r.Experiment != "" && !slices.Contains(sd.summary.Experiments, r.Experiment) {
			sd.summary.Experiments = append(sd.summary.Experiments, r.Experiment)
		}
		if !r.Start.IsZero() {
			if sd.summary.First.IsZero() || r.Start.Before(sd.summary.First) {
				sd.summary.First = r.Start
			}
			if r.Start.After(sd.summary.Last) {
				sd.summary.Last = r.Start
			}
		}
		key, swept := sweptKey(r.Swept)
		p := sd.points[key]
		if p == nil {
			p = &point{key: key, swept: swept, byKey: map[string]*pooled{}}
			sd.points[key] = p
			sd.order = append(sd.order, p)
		}
		p.runs = append(p.runs, r)
		if !usable(r.Status, opts.IncludeIncomplete) {
			sd.skipped[r.Status]++
			continue
		}
		if r.Status != results.StatusOK && r.Status != "" {
			sd.kept[r.Status]++
		}
		sd.summary.Used++
		p.used = append(p.used, r)
		for _, m := range r.Metrics {
			k := m.Key()
			pm := p.byKey[k]
			if pm == nil {
				pm = &pooled{key: k, name: m.Name, test: m.Test, unit: m.Unit, dir: direction(m)}
				p.byKey[k] = pm
				p.metrics = append(p.metrics, pm)
			}
			var xs []float64
			if m.Test == serveTest {
				// A serve run's samples are its requests: the run is
				// the unit, and its recorded summary its one value.
				if v, ok := runValue(m); ok {
					xs = []float64{v}
				}
			} else if len(m.Samples) > 0 {
				xs = m.Samples
			} else if m.Value != 0 || m.Unit != "" {
				// An engine summary without samples counts as one sample.
				xs = []float64{m.Value}
			}
			pm.samples = append(pm.samples, xs...)
			if len(xs) > 0 {
				pm.recs = append(pm.recs, recSamples{run: r, samples: xs})
			}
			pm.runs++
		}
	}
	sd.summary.Experiments = slices.Clip(sd.summary.Experiments)
	sd.summary.Points = len(sd.order)
	return sd
}

func runOrder(a, b *results.Run) int {
	if c := a.Start.Compare(b.Start); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// direction returns the metric's direction, or the one its name implies
// when the record has none.
func direction(m results.Metric) string {
	return metric.Direction(m.Name, m.Unit, m.Direction)
}

// sweptKey returns the canonical key of a point's swept values (numbers
// normalized through JSON, so 16 and 16.0 match) and the normalized map.
func sweptKey(s map[string]any) (string, map[string]any) {
	if len(s) == 0 {
		return "", nil
	}
	norm := make(map[string]any, len(s))
	for k, v := range s {
		switch x := v.(type) {
		case string, float64, bool, nil:
			norm[k] = x
		default:
			var y any
			if b, err := json.Marshal(x); err == nil && json.Unmarshal(b, &y) == nil {
				norm[k] = y
			} else {
				norm[k] = fmt.Sprint(x)
			}
		}
	}
	return canonical(norm), norm
}

// pointLabel labels a point by its swept values, naming each field by its
// last path element ("ub=16") unless two fields share it.
func pointLabel(swept map[string]any, short map[string]string) string {
	keys := sortedKeys(swept)
	parts := make([]string, len(keys))
	for i, k := range keys {
		name := short[k]
		if name == "" {
			name = k
		}
		v := swept[k]
		s, ok := v.(string)
		if !ok {
			s = canonical(v)
		}
		parts[i] = name + "=" + s
	}
	return strings.Join(parts, " ")
}

func shortNames(points ...[]*point) map[string]string {
	full := map[string]bool{}
	for _, ps := range points {
		for _, p := range ps {
			for k := range p.swept {
				full[k] = true
			}
		}
	}
	count := map[string]int{}
	last := func(k string) string { return k[strings.LastIndex(k, ".")+1:] }
	for k := range full {
		count[last(k)]++
	}
	out := map[string]string{}
	for k := range full {
		if count[last(k)] == 1 {
			out[k] = last(k)
		} else {
			out[k] = k
		}
	}
	return out
}

// comparePoints orders points by their swept values, numbers numerically.
func comparePoints(a, b *point) int {
	ka, kb := sortedKeys(a.swept), sortedKeys(b.swept)
	for i := 0; i < len(ka) && i < len(kb); i++ {
		if c := strings.Compare(ka[i], kb[i]); c != 0 {
			return c
		}
		va, vb := a.swept[ka[i]], b.swept[kb[i]]
		fa, oka := va.(float64)
		fb, okb := vb.(float64)
		if oka && okb {
			if c := cmp.Compare(fa, fb); c != 0 {
				return c
			}
			continue
		}
		if c := strings.Compare(canonical(va), canonical(vb)); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(ka), len(kb))
}

// Compare compares side b against side a: configuration diff,
// comparability guard and one table per metric, points matched by their
// swept values. The pipeline is described in the package documentation.
//
// Under opts.Strict, a mismatch found by the guard makes Compare return the
// report together with an *IncomparableError, so that the caller can still
// show what differs.
func Compare(a, b Side, opts Options) (*Report, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	sa, sb := buildSide(a, "A", opts), buildSide(b, "B", opts)
	if sa.label == sb.label {
		sa.label, sb.label = sa.label+" (A)", sb.label+" (B)"
		sa.summary.Label, sb.summary.Label = sa.label, sb.label
	}
	rep := &Report{A: sa.summary, B: sb.summary, Center: opts.Center,
		Alpha: opts.Alpha, HistoryAlpha: opts.HistoryAlpha, Confidence: opts.Confidence, Power: opts.Power}

	short := shortNames(sa.order, sb.order)
	for _, sd := range []*side{sa, sb} {
		for _, p := range sd.order {
			p.label = pointLabel(p.swept, short)
		}
	}

	pairs := matchPoints(sa, sb, rep)

	cache := newConfigCache()
	rep.Config = configChanges(sa, sb, pairs, cache)

	// Sampled rounds, status and mixed-configuration warnings.
	rep.Warnings = append(sampledWarnings(opts.SampledA, sa.label), sampledWarnings(opts.SampledB, sb.label)...)
	for _, sd := range []*side{sa, sb} {
		if w, ok := statusWarning(sd); ok {
			rep.Warnings = append(rep.Warnings, w)
		}
	}
	rep.Mismatches, rep.Warnings = guard(sa, sb, cache, rep.Warnings)
	for _, pr := range pairs {
		if row, ok := qualityRow(pr.a, pr.b, pr.a.label, opts.Alpha); ok {
			rep.Quality = append(rep.Quality, row)
		}
	}
	if qualityMeasuredEverywhere(rep.Quality, len(pairs)) {
		dropQualityMismatch(rep)
	}
	for _, sd := range []*side{sa, sb} {
		rep.Warnings = append(rep.Warnings, mixedWarnings(sd, cache)...)
	}

	rep.Tables = metricTables(pairs, opts)
	// The figure to quote first.
	slices.SortStableFunc(rep.Tables, func(x, y Table) int {
		hx, hy := metric.IsHeadline(x.Name), metric.IsHeadline(y.Name)
		switch {
		case hx && !hy:
			return -1
		case hy && !hx:
			return 1
		}
		return 0
	})
	hist := historyNoise(opts.History, []*side{sa, sb})
	tests := make([]tableTests, len(rep.Tables))
	var family []float64
	for i := range rep.Tables {
		tests[i] = testTable(&rep.Tables[i], opts, hist)
		for j, p := range tests[i].ps {
			if rep.Tables[i].Rows[j].Test == DecideHistory {
				p = min(1, p*opts.Alpha/opts.HistoryAlpha)
			}
			family = append(family, p)
		}
	}
	adj := stats.Holm(family)
	k := 0
	for _, p := range family {
		if !math.IsNaN(p) {
			k++
		}
	}
	off := 0
	why := ""
	for i := range rep.Tables {
		t := &rep.Tables[i]
		n := len(tests[i].ps)
		rep.Warnings = append(rep.Warnings, judgeTable(t, tests[i], adj[off:off+n], k, opts)...)
		off += n
		rep.Warnings = append(rep.Warnings, outlierWarnings(t, rep.A.Label, rep.B.Label)...)
		for _, row := range t.Rows {
			if row.Verdict == Untested && why == "" {
				why = row.Why
			}
		}
	}
	if why != "" {
		rep.Untested = testableLine(sa, sb, why)
	}
	if f := describeFamily(k); f != "" {
		rep.Notes = append(rep.Notes, f)
	}
	rep.Notes = append(rep.Notes, unitNotes(rep)...)
	rep.Warnings = append(rep.Warnings, machineWarnings(sa, sb)...)

	if opts.Strict {
		if err := rep.Comparable(); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// pointPair is a point of A matched with a point of B.
type pointPair struct{ a, b *point }

// matchPoints matches the points of A and B by their swept values (two
// single points always match; one point against a sweep is matched with
// the sweep's nearest point, and a note says so), in point order, and
// lists in rep the points of each side left unmatched.
func matchPoints(sa, sb *side, rep *Report) []pointPair {
	var pairs []pointPair
	for _, p := range sa.order {
		if q := sb.points[p.key]; q != nil {
			pairs = append(pairs, pointPair{p, q})
		}
	}
	if len(pairs) == 0 && len(sa.order) == 1 && len(sb.order) == 1 {
		pairs = append(pairs, pointPair{sa.order[0], sb.order[0]})
		if sa.order[0].key != sb.order[0].key {
			name := func(l string) string { return cmp.Or(l, "(no sweep)") }
			sa.order[0].label = name(sa.order[0].label) + " vs " + name(sb.order[0].label)
			sb.order[0].label = sa.order[0].label
		}
	}
	// One point against a sweep (an experiment against its swept
	// variant): compare it with the sweep's nearest point, the one whose
	// configuration differs least, and say so.
	if len(pairs) == 0 && len(sa.order) > 0 && len(sb.order) > 0 && (len(sa.order) == 1) != (len(sb.order) == 1) {
		one, many := sa, sb
		if len(sb.order) == 1 {
			one, many = sb, sa
		}
		nc := newConfigCache()
		var best *point
		bestN := 0
		ps := slices.Clone(many.order)
		slices.SortStableFunc(ps, comparePoints)
		for _, p := range ps {
			n := len(diffConfigs(nc.of(one.order[0].latest()), nc.of(p.latest()), onlySection(SectionSpec)))
			if best == nil || n < bestN {
				best, bestN = p, n
			}
		}
		o := one.order[0]
		label := cmp.Or(o.label, "(no sweep)") + " vs " + best.label
		diffs := "differences"
		if bestN == 1 {
			diffs = "difference"
		}
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s is one point and %s a sweep of %d points: compared with the sweep's nearest point %s (%d spec %s); name a point of the sweep to compare another",
			one.label, many.label, len(many.order), best.label, bestN, diffs))
		if one == sa {
			pairs = append(pairs, pointPair{o, best})
		} else {
			pairs = append(pairs, pointPair{best, o})
		}
		o.label, best.label = label, label
	}
	slices.SortStableFunc(pairs, func(x, y pointPair) int { return comparePoints(x.a, y.a) })
	matchedA, matchedB := map[*point]bool{}, map[*point]bool{}
	for _, pr := range pairs {
		matchedA[pr.a], matchedB[pr.b] = true, true
	}
	for _, x := range []struct {
		sd      *side
		matched map[*point]bool
		out     *[]string
	}{{sa, matchedA, &rep.OnlyA}, {sb, matchedB, &rep.OnlyB}} {
		ps := slices.Clone(x.sd.order)
		slices.SortStableFunc(ps, comparePoints)
		for _, p := range ps {
			if !x.matched[p] {
				label := p.label
				if label == "" {
					label = "(no sweep)"
				}
				*x.out = append(*x.out, label)
			}
		}
	}
	return pairs
}

// configChanges is the configuration diff of the matched points (else of
// the sides' latest runs), point by point, merged: a change found at only
// some of several points names them.
func configChanges(sa, sb *side, pairs []pointPair, cache *configCache) []Change {
	var out []Change
	type agg struct {
		c      Change
		points []string
	}
	var changes []*agg
	seen := map[string]*agg{}
	diffPair := func(x, y *results.Run, label string) {
		for _, c := range diffConfigs(cache.of(x), cache.of(y), nil) {
			k := c.Path + "\x00" + string(c.Old) + "\x00" + string(c.New)
			g := seen[k]
			if g == nil {
				g = &agg{c: c}
				seen[k] = g
				changes = append(changes, g)
			}
			g.points = append(g.points, label)
		}
	}
	if len(pairs) > 0 {
		for _, pr := range pairs {
			diffPair(pr.a.latest(), pr.b.latest(), pr.a.label)
		}
	} else if len(sa.order) > 0 && len(sb.order) > 0 {
		diffPair(latestOf(sa), latestOf(sb), "")
	}
	for _, g := range changes {
		if len(pairs) > 1 && len(g.points) < len(pairs) {
			g.c.Points = g.points
		}
		out = append(out, g.c)
	}
	slices.SortStableFunc(out, func(x, y Change) int {
		if d := sectionRank(x.Section) - sectionRank(y.Section); d != 0 {
			return d
		}
		return strings.Compare(x.Path, y.Path)
	})
	return out
}

// metricTables are the tables of every metric the matched points have,
// a row per pair, each row's sample unit and test chosen from what was
// recorded (repetitions, runs, runs paired by round).
func metricTables(pairs []pointPair, opts Options) []Table {
	var tables []Table
	var metricOrder []string
	meta := map[string]*pooled{}
	for _, pr := range pairs {
		for _, p := range []*point{pr.a, pr.b} {
			for _, m := range p.metrics {
				if meta[m.key] == nil {
					meta[m.key] = m
					metricOrder = append(metricOrder, m.key)
				}
			}
		}
	}
	for _, key := range metricOrder {
		m := meta[key]
		t := Table{Metric: key, Name: m.name, Test: m.test, Unit: m.unit, Direction: m.dir}
		for _, pr := range pairs {
			ma, mb := pr.a.byKey[key], pr.b.byKey[key]
			if ma == nil && mb == nil {
				continue
			}
			row := Row{Metric: key, Unit: m.unit, SampleUnit: UnitRepetitions, Direction: m.dir, Point: pr.a.label, Test: DecideMannWhitney}
			row.serve = m.test == serveTest
			byRun := ma != nil && mb != nil && ((len(ma.recs) >= 2 && len(mb.recs) >= 2) || row.serve)
			if byRun {
				row.SampleUnit, row.Test = UnitRuns, DecideWelch
				row.pairA, row.pairB = pairByRound(ma.recs, mb.recs)
				if len(row.pairA) >= 2 {
					row.Test, row.Pairs = DecidePairedT, len(row.pairA)
				}
			}
			if ma != nil && mb != nil {
				row.recsA, row.recsB = ma.recs, mb.recs
				row.runsA, row.runsB = runsOf(ma.recs), runsOf(mb.recs)
				row.sameInv = sharesInvocation(ma.recs, mb.recs)
			}
			row.A = summarize(ma, opts, byRun, m.dir)
			row.B = summarize(mb, opts, byRun, m.dir)
			row.noiseKey = pr.a.key + "\x00" + key
			if pr.a.key != pr.b.key {
				row.noiseKey = ""
			}
			t.Rows = append(t.Rows, row)
		}
		tables = append(tables, t)
	}
	return tables
}

func latestOf(sd *side) *results.Run {
	var best *results.Run
	for _, p := range sd.order {
		r := p.latest()
		if best == nil || runOrder(best, r) < 0 {
			best = r
		}
	}
	return best
}

// summarize describes one side's samples: the runs' means when byRun, else
// every repetition.
func summarize(m *pooled, opts Options, byRun bool, dir string) Summary {
	if m == nil || len(m.samples) == 0 {
		nan := math.NaN()
		s := Summary{Center: nan, Low: nan, High: nan, Mean: nan, Median: nan, Stddev: nan, Min: nan, Max: nan}
		if m != nil {
			s.Runs = m.runs
		}
		return s
	}
	x := m.samples
	if byRun {
		x = make([]float64, len(m.recs))
		for i, r := range m.recs {
			x[i] = r.mean()
		}
	}
	s := Summary{N: len(x), Runs: m.runs, Mean: stats.Mean(x), Median: stats.Median(x), Stddev: stats.Stddev(x),
		Min: slices.Min(x), Max: slices.Max(x), Samples: slices.Clone(x), Reps: len(m.samples)}
	for _, i := range stats.Outliers(x) {
		s.Outliers = append(s.Outliers, x[i])
	}
	for _, r := range m.recs {
		if slowFirst(r.samples, dir) {
			s.WarmupRuns++
		}
	}
	s.WarmupFirstRun = byRun && slowFirst(x, dir)
	var iv stats.Interval
	if opts.Center == CenterMedian {
		s.Center = s.Median
		iv = stats.MedianCI(x, opts.Confidence)
	} else {
		s.Center = s.Mean
		iv = stats.MeanCI(x, opts.Confidence)
	}
	s.Low, s.High, s.Confidence = iv.Low, iv.High, iv.Confidence
	return s
}

// tableTests holds the raw tests of one table's rows: p (NaN for a row
// that is untested or one-sided), the direction of the change and the
// paired test of a paired row.
type tableTests struct {
	ps     []float64
	up     []bool
	paired []stats.PairedTest
}

// testTable runs the tests of one table's rows by their design (see
// verdict.go): paired rounds, or separate invocations against the noise
// of the history; every other row is [Untested]. The Holm correction is
// applied by the caller over every table's rows together.
func testTable(t *Table, opts Options, hist map[string]invNoise) tableTests {
	tt := tableTests{ps: make([]float64, len(t.Rows)), up: make([]bool, len(t.Rows)), paired: make([]stats.PairedTest, len(t.Rows))}
	for i := range t.Rows {
		row := &t.Rows[i]
		row.Delta, row.P, row.PAdjusted, row.WelchP = math.NaN(), math.NaN(), math.NaN(), math.NaN()
		row.MDE, row.SignFlipP, row.RankP = math.NaN(), math.NaN(), math.NaN()
		tt.ps[i] = math.NaN()
		if row.A.N == 0 || row.B.N == 0 {
			continue
		}
		if row.A.Center != 0 {
			row.Delta = (row.B.Center/row.A.Center - 1) * 100
		}
		if row.Test == DecidePairedT {
			pt := stats.PairedLogT(row.pairA, row.pairB)
			if !math.IsNaN(pt.P) {
				tt.paired[i] = pt
				row.P, row.SignFlipP = pt.P, pt.SignFlipP
				row.Separated = pt.SignFlipP == 2/math.Exp2(float64(pt.N))
				tt.ps[i], tt.up[i] = pt.P, pt.MeanLogRatio > 0
				continue
			}
			row.Pairs = 0
		}
		if est, ok := hist[row.noiseKey]; ok && row.noiseKey != "" && !row.sameInv {
			if p, up, ok := historyTest(row.recsA, row.recsB, est); ok {
				row.Test, row.P, row.NoiseDF = DecideHistory, p, est.df
				tt.ps[i], tt.up[i] = p, up
				continue
			}
		}
		row.Test, row.Pairs = "", 0
		row.Why = untestedWhy(row, row.sameInv)
	}
	return tt
}

// judgeTable gives each row of a table its verdict from the Holm-adjusted
// p-values of the whole report (adj, one per row; k tested rows in the
// family), the minimum detectable change, the confounding check, the
// warnings and the geomean row.
func judgeTable(t *Table, tt tableTests, adj []float64, k int, opts Options) []Warning {
	var warns []Warning
	var inconclusive []*Row
	for i := range t.Rows {
		row := &t.Rows[i]
		if row.A.N == 0 || row.B.N == 0 {
			side := "A"
			if row.A.N == 0 {
				side = "B"
			}
			warns = append(warns, Warning{Kind: WarnOneSided, Metric: t.Metric, Point: row.Point,
				Message: "measured on " + side + " only"})
			continue
		}
		if math.IsNaN(tt.ps[i]) {
			row.Verdict = Untested
			continue
		}
		row.PAdjusted = adj[i]
		row.Verdict = Inconclusive
		up := tt.up[i]
		if row.PAdjusted < opts.Alpha {
			switch {
			case t.Direction == results.HigherIsBetter && up, t.Direction == results.LowerIsBetter && !up:
				row.Verdict = Better
			case t.Direction == results.HigherIsBetter || t.Direction == results.LowerIsBetter:
				row.Verdict = Worse
			default:
				row.Verdict = Changed
			}
			if c := confounder(row, t.Direction); c != "" {
				row.Verdict, row.Confound = Confounded, c
				warns = append(warns, Warning{Kind: WarnMachine, Metric: t.Metric, Point: row.Point,
					Message: fmt.Sprintf("confounded: %s %s, but %s, which can explain it", t.Metric, FormatDelta(row.Delta), c)})
			}
		}
		if row.Test == DecidePairedT {
			pt := tt.paired[i]
			row.MDE = stats.PairedDetectableChange(pt.SDLogRatio, pt.N, opts.Alpha, opts.Power, k)
			row.Needed = stats.PairedRepetitions(row.Delta, pt.SDLogRatio, opts.Alpha, opts.Power, k)
			if opts.Detect > 0 {
				row.DetectN = stats.PairedRepetitions(opts.Detect, pt.SDLogRatio, opts.Alpha, opts.Power, k)
			}
		}
		if row.Verdict == Inconclusive {
			inconclusive = append(inconclusive, row)
		}
	}
	if w, ok := powerWarning(t, inconclusive); ok {
		warns = append(warns, w)
	}
	if opts.Detect > 0 {
		if w, ok := detectWarning(t, opts.Detect); ok {
			warns = append(warns, w)
		}
	}
	// Geomean over the rows that have both centers.
	var ca, cb []float64
	for _, row := range t.Rows {
		if row.A.N > 0 && row.B.N > 0 && row.A.Center > 0 && row.B.Center > 0 {
			ca, cb = append(ca, row.A.Center), append(cb, row.B.Center)
		}
	}
	if len(ca) > 1 {
		nan := math.NaN()
		ga, gb := stats.GeoMean(ca), stats.GeoMean(cb)
		g := &Row{Metric: t.Metric, Unit: t.Unit, Direction: t.Direction, Point: "geomean",
			A:     Summary{Center: ga, Low: nan, High: nan, Mean: nan, Median: nan, Stddev: nan, Min: nan, Max: nan},
			B:     Summary{Center: gb, Low: nan, High: nan, Mean: nan, Median: nan, Stddev: nan, Min: nan, Max: nan},
			Delta: (gb/ga - 1) * 100, P: nan, PAdjusted: nan, WelchP: nan, MDE: nan, SignFlipP: nan, RankP: nan}
		t.Geomean = g
	}
	return warns
}

// pairByRound pairs A's and B's runs that ran in the same round of the
// same invocation (results.Run.Invocation and Round), in round order, and
// returns their means. Runs without a round, or without a partner, are
// left out of the pairs.
func pairByRound(a, b []recSamples) (pa, pb []float64) {
	type key struct {
		inv   string
		round int
	}
	of := func(r recSamples) (key, bool) {
		if r.run.Invocation == "" || r.run.Round <= 0 {
			return key{}, false
		}
		return key{r.run.Invocation, r.run.Round}, true
	}
	bm := map[key]float64{}
	for _, r := range b {
		if k, ok := of(r); ok {
			bm[k] = r.mean()
		}
	}
	for _, r := range a {
		k, ok := of(r)
		if !ok {
			continue
		}
		if v, ok := bm[k]; ok {
			pa, pb = append(pa, r.mean()), append(pb, v)
		}
	}
	return pa, pb
}

// slowFirst reports whether the first of a run's repetitions is an outlier
// on the slow side (hyperfine's warm-up warning): below the others for a
// higher-is-better metric, above for a lower-is-better one.
func slowFirst(x []float64, dir string) bool {
	z := stats.ModifiedZ(x)
	if z == nil {
		return false
	}
	switch dir {
	case results.HigherIsBetter:
		return z[0] < -stats.OutlierThreshold
	case results.LowerIsBetter:
		return z[0] > stats.OutlierThreshold
	}
	return false
}

// pooledSD is the pooled standard deviation of two samples; with one
// sample on a side it is the other side's; NaN when neither has two.
func pooledSD(a, b Summary) float64 {
	switch {
	case a.N >= 2 && b.N >= 2:
		return math.Sqrt((float64(a.N-1)*a.Stddev*a.Stddev + float64(b.N-1)*b.Stddev*b.Stddev) /
			float64(a.N+b.N-2))
	case a.N >= 2:
		return a.Stddev
	case b.N >= 2:
		return b.Stddev
	}
	return math.NaN()
}

// perSide says how many samples a row has: "5 runs per side", "3 vs 4
// repetitions", "5 paired rounds".
func perSide(row *Row) string {
	if row.Test == DecidePairedT {
		return fmt.Sprintf("%d paired rounds", row.Pairs)
	}
	unit := row.SampleUnit
	if row.A.N == 1 && row.B.N == 1 {
		unit = strings.TrimSuffix(unit, "s")
	}
	if row.A.N == row.B.N {
		return fmt.Sprintf("%d %s per side", row.A.N, unit)
	}
	return fmt.Sprintf("%d vs %d %s", row.A.N, row.B.N, unit)
}

// powerWarning says, for the inconclusive rows of a table, the smallest
// change their n could have detected: "with 5 runs per side, changes under
// ±9.1% cannot be told from noise here"; one warning per table.
func powerWarning(t *Table, rows []*Row) (Warning, bool) {
	var known []*Row
	for _, r := range rows {
		if !math.IsNaN(r.MDE) && !math.IsInf(r.MDE, 0) {
			known = append(known, r)
		}
	}
	if len(known) == 0 {
		return Warning{}, false
	}
	w := Warning{Kind: WarnSmallSample, Metric: t.Metric}
	if len(known) == 1 {
		r := known[0]
		w.Point = r.Point
		w.Message = fmt.Sprintf("with %s, changes under ±%s cannot be told from noise here (observed %s)",
			perSide(r), FormatPercent(r.MDE), FormatDelta(r.Delta))
		return w, true
	}
	var points []string
	mlo, mhi := math.Inf(1), math.Inf(-1)
	sizes := map[string]bool{}
	for _, r := range known {
		points = append(points, r.Point)
		mlo, mhi = math.Min(mlo, r.MDE), math.Max(mhi, r.MDE)
		sizes[perSide(r)] = true
	}
	n := "these samples"
	if len(sizes) == 1 {
		n = perSide(known[0])
	}
	span := FormatPercent(mlo)
	if FormatPercent(mlo) != FormatPercent(mhi) {
		span = FormatPercent(mlo) + "–" + FormatPercent(mhi)
	}
	w.Message = fmt.Sprintf("inconclusive at %s; with %s, changes under ±%s cannot be told from noise here",
		strings.Join(points, ", "), n, span)
	return w, true
}

// detectWarning says how many samples per side would detect the change the
// user asked for (--detect), per row.
func detectWarning(t *Table, percent float64) (Warning, bool) {
	var parts []string
	for i := range t.Rows {
		r := &t.Rows[i]
		if r.A.N == 0 || r.B.N == 0 {
			continue
		}
		var s string
		switch {
		case r.DetectN == 0:
			s = "unknown: the noise is unknown with one sample a side"
		case r.Test == DecidePairedT:
			s = fmt.Sprintf("~%d paired rounds (now %d)", r.DetectN, r.Pairs)
		case r.SampleUnit == UnitRuns:
			s = fmt.Sprintf("~%d runs per side (now %d vs %d)", r.DetectN, r.A.N, r.B.N)
		default:
			s = fmt.Sprintf("~%d repetitions per side at the noise inside these runs (now %d vs %d); the noise between runs is unknown until each side has 2 runs", r.DetectN, r.A.N, r.B.N)
		}
		if r.Point != "" {
			s = r.Point + ": " + s
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return Warning{}, false
	}
	return Warning{Kind: WarnDetect, Metric: t.Metric,
		Message: "to detect a change of " + FormatPercent(percent) + ": " + strings.Join(parts, "; ")}, true
}

// outlierWarnings reports, per side, the samples beyond hyperfine's
// modified z-score bound and the runs whose first repetition was slow.
func outlierWarnings(t *Table, labelA, labelB string) []Warning {
	var out []Warning
	for _, row := range t.Rows {
		for _, x := range []struct {
			label string
			s     Summary
		}{{labelA, row.A}, {labelB, row.B}} {
			if len(x.s.Outliers) > 0 {
				vals := make([]string, len(x.s.Outliers))
				for i, v := range x.s.Outliers {
					vals[i] = FormatNum(v)
				}
				unit := row.SampleUnit
				if unit == "" {
					unit = "samples"
				}
				out = append(out, Warning{Kind: WarnOutlier, Metric: t.Metric, Point: row.Point,
					Message: fmt.Sprintf("%s: %s of %d %s beyond hyperfine's outlier bound (modified z-score over %s): %s; kept in the test",
						x.label, countWord(len(x.s.Outliers)), x.s.N, unit, FormatLevel(stats.OutlierThreshold), strings.Join(vals, ", "))})
			}
			if x.s.WarmupFirstRun {
				out = append(out, Warning{Kind: WarnOutlier, Metric: t.Metric, Point: row.Point,
					Message: fmt.Sprintf("%s: the first of %d runs is a slow outlier, a warm-up effect (cold caches, clocks); it is kept in the test", x.label, x.s.N)})
			}
			if x.s.WarmupRuns > 0 {
				out = append(out, Warning{Kind: WarnOutlier, Metric: t.Metric, Point: row.Point,
					Message: fmt.Sprintf("%s: the first repetition of %d of %d runs is a slow outlier, a warm-up effect; a discarded warm-up repetition would remove it",
						x.label, x.s.WarmupRuns, x.s.Runs)})
			}
		}
	}
	return out
}

func countWord(n int) string {
	if n == 1 {
		return "1 sample"
	}
	return strconv.Itoa(n) + " samples"
}

// unitNotes says which designs the rows were tested by, and what the
// intervals of the untested rows stand on.
func unitNotes(rep *Report) []string {
	var history, reps, serve bool
	paired := false
	unpairedA, unpairedB := 0, 0
	for _, t := range rep.Tables {
		for _, r := range t.Rows {
			if r.A.N == 0 || r.B.N == 0 {
				continue
			}
			switch {
			case r.Test == DecidePairedT:
				paired = true
				unpairedA, unpairedB = max(unpairedA, r.A.N-r.Pairs), max(unpairedB, r.B.N-r.Pairs)
			case r.Test == DecideHistory:
				history = true
			case r.serve:
				serve = true
			case r.SampleUnit == UnitRepetitions:
				reps = true
			}
		}
	}
	var notes []string
	if paired {
		n := "paired rounds: runs of A and B that ran in the same round of one invocation are compared as pairs " +
			"(a paired t-test of the log ratio B/A per round, the exact sign-flip test beside it); load that drifts from round to round cancels within each pair"
		if unpairedA > 0 || unpairedB > 0 {
			n += fmt.Sprintf("; runs without a partner in the same round (up to %d of A's, %d of B's per point) count in the means but not in the test", unpairedA, unpairedB)
		}
		notes = append(notes, n)
	}
	if history {
		notes = append(notes, fmt.Sprintf("separate invocations: each invocation's mean is one sample, tested against the spread of earlier invocations of the same lock on the same host (a t-test on the log means) at α = %s, stricter than paired rounds because it assumes today's noise is the history's", strconv.FormatFloat(rep.HistoryAlpha, 'g', -1, 64)))
	}
	if reps {
		notes = append(notes, "the intervals of a side with one run are over the repetitions inside it: "+
			"they share the machine's state of their minute and understate the noise between runs, so they are not tested")
	}
	if serve {
		notes = append(notes, "serve runs: each run is one sample, its requests summarised (mean, median, percentiles as recorded); the requests are not repetitions")
	}
	return notes
}

// machineWarnings reports the runs that ran on a busy machine and, when
// both sides recorded the machine's state, the figures in which the
// busiest run of each side differ.
func machineWarnings(sa, sb *side) []Warning {
	var out []Warning
	busiest := func(sd *side) *hoststate.State {
		var best *hoststate.State
		var bestLoad float64
		busy, total := 0, 0
		why := ""
		for _, p := range sd.order {
			for _, r := range p.used {
				st := r.Machine
				if st == nil {
					continue
				}
				total++
				if b, w := st.Busy(hoststate.DefaultBusyShare); b {
					busy++
					if why == "" {
						why = w
					}
				}
				load := stateLoad(st)
				if best == nil || load > bestLoad {
					best, bestLoad = st, load
				}
			}
		}
		if busy > 0 {
			out = append(out, Warning{Kind: WarnMachine,
				Message: fmt.Sprintf("%s: %d of %d runs ran on a busy machine (%s)", sd.label, busy, total, why)})
		}
		return best
	}
	ma, mb := busiest(sa), busiest(sb)
	if d := hoststate.Compare(ma, mb); len(d) > 0 {
		out = append(out, Warning{Kind: WarnMachine,
			Message: "A and B ran under different machine states: " + strings.Join(d, "; ")})
	}
	return out
}

// stateLoad orders machine states by how busy they were: the cores other
// processes took, else the peak load.
func stateLoad(st *hoststate.State) float64 {
	if st.OtherCores != nil {
		return *st.OtherCores
	}
	if st.Peak != nil {
		return st.Peak.Load1
	}
	if st.Before != nil {
		return st.Before.Load1
	}
	return 0
}

func statusWarning(sd *side) (Warning, bool) {
	describe := func(m map[string]int) string {
		var parts []string
		for _, st := range sortedKeys(m) {
			parts = append(parts, fmt.Sprintf("%d %s", m[st], st))
		}
		return strings.Join(parts, ", ")
	}
	var msgs []string
	if len(sd.skipped) > 0 {
		msgs = append(msgs, fmt.Sprintf("left out %s of %d runs (status not ok)", describe(sd.skipped), sd.summary.Runs))
	}
	if len(sd.kept) > 0 {
		msgs = append(msgs, fmt.Sprintf("kept the samples of %s runs", describe(sd.kept)))
	}
	if len(msgs) == 0 {
		return Warning{}, false
	}
	return Warning{Kind: WarnStatus, Message: sd.label + ": " + strings.Join(msgs, "; ")}, true
}

// guard collects, per side, the distinct values of what must not vary,
// and reports each field whose value sets differ or hold several values.
// A run that does not record a field counts as the value [NotRecorded],
// so that a field present on one side only is a difference (a 4-GPU run
// against a CPU-only one, a run with binary hashes against one without).
func guard(sa, sb *side, cache *configCache, warns []Warning) ([]Mismatch, []Warning) {
	type sets map[string][]string
	collect := func(sd *side) (sets, int, int) {
		out := sets{}
		unhashed, unpinned := 0, 0
		add := func(f, v string) {
			if v == "" {
				v = NotRecorded
			}
			if !slices.Contains(out[f], v) {
				out[f] = append(out[f], v)
			}
		}
		for _, p := range sd.order {
			runs := p.used
			if len(runs) == 0 {
				runs = p.runs
			}
			for _, r := range runs {
				for _, f := range GuardFields {
					add(f, guardValue(f, r, cache))
				}
				add("engineInputs", engineInputs(r))
				if guardValue("modelSHA256", r, cache) == "" {
					unhashed++
				}
				if r.Engine.Unpinned != "" {
					unpinned++
				}
			}
		}
		for f := range out {
			slices.Sort(out[f])
		}
		return out, unhashed, unpinned
	}
	va, ua, pa := collect(sa)
	vb, ub, pb := collect(sb)
	var ms []Mismatch
	differs := map[string]bool{}
	// The build id and the binaries follow from the engine's commit,
	// patches and recipe: when those differ on purpose (a patch before and
	// after), the configuration diff shows why the builds differ. Only
	// the same engine inputs built into other bytes (another toolchain, a
	// replaced binary) is a mismatch.
	sameEngine := slices.Equal(va["engineInputs"], vb["engineInputs"]) && len(va["engineInputs"]) == 1
	for _, f := range GuardFields {
		a, b := va[f], vb[f]
		if len(a) == 0 || len(b) == 0 {
			continue
		}
		if (f == "buildId" || f == "binaries") && !sameEngine {
			continue
		}
		if !slices.Equal(a, b) || len(a) > 1 || len(b) > 1 {
			differs[f] = true
			if f == "modelSHA256" && differs["fileType"] {
				// The file type says what changed; "hashes differ" adds
				// nothing.
				continue
			}
			m := Mismatch{Field: f, A: a, B: b}
			ms = append(ms, m)
			warns = append(warns, Warning{Kind: WarnIncomparable, Message: shortenHashes(m.String())})
		}
	}
	if pa > 0 && pb > 0 && !differs["pinned"] {
		// Both sides measured servers rigor did not start: nothing but
		// what they reported of themselves (the build flavour, guarded
		// above) says they ran the same engine and model.
		warns = append(warns, Warning{Kind: WarnUnverified,
			Message: "engine not pinned: " + sa.label + " and " + sb.label + " measured an endpoint rigor did not start; " +
				"only what it reported of itself is compared, not its build or its model's bytes"})
	}
	var missing []string
	if ua > 0 {
		missing = append(missing, sa.label)
	}
	if ub > 0 {
		missing = append(missing, sb.label)
	}
	if len(missing) > 0 && !differs["modelSHA256"] {
		warns = append(warns, Warning{Kind: WarnUnverified,
			Message: "model file hashes are not recorded for runs of " + strings.Join(missing, " and ") +
				": the model bytes are not checked"})
	}
	return ms, warns
}

// guardValue is the value of a guarded field for one run, "" when the run
// does not record it. A recorded rig without GPUs has GPU model "none"
// and count 0: GPU presence is part of the comparison.
func guardValue(f string, r *results.Run, cache *configCache) string {
	g := r.Rig
	switch f {
	case "cpu":
		if g != nil {
			return g.HostProcessorModelName
		}
	case "cpuCores":
		if g != nil && g.HostProcessorCoreCount > 0 {
			return strconv.Itoa(g.HostProcessorCoreCount)
		}
	case "gpu":
		if g != nil {
			if n := rigGPU(g); n != "" {
				return n
			}
			if rigGPUCount(g) == 0 {
				return "none"
			}
		}
	case "gpuCount":
		if g != nil {
			return strconv.Itoa(rigGPUCount(g))
		}
	case "gpuMemoryGB":
		if g != nil && g.AcceleratorMemoryCapacityGB > 0 {
			return canonical(g.AcceleratorMemoryCapacityGB)
		}
		if g != nil && rigGPUCount(g) == 0 {
			return "0"
		}
	case "driver":
		if g != nil && rigGPUCount(g) == 0 {
			return "none"
		}
		return rigDriver(g)
	case "powerLimit":
		// The limits the power sampler read before the run, else the
		// rig's: a GPU allowed less power is slower by design.
		if m := r.Machine; m != nil && m.Energy != nil {
			if s := m.Energy.PowerLimits(); s != "" {
				return s
			}
		}
		if g != nil {
			var parts []string
			for _, a := range g.Accelerators {
				if w := a.EffectivePowerLimitW(); w > 0 {
					parts = append(parts, "gpu"+strconv.Itoa(a.Index)+"="+strconv.FormatFloat(w, 'f', -1, 64)+" W")
				}
			}
			return strings.Join(parts, ", ")
		}
	case "backend":
		if r.Engine.Backend != "" {
			return r.Engine.Backend
		}
		return specString(cache.of(r), "engine.build.backend")
	case "pinned":
		if r.Engine.Unpinned != "" {
			return "not pinned (" + r.Engine.Source + ")"
		}
		return "pinned"
	case "buildId":
		return r.Engine.BuildID
	case "build":
		// What the engine said of the binary that ran: node-llama-cpp's
		// prebuilt portable binaries and a build made here run the same
		// version at different speeds (issue 18 measured prefill at half).
		return r.Engine.Build.Summary()
	case "binaries":
		var kv []string
		for _, k := range sortedKeys(r.Engine.Binaries) {
			kv = append(kv, k+"="+r.Engine.Binaries[k])
		}
		return strings.Join(kv, ",")
	case "fileType":
		var ts []string
		for _, fl := range r.Model.Files {
			if t := fileTypeName(fl.GGUF); t != "" && !slices.Contains(ts, t) {
				ts = append(ts, t)
			}
		}
		slices.Sort(ts)
		return strings.Join(ts, "+")
	case "modelSHA256":
		var hs []string
		for _, fl := range r.Model.Files {
			if fl.SHA256 != "" {
				hs = append(hs, fl.SHA256)
			}
		}
		slices.Sort(hs)
		return strings.Join(hs, ",")
	case "quant":
		if r.Model.Quant != "" {
			return r.Model.Quant
		}
		return specString(cache.of(r), "model.quant")
	case "quality":
		var kv []string
		for _, l := range cache.of(r) {
			if k, ok := strings.CutPrefix(l.path, "quality."); ok && !strings.HasPrefix(k, "measure.") {
				kv = append(kv, k+"="+strings.Trim(l.value, `"`))
			}
		}
		if len(kv) == 0 {
			return "none"
		}
		return strings.Join(kv, ",")
	}
	return ""
}

// engineInputs identifies what a run's engine was built from: family,
// source, commit and patches.
func engineInputs(r *results.Run) string {
	e := r.Engine
	parts := []string{e.Family, e.Source, e.Commit, e.Version}
	for _, p := range e.Patches {
		parts = append(parts, p.Path+"@"+p.SHA256)
	}
	return strings.Join(parts, "\x00")
}

// fileTypeName is the GGUF general.file_type of a model file's recorded
// facts, without llama.cpp's "MOSTLY_" prefix ("Q8_0", "F16"), or "".
func fileTypeName(facts map[string]any) string {
	if facts == nil {
		return ""
	}
	if n, ok := facts["fileTypeName"].(string); ok && n != "" {
		return strings.TrimPrefix(n, "MOSTLY_")
	}
	switch v := facts["fileType"].(type) {
	case float64:
		if v >= 0 {
			return "type " + strconv.FormatFloat(v, 'f', -1, 64)
		}
	case json.Number:
		return "type " + v.String()
	}
	return ""
}

func shortenHashes(s string) string {
	return longHexRE.ReplaceAllStringFunc(s, func(h string) string { return h[:12] + "…" })
}

// specString returns the string value of a spec leaf, or "".
func specString(c config, path string) string {
	for _, l := range c {
		if l.path == path {
			var s string
			if json.Unmarshal([]byte(l.value), &s) == nil {
				return s
			}
			return l.value
		}
	}
	return ""
}

// sampledWarnings are a side's [Options.SampledA] or SampledB, labelled
// with the side.
func sampledWarnings(sampled []*results.Sampled, label string) []Warning {
	var out []Warning
	for _, x := range sampled {
		out = append(out, Warning{Kind: WarnSampled, Message: label + ": " + x.Error()})
	}
	return out
}

// mixedWarnings reports points whose pooled runs differ in configuration
// (other than the rig's hostname, which never takes part).
func mixedWarnings(sd *side, cache *configCache) []Warning {
	var out []Warning
	for _, p := range sd.order {
		if len(p.used) < 2 {
			continue
		}
		ref := cache.of(p.latest())
		var paths []string
		for _, r := range p.used[:len(p.used)-1] {
			for _, c := range diffConfigs(cache.of(r), ref, nil) {
				if !slices.Contains(paths, c.Path) {
					paths = append(paths, c.Path)
				}
			}
		}
		if len(paths) == 0 {
			continue
		}
		slices.Sort(paths)
		list := paths
		more := ""
		if len(list) > 5 {
			more = fmt.Sprintf(" and %d more", len(list)-5)
			list = list[:5]
		}
		out = append(out, Warning{Kind: WarnMixed, Point: p.label,
			Message: fmt.Sprintf("%s pools %d runs that differ in %s%s; the configuration diff shows the latest",
				sd.label, len(p.used), strings.Join(list, ", "), more)})
	}
	return out
}

package compare

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/rigorbench/rigor/internal/compare/stats"
	"github.com/rigorbench/rigor/internal/metric"
	"github.com/rigorbench/rigor/internal/results"
)

// History is an experiment's runs over time, the substance of `rigor log`.
type History struct {
	// Experiments lists the experiment ids seen, in order of first run.
	Experiments []string
	// Metrics lists the metric keys seen, tokSOut first, then tokSPrompt,
	// then the others in order of appearance.
	Metrics []string
	// Entries are the runs in the order they started, oldest first (runs
	// that share a start time, as an imported sweep's do, by point).
	Entries []Entry
	// Chart is the tokSOut series over time, one series per point; nil
	// when no run has tokSOut.
	Chart *Chart
	// Quality is the speed-vs-quality view of the experiment
	// ([SpeedQualityOf]), set by the caller, which reads the records it
	// needs; nil when its points measured no quality.
	Quality *SpeedQuality
}

// Entry is one run in a [History].
type Entry struct {
	ID         string
	Experiment string
	Point      string // swept values ("ub=16"); "" without a sweep
	// Round is the run's round within its invocation (from 1) and Rounds
	// the invocation's last round seen; both 0 for a run of an invocation
	// of one round.
	Round, Rounds int
	Start, End    time.Time
	// Rig summarizes the machine: "4× Intel Arc Pro B70", else the CPU.
	Rig  string
	Host string
	// Commit is the engine commit, shortened to 7 digits; the requested
	// ref when no commit was resolved.
	Commit  string
	Status  string
	Error   string
	Metrics []MetricStat
	// Drift lists what changed since the previous run: the lock (engine,
	// patches, model files) against the previous run of any point, the rig
	// against the previous run on the same host, and the spec against the
	// previous run of the same point. A lock digest that changed with no
	// recorded fact to show for it appears as the path "lockDigest".
	Drift []Change
	// Busy says why the machine was busy while the run ran ("other
	// processes took 1.6 of 2 cores while the engine ran (load 3.1)"); ""
	// when it was not, or the record has no machine state.
	Busy string
}

// MetricStat is one metric of one run: the mean of its samples, the 95%
// confidence interval of the mean and the spread.
type MetricStat struct {
	Key    string
	Name   string
	Test   string
	Unit   string
	N      int
	Mean   float64
	Stddev float64 // NaN with fewer than two samples
	// Low and High bound the Student-t 95% interval of the mean; NaN with
	// fewer than two samples.
	Low, High float64
	Min       float64
	Max       float64
}

// Chart is one metric's per-run mean over time.
type Chart struct {
	Metric string
	Unit   string
	Series []Series
}

// Series is the chart of one point: one value per run of the point, oldest
// first, NaN where the run has no value for the metric (a failed run).
type Series struct {
	Point  string
	Values []float64
}

// Log builds the history of runs: ordered by start time, each with its
// rig, engine commit, status and metrics, and a drift marker where the lock,
// the rig or the spec changed between consecutive runs.
func Log(runs []results.Run) *History {
	sums := make([]*results.Summary, len(runs))
	full := make(map[*results.Summary]*results.Run, len(runs))
	for i := range runs {
		sums[i] = results.Summarize(&runs[i])
		full[sums[i]] = &runs[i]
	}
	h, _ := LogSummaries(sums, func(s *results.Summary) (*results.Run, error) { return full[s], nil })
	return h
}

// LogSummaries is [Log] over the runs' summaries, each with its
// [results.Detail] (from the index: [results.Store.Details]): a run's
// record is read, through load, only where a section of its
// configuration hashes differently from the run it is compared with, to
// say what changed.
func LogSummaries(sums []*results.Summary, load func(*results.Summary) (*results.Run, error)) (*History, error) {
	ptrs := slices.Clone(sums)
	slices.SortStableFunc(ptrs, func(a, b *results.Summary) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	swept := sweptCache{}
	sortRounds(ptrs, swept)
	h := &History{}
	rc := &runConfigs{load: load, cache: newConfigCache(), configs: map[*results.Summary]config{}}
	configOf := rc.of
	detail := func(s *results.Summary) *results.Detail {
		if s.Detail == nil {
			return &results.Detail{}
		}
		return s.Detail
	}
	prevHost := map[string]*results.Summary{}
	prevPoint := map[string]*results.Summary{}
	history := map[string][]*results.Summary{}
	// Label points with the same short names Compare uses.
	var pts []*point
	keyOf := make([]string, len(ptrs))
	byKey := map[string]*point{}
	for i, r := range ptrs {
		key, sw := swept.of(detail(r).Swept)
		keyOf[i] = r.Experiment + "\x00" + key
		if byKey[keyOf[i]] == nil {
			p := &point{key: key, swept: sw}
			byKey[keyOf[i]] = p
			pts = append(pts, p)
		}
	}
	short := shortNames(pts)
	byLabel := map[string]*point{}
	for _, p := range pts {
		p.label = pointLabel(p.swept, short)
		byLabel[p.label] = p
	}

	rounds := map[string]int{}
	for _, r := range ptrs {
		if r.Invocation != "" {
			rounds[r.Invocation] = max(rounds[r.Invocation], detail(r).Round)
		}
	}

	seenMetric := map[string]bool{}
	var metricOrder []string
	for i, r := range ptrs {
		d := detail(r)
		if r.Experiment != "" && !slices.Contains(h.Experiments, r.Experiment) {
			h.Experiments = append(h.Experiments, r.Experiment)
		}
		e := Entry{ID: r.ID, Experiment: r.Experiment, Point: byKey[keyOf[i]].label,
			Start: r.Start, End: d.End, Rig: d.Rig, Host: d.Host, Commit: shortCommitRef(r.Engine.Commit, r.Engine.Ref, r.Engine.Version),
			Status: r.Status, Error: r.Error, Busy: d.Busy}
		if d.Round > 0 && rounds[r.Invocation] > 1 {
			// Every run is round 1 of its invocation; only an
			// invocation of several rounds says so.
			e.Round, e.Rounds = d.Round, rounds[r.Invocation]
		}
		e.Metrics = metricStats(r, d)
		for _, m := range e.Metrics {
			if !seenMetric[m.Key] {
				seenMetric[m.Key] = true
				metricOrder = append(metricOrder, m.Key)
			}
		}

		// A section whose hash did not change did not change: only the
		// others are diffed, reading the two records. A run is compared
		// with the previous run of its own point: two points of a sweep
		// differ by design.
		key := keyOf[i]
		if p := prevPoint[key]; p != nil {
			if detail(p).Hashes.Lock != d.Hashes.Lock {
				e.Drift = append(e.Drift, rc.lockDrift(p, r, history[key])...)
			}
			if len(e.Drift) == 0 && detail(p).LockDigest != d.LockDigest {
				e.Drift = append(e.Drift, Change{Section: SectionLock, Path: "lockDigest",
					Old: rawString(detail(p).LockDigest), New: rawString(d.LockDigest)})
			}
		}
		if p := prevHost[e.Host+"\x00"+key]; p != nil && detail(p).Hashes.Rig != d.Hashes.Rig {
			e.Drift = append(e.Drift, diffConfigs(configOf(p), configOf(r), onlySection(SectionRig))...)
		}
		if p := prevPoint[keyOf[i]]; p != nil && (detail(p).SpecDigest != d.SpecDigest || d.SpecDigest == "") && detail(p).Hashes.Spec != d.Hashes.Spec {
			e.Drift = append(e.Drift, diffConfigs(configOf(p), configOf(r), onlySection(SectionSpec))...)
		}
		if p := prevPoint[keyOf[i]]; p != nil && detail(p).Hashes.Env != d.Hashes.Env {
			// passEnv values come from the caller: the spec digest does
			// not see them change.
			e.Drift = append(e.Drift, diffConfigs(configOf(p), configOf(r), onlySection(SectionEnv))...)
		}
		prevHost[e.Host+"\x00"+key], prevPoint[key] = r, r
		history[key] = append(history[key], r)
		h.Entries = append(h.Entries, e)
	}
	if rc.err != nil {
		return nil, rc.err
	}

	h.Metrics = orderMetrics(metricOrder)

	h.Chart = tokSOutChart(h, byLabel)
	return h, nil
}

// runConfigs reads the configurations of summarized runs, each once, for
// the drift between them; the first run that cannot be read is err.
type runConfigs struct {
	load    func(*results.Summary) (*results.Run, error)
	cache   *configCache
	configs map[*results.Summary]config
	err     error
}

func (rc *runConfigs) of(s *results.Summary) config {
	if c, ok := rc.configs[s]; ok {
		return c
	}
	r, err := rc.load(s)
	if err != nil || r == nil {
		if rc.err == nil {
			rc.err = fmt.Errorf("reading run %s to show what changed: %w", s.ID, cmp.Or(err, errors.New("not found")))
		}
		return nil
	}
	c := rc.cache.build(r)
	rc.configs[s] = c
	return c
}

// lockDrift is what changed in the lock section from p, the point's
// previous run, to r. The engine's report of its build is absent from a
// run that failed before the engine reported it: that is no change, and
// r's build is compared with the last of earlier, the point's runs, that
// reported one.
func (rc *runConfigs) lockDrift(p, r *results.Summary, earlier []*results.Summary) []Change {
	var out []Change
	absent := false
	for _, c := range diffConfigs(rc.of(p), rc.of(r), onlySection(SectionLock)) {
		if strings.HasPrefix(c.Path, buildPrefix) && (c.Old == nil || c.New == nil) {
			absent = true
			continue
		}
		out = append(out, c)
	}
	if !absent || !hasBuild(rc.of(r)) {
		return out
	}
	for j := len(earlier) - 1; j >= 0; j-- {
		q := earlier[j]
		if !hasBuild(rc.of(q)) {
			continue
		}
		for _, c := range diffConfigs(rc.of(q), rc.of(r), onlySection(SectionLock)) {
			if strings.HasPrefix(c.Path, buildPrefix) && c.Old != nil && c.New != nil {
				out = append(out, c)
			}
		}
		break
	}
	return out
}

// metricStats are a run's metrics with their statistics, from its samples
// (else its mean alone).
func metricStats(r *results.Summary, d *results.Detail) []MetricStat {
	var out []MetricStat
	for j, m := range r.Metrics {
		var x []float64
		if j < len(d.Samples) {
			x = d.Samples[j]
		}
		if len(x) == 0 {
			x = []float64{m.Mean}
		}
		ci := stats.MeanCI(x, 0.95)
		out = append(out, MetricStat{Key: m.Key(), Name: m.Name, Test: m.Test, Unit: m.Unit,
			N: len(x), Mean: stats.Mean(x), Stddev: stats.Stddev(x), Low: ci.Low, High: ci.High, Min: slices.Min(x), Max: slices.Max(x)})
	}
	return out
}

// orderMetrics puts tokSOut first, then tokSPrompt, then the rest as they
// came.
func orderMetrics(metricOrder []string) []string {
	rank := func(k string) int {
		switch {
		case strings.HasPrefix(k, metric.TokSOut+" ") || k == metric.TokSOut:
			return 0
		case strings.HasPrefix(k, metric.TokSPrompt+" ") || k == metric.TokSPrompt:
			return 1
		}
		return 2
	}
	out := slices.Clone(metricOrder)
	slices.SortStableFunc(out, func(a, b string) int { return rank(a) - rank(b) })
	return out
}

// tokSOutChart is the chart of the history's first metric when it is a
// tokSOut key: one series per point, a gap where a run of the point has
// no value (a failed run); nil otherwise.
func tokSOutChart(h *History, byLabel map[string]*point) *Chart {
	if len(h.Metrics) == 0 || !(strings.HasPrefix(h.Metrics[0], metric.TokSOut+" ") || h.Metrics[0] == metric.TokSOut) {
		return nil
	}
	k := h.Metrics[0]
	c := &Chart{Metric: k}
	idx := map[string]int{}
	for _, e := range h.Entries {
		j, ok := idx[e.Point]
		if !ok {
			j = len(c.Series)
			idx[e.Point] = j
			c.Series = append(c.Series, Series{Point: e.Point})
		}
		v := math.NaN()
		for _, m := range e.Metrics {
			if m.Key == k {
				v, c.Unit = m.Mean, m.Unit
			}
		}
		c.Series[j].Values = append(c.Series[j].Values, v)
	}
	c.Series = slices.DeleteFunc(c.Series, func(s Series) bool {
		return !slices.ContainsFunc(s.Values, func(v float64) bool { return !math.IsNaN(v) })
	})
	slices.SortStableFunc(c.Series, func(a, b Series) int {
		return comparePoints(byLabel[a.Point], byLabel[b.Point])
	})
	return c
}

// sweptCache parses each distinct swept-values JSON of a history once:
// the canonical key and normalized map [sweptKey] makes of it.
type sweptCache map[string]struct {
	key   string
	swept map[string]any
}

func (c sweptCache) of(js string) (string, map[string]any) {
	if js == "" {
		return "", nil
	}
	if v, ok := c[js]; ok {
		return v.key, v.swept
	}
	var m map[string]any
	json.Unmarshal([]byte(js), &m)
	k, sw := sweptKey(m)
	c[js] = struct {
		key   string
		swept map[string]any
	}{k, sw}
	return k, sw
}

// sortRounds orders the runs of one experiment that share a start time
// (an imported sweep, whose records differ only in their ids' random
// suffixes) by their sweep points' values. Every other run keeps the order
// it started in, the runs of a shuffled round too: a log is a time series,
// and rows of a round sorted by point read as one whose dates go back
// (issue 25); the round column says which runs ran together.
func sortRounds(runs []*results.Summary, swept sweptCache) {
	same := func(a, b *results.Summary) bool {
		return a.Experiment == b.Experiment && !a.Start.IsZero() && a.Start.Equal(b.Start)
	}
	sweptOf := func(r *results.Summary) map[string]any {
		if r.Detail == nil {
			return nil
		}
		_, sw := swept.of(r.Detail.Swept)
		return sw
	}
	for i := 0; i < len(runs); {
		j := i + 1
		for j < len(runs) && same(runs[i], runs[j]) {
			j++
		}
		if j-i > 1 {
			group := runs[i:j]
			slices.SortStableFunc(group, func(a, b *results.Summary) int {
				return comparePoints(&point{swept: sweptOf(a)}, &point{swept: sweptOf(b)})
			})
		}
		i = j
	}
}

// buildPrefix starts the paths of the engine's report of its build.
const buildPrefix = "lock.engine.build."

// hasBuild reports whether a configuration holds the engine's report of
// its build.
func hasBuild(c config) bool {
	for _, l := range c {
		if strings.HasPrefix(l.path, buildPrefix) {
			return true
		}
	}
	return false
}

func onlySection(s string) func(string) bool {
	return func(sec string) bool { return sec == s }
}

func rawString(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(quote(s))
}

// shortCommitRef is the engine commit shortened to 7 digits, else the
// requested ref, else the version (node-llama-cpp's npm version).
func shortCommitRef(commit, ref, version string) string {
	c := commit
	if c == "" {
		c = ref
	}
	if c == "" {
		c = version
	}
	if len(c) > 7 && hexRE.MatchString(c) {
		c = c[:7]
	}
	return c
}

package interop

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rigorbench/rigor/internal/metric"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/rig"
	"github.com/rigorbench/rigor/internal/spec"
)

// seedSummary is seed 000's hand-written summary of one session: a
// baseline, the runs that followed, and a timing probe.
type seedSummary struct {
	Date  string `json:"date"`
	Model struct {
		HfID         string `json:"hfId"`
		GGUFRepo     string `json:"ggufRepo"`
		Quantization string `json:"quantization"`
		LocalPath    string `json:"localPath"`
	} `json:"model"`
	Hardware struct {
		GPU          string  `json:"gpu"`
		GPUCount     int     `json:"gpuCount"`
		VramGbPerGpu float64 `json:"vramGbPerGpu"`
		OS           string  `json:"os"`
	} `json:"hardware"`
	Engine struct {
		Name                string `json:"name"`
		ReportedBuildCommit string `json:"reportedBuildCommit"`
		Backend             string `json:"backend"`
		Patch               string `json:"patch"`
	} `json:"engine"`
	Baseline     *seedRun   `json:"baseline"`
	Runs         []seedRun  `json:"runs"`
	QualityNotes []string   `json:"qualityNotes"`
	Probe        *seedProbe `json:"timingProbeKqvOffloadOn"`
	Conclusion   string     `json:"conclusion"`
}

type seedRun struct {
	Label           string    `json:"label"`
	CommandTail     string    `json:"commandTail"`
	TokSOut         *float64  `json:"tokSOut"`
	StddevTokSOut   *float64  `json:"stddevTokSOut"`
	SamplesTokSOut  []float64 `json:"samplesTokSOut"`
	PromptTokens    *int      `json:"promptTokens"`
	OutputTokens    *int      `json:"outputTokens"`
	NoKvOffload     *bool     `json:"noKvOffload"`
	KvCacheDtype    string    `json:"kvCacheDtype"`
	NUbatch         *int      `json:"nUbatch"`
	SchedulerAsync  *bool     `json:"schedulerAsync"`
	RopeCache       *bool     `json:"ropeCache"`
	QualityTradeoff *bool     `json:"qualityTradeoff"`
	Result          string    `json:"result"`
	Failure         string    `json:"failure"`
	JSON            string    `json:"json"`
	Log             string    `json:"log"`
	LocalmaxxingID  string    `json:"localmaxxingId"`
}

type seedProbe struct {
	Label             string             `json:"label"`
	Warning           string             `json:"warning"`
	TokSOutWithTiming *float64           `json:"tokSOutWithTiming"`
	JSON              string             `json:"json"`
	WorkerTotalsMs    map[string]float64 `json:"workerTotalsMs"`
	TopBuckets        []string           `json:"topBuckets"`
	Interpretation    string             `json:"interpretation"`
}

// seedKnown are the keys of the summary format; others are reported as
// not imported.
var seedKnown = map[string]bool{"date": true, "model": true, "hardware": true, "engine": true,
	"baseline": true, "runs": true, "qualityNotes": true, "timingProbeKqvOffloadOn": true, "conclusion": true}

var seedRunKnown = map[string]bool{"label": true, "commandTail": true, "tokSOut": true, "stddevTokSOut": true,
	"samplesTokSOut": true, "promptTokens": true, "outputTokens": true, "noKvOffload": true,
	"kvCacheDtype": true, "nUbatch": true, "schedulerAsync": true, "ropeCache": true,
	"qualityTradeoff": true, "result": true, "failure": true, "json": true, "log": true, "localmaxxingId": true}

func (c *conv) seedSummary() ([]Imported, error) {
	var s seedSummary
	if err := decodeStrict(c.data, &s); err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	_ = json.Unmarshal(c.data, &top)
	var unknown []string
	for k := range top {
		if !seedKnown[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	switch {
	case s.Engine.Name == "":
		return nil, errors.New("engine.name is missing")
	case s.Model.GGUFRepo == "" && s.Model.HfID == "":
		return nil, errors.New("model has neither ggufRepo nor hfId")
	case s.Baseline == nil && len(s.Runs) == 0:
		return nil, errors.New("no baseline and no runs")
	}
	date, err := time.Parse("2006-01-02", s.Date)
	if err != nil {
		return nil, fmt.Errorf("date %q: want YYYY-MM-DD", s.Date)
	}
	var rawRuns []map[string]json.RawMessage
	_ = json.Unmarshal(top["runs"], &rawRuns)

	type item struct {
		run  seedRun
		keys []string
		base bool
	}
	var items []item
	if s.Baseline != nil {
		var m map[string]json.RawMessage
		_ = json.Unmarshal(top["baseline"], &m)
		items = append(items, item{*s.Baseline, unknownKeys(m, seedRunKnown), true})
	}
	for i, r := range s.Runs {
		var m map[string]json.RawMessage
		if i < len(rawRuns) {
			m = rawRuns[i]
		}
		items = append(items, item{r, unknownKeys(m, seedRunKnown), false})
	}
	var out []Imported
	labels := map[string]bool{}
	for i, it := range items {
		where := "baseline"
		if !it.base {
			where = fmt.Sprintf("runs[%d]", i-btoi(s.Baseline != nil))
		}
		if it.run.Label == "" {
			return nil, fmt.Errorf("%s: no label", where)
		}
		if labels[it.run.Label] {
			return nil, fmt.Errorf("%s: label %q used twice", where, it.run.Label)
		}
		labels[it.run.Label] = true
		r, err := c.seedRun(&s, it.run, date, it.base)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", where, it.run.Label, err)
		}
		if len(it.keys) > 0 {
			r.Warnings = append(r.Warnings, "seed fields not imported: "+strings.Join(it.keys, ", "))
		}
		if it.base && len(unknown) > 0 {
			r.Warnings = append(r.Warnings, "seed fields not imported: "+strings.Join(unknown, ", "))
		}
		out = append(out, Imported{Run: r, Raw: c.raw()})
	}
	if s.Probe != nil {
		r, err := c.seedProbe(&s, s.Probe, date)
		if err != nil {
			return nil, fmt.Errorf("timingProbeKqvOffloadOn %q: %w", s.Probe.Label, err)
		}
		out = append(out, Imported{Run: r, Raw: c.raw()})
	}
	return out, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func unknownKeys(m map[string]json.RawMessage, known map[string]bool) []string {
	var out []string
	for k := range m {
		if !known[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// seedBase fills what every run of a summary shares: engine, model, rig.
func (c *conv) seedBase(s *seedSummary, p *spec.Point) *results.Run {
	r := &results.Run{Schema: results.SchemaVersion}
	r.Engine = results.Engine{Family: s.Engine.Name, Backend: s.Engine.Backend}
	if p != nil {
		r.Engine.Source = p.Spec.Engine.Source.Git
		if r.Engine.Source == "" {
			r.Engine.Source = p.Spec.Engine.Source.Path
		}
	}
	commitFacts(r, s.Engine.ReportedBuildCommit)
	if s.Engine.ReportedBuildCommit == "" {
		r.Unverified = append(r.Unverified, "engine.commit: not recorded")
	}
	if s.Engine.Patch != "" {
		r.Engine.Patches = []results.Patch{{Path: s.Engine.Patch}}
		r.Unverified = append(r.Unverified, "engine.patches: "+s.Engine.Patch+" has no hash in the seed")
	}
	r.Model = results.Model{HF: s.Model.GGUFRepo, Quant: s.Model.Quantization}
	if r.Model.HF == "" {
		r.Model.HF = s.Model.HfID
	}
	rev := ""
	if p != nil {
		rev = p.Spec.Model.Rev()
	}
	revisionFacts(r, rev)
	if s.Model.LocalPath != "" {
		r.Model.Path = s.Model.LocalPath
		file := path.Base(s.Model.LocalPath)
		if p != nil && len(p.Spec.Model.Files) > 0 {
			file = path.Join(path.Dir(p.Spec.Model.Files[0]), file)
		}
		r.Model.Files = []results.File{{Path: file}}
		r.Unverified = append(r.Unverified, "model.files: local path "+s.Model.LocalPath+" not hashed")
	}
	r.Rig = &rig.Rig{AcceleratorModelName: s.Hardware.GPU, AcceleratorsPerNode: s.Hardware.GPUCount,
		AcceleratorMemoryCapacityGB: s.Hardware.VramGbPerGpu, OperatingSystem: s.Hardware.OS}
	return r
}

func (c *conv) seedRun(s *seedSummary, sr seedRun, date time.Time, base bool) (*results.Run, error) {
	p, how, err := c.link(sr.Label)
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, c.noLink(sr.Label, "no experiment has it in its labels")
	}
	if err := checkSeedFlags(sr, p); err != nil {
		return nil, err
	}
	r := c.seedBase(s, p)
	apply(r, p, how)
	start, ok := stampOf(sr.JSON, sr.Log)
	if !ok {
		start = date
		r.Unverified = append(r.Unverified, "start: only the date "+s.Date+" is in the seed")
	}
	r.Start = start
	r.ID = c.runID(start, sr.Label)
	r.Provenance = c.provenance(sr.Label, sr.LocalmaxxingID)
	r.Labels = []string{sr.Label}
	var notes []string
	notes = append(notes, s.QualityNotes...)
	if sr.CommandTail != "" {
		notes = append(notes, "Command tail as recorded: "+sr.CommandTail)
	}
	if sr.QualityTradeoff != nil && *sr.QualityTradeoff {
		notes = append(notes, "The seed marks this run as a quality trade-off.")
	}
	for _, f := range []struct{ what, p string }{{"JSON output", sr.JSON}, {"log", sr.Log}} {
		if f.p != "" {
			notes = append(notes, fmt.Sprintf("Raw %s (not imported): %s", f.what, f.p))
		}
	}
	if base && s.Conclusion != "" {
		notes = append(notes, "Conclusion: "+s.Conclusion)
	}
	r.Notes = strings.Join(notes, "\n")

	failed := strings.EqualFold(sr.Result, "failed") || sr.Failure != ""
	switch {
	case failed:
		r.Status = results.StatusFailed
		r.Error = sr.Failure
		if r.Error == "" {
			r.Error = "failed (the seed gives no reason)"
		}
		if sr.TokSOut != nil {
			return nil, errors.New("marked failed but has tokSOut")
		}
	case sr.Result != "" && !strings.EqualFold(sr.Result, "ok"):
		return nil, fmt.Errorf("result %q: want failed or ok", sr.Result)
	case sr.TokSOut == nil:
		return nil, errors.New("no tokSOut and not marked failed")
	default:
		r.Status = results.StatusOK
		m, err := seedMetric(sr, p)
		if err != nil {
			return nil, err
		}
		r.Metrics = []results.Metric{m}
	}
	return r, nil
}

// seedMetric is a run's decode speed, in llama-bench's test spelling.
func seedMetric(sr seedRun, p *spec.Point) (results.Metric, error) {
	n, ok := 0, false
	if sr.OutputTokens != nil {
		n, ok = *sr.OutputTokens, true
	} else {
		n, ok = benchInt(p, "n")
	}
	if !ok || n <= 0 {
		return results.Metric{}, errors.New("no outputTokens, and the experiment has no bench.n")
	}
	test := "tg" + strconv.Itoa(n)
	if sr.PromptTokens != nil && *sr.PromptTokens > 0 {
		test += "@pp" + strconv.Itoa(*sr.PromptTokens)
	}
	m := results.Metric{Name: metric.TokSOut, Test: test, Unit: metric.TokPerSec, Direction: results.HigherIsBetter, Value: *sr.TokSOut}
	if sr.StddevTokSOut != nil {
		m.Stddev = *sr.StddevTokSOut
	}
	if len(sr.SamplesTokSOut) > 0 {
		m.Samples = append([]float64(nil), sr.SamplesTokSOut...)
	} else if reps, ok := benchInt(p, "r"); ok && reps == 1 {
		// One repetition: the reported speed is its only sample.
		m.Samples = []float64{*sr.TokSOut}
	}
	return m, nil
}

// checkSeedFlags refuses a link whose point contradicts what the seed
// says about the run.
func checkSeedFlags(sr seedRun, p *spec.Point) error {
	var bad []string
	want := func(section, name string, v any) {
		m := p.Spec.Flags
		if section == "bench" {
			m = p.Spec.Bench
		}
		have, ok := m[name]
		hs := "(unset)"
		if ok {
			hs = spec.RenderValue(have)
		}
		if hs != spec.RenderValue(v) {
			bad = append(bad, fmt.Sprintf("the seed says %s.%s %s, %s has %s", section, name, spec.RenderValue(v), p.ID, hs))
		}
	}
	b01 := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	if sr.NoKvOffload != nil {
		want("flags", "nkvo", b01(*sr.NoKvOffload))
	}
	if sr.NUbatch != nil {
		want("flags", "ub", *sr.NUbatch)
	}
	if sr.SchedulerAsync != nil {
		want("flags", "sas", b01(*sr.SchedulerAsync))
	}
	if sr.RopeCache != nil && *sr.RopeCache {
		want("flags", "rcache", 1)
	}
	if sr.KvCacheDtype != "" {
		k, v, ok := strings.Cut(sr.KvCacheDtype, "/")
		if !ok {
			v = k
		}
		want("flags", "ctk", k)
		want("flags", "ctv", v)
	}
	if sr.OutputTokens != nil {
		want("bench", "n", *sr.OutputTokens)
	}
	if sr.PromptTokens != nil {
		want("bench", "p", *sr.PromptTokens)
	}
	if sr.CommandTail != "" {
		bad = append(bad, checkTail(sr.CommandTail, p)...)
	}
	if len(bad) > 0 {
		return fmt.Errorf("does not match the experiment it is linked to: %s", strings.Join(bad, "; "))
	}
	return nil
}

// checkTail compares the "-flag value" pairs of a recorded command tail
// with the point's flags, bench and extraArgs.
func checkTail(tail string, p *spec.Point) []string {
	_, words := splitCommand(tail)
	var bad []string
	extra := " " + strings.Join(p.Spec.ExtraArgs, " ") + " "
	for i := 0; i+1 < len(words); i += 2 {
		f, v := words[i], words[i+1]
		if !strings.HasPrefix(f, "-") {
			return append(bad, fmt.Sprintf("command tail: %q is not a flag", f))
		}
		name := strings.TrimLeft(f, "-")
		var have any
		var ok bool
		if have, ok = p.Spec.Flags[name]; !ok {
			have, ok = p.Spec.Bench[name]
		}
		switch {
		case ok && spec.RenderValue(have) == v:
		case ok:
			bad = append(bad, fmt.Sprintf("the command tail says %s %s, %s has %s", f, v, p.ID, spec.RenderValue(have)))
		case strings.Contains(extra, " "+f+" "+v+" "):
		default:
			bad = append(bad, fmt.Sprintf("the command tail has %s %s, which %s does not set", f, v, p.ID))
		}
	}
	return bad
}

func (c *conv) seedProbe(s *seedSummary, pr *seedProbe, date time.Time) (*results.Run, error) {
	p, how, err := c.link(pr.Label)
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, c.noLink(pr.Label, "no experiment has it in its labels")
	}
	r := c.seedBase(s, p)
	apply(r, p, how)
	start, ok := stampOf(pr.JSON)
	if !ok {
		start = date
		r.Unverified = append(r.Unverified, "start: only the date "+s.Date+" is in the seed")
	}
	r.Start = start
	r.ID = c.runID(start, pr.Label)
	r.Provenance = c.provenance(pr.Label, "")
	r.Labels = []string{pr.Label}
	r.Status = results.StatusOK
	if pr.Warning != "" {
		r.Warnings = append(r.Warnings, pr.Warning)
	}
	if pr.TokSOutWithTiming != nil {
		n, ok := benchInt(p, "n")
		if !ok {
			return nil, errors.New("the experiment has no bench.n")
		}
		m := results.Metric{Name: metric.TokSOut, Test: "tg" + strconv.Itoa(n), Unit: metric.TokPerSec, Direction: results.HigherIsBetter, Value: *pr.TokSOutWithTiming}
		if reps, ok := benchInt(p, "r"); ok && reps == 1 {
			m.Samples = []float64{m.Value}
		}
		r.Metrics = append(r.Metrics, m)
	}
	workers := make([]string, 0, len(pr.WorkerTotalsMs))
	for w := range pr.WorkerTotalsMs {
		workers = append(workers, w)
	}
	sort.Strings(workers)
	for _, w := range workers {
		r.Metrics = append(r.Metrics, results.Metric{Name: metric.WorkerOpTotalMs, Test: w, Unit: metric.Ms,
			Direction: results.LowerIsBetter, Value: pr.WorkerTotalsMs[w], Samples: []float64{pr.WorkerTotalsMs[w]}})
	}
	var notes []string
	if len(pr.TopBuckets) > 0 {
		notes = append(notes, "Top op buckets: "+strings.Join(pr.TopBuckets, ", ")+".")
	}
	if pr.Interpretation != "" {
		notes = append(notes, pr.Interpretation)
	}
	if pr.JSON != "" {
		notes = append(notes, "Raw JSON output (not imported): "+pr.JSON)
	}
	r.Notes = strings.Join(notes, "\n")
	if len(r.Metrics) == 0 {
		return nil, errors.New("no figures")
	}
	return r, nil
}

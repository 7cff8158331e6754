package interop

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rigorbench/rigor/internal/compare"
	"github.com/rigorbench/rigor/internal/compare/stats"
	"github.com/rigorbench/rigor/internal/metric"
	"github.com/rigorbench/rigor/internal/redact"
	"github.com/rigorbench/rigor/internal/report/text"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/spec"
)

// Export formats.
const (
	ExportLocalMaxxing = "localmaxxing"
	ExportRegistry     = "registry"
	ExportMarkdown     = "markdown"
	ExportCSV          = "csv"
	ExportJSON         = "json"
)

// ExportFormats lists the formats [Export] writes.
var ExportFormats = []string{ExportLocalMaxxing, ExportRegistry, ExportMarkdown, ExportCSV, ExportJSON}

// Record is a run with what was kept beside it: the raw files by name
// (the imported source file among them), for exports that carry a
// source's own fields back out.
type Record struct {
	Run *results.Run
	// Path is the record's path relative to the module root, for
	// provenance.
	Path string
	Raw  map[string][]byte
}

// RefusedError says why a run cannot be exported to a format.
type RefusedError struct {
	Run    string
	Format string
	Reason string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("cannot export run %s to %s: %s", e.Run, e.Format, e.Reason)
}

// Export writes records in a format. localmaxxing and registry take one
// record; the tables take any number.
func Export(format string, recs []Record, now time.Time) ([]byte, error) {
	switch format {
	case ExportLocalMaxxing, ExportRegistry:
		if len(recs) != 1 {
			return nil, fmt.Errorf("%s export takes one run, got %d", format, len(recs))
		}
		var v any
		var err error
		if format == ExportLocalMaxxing {
			v, err = ToLocalMaxxing(recs[0])
		} else {
			v, err = ToRegistry(recs[0], now)
		}
		if err != nil {
			return nil, err
		}
		b, err := marshal(v)
		if err != nil {
			return nil, err
		}
		return scrubSecrets(b, recs), nil
	case ExportMarkdown, ExportCSV, ExportJSON:
		b, err := table(format, recs)
		if err != nil {
			return nil, err
		}
		return scrubSecrets(b, recs), nil
	}
	return nil, fmt.Errorf("unknown export format %q (want one of %s)", format, strings.Join(ExportFormats, ", "))
}

// scrubSecrets removes any secret value the runs' processes carry from an
// export, whatever field it hid in.
func scrubSecrets(b []byte, recs []Record) []byte {
	s := redact.NewScrubber()
	for _, r := range recs {
		for _, p := range r.Run.Processes {
			for k, v := range p.Env {
				s.AddEnv(k, v)
			}
			s.AddArgv(p.Argv)
		}
	}
	return s.Bytes(b)
}

var tokenLike = regexp.MustCompile(`\b(hf_[A-Za-z0-9]{20,}|bhk_[0-9a-f]{40}|sk-[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{30,})\b`)

// scrubText removes token-shaped words from free text.
func scrubText(s string) string {
	return redact.String(tokenLike.ReplaceAllString(s, results.Redacted))
}

// spec decodes a record's effective configuration, if it has one.
func recordSpec(r *results.Run) spec.Spec {
	var s spec.Spec
	if len(r.Spec) > 0 {
		_ = json.Unmarshal(r.Spec, &s)
	}
	return s
}

func metricOf(r *results.Run, name string) (results.Metric, bool) {
	for _, m := range r.Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return results.Metric{}, false
}

func fptr(v float64) *float64 { return &v }
func iptr(v int) *int         { return &v }

// lmEngineName maps an engine family to LocalMaxxing's engineName, which
// has no entry for ik_llama.cpp (engineRepository tells the fork).
func lmEngineName(family string) string {
	if family == spec.FamilyIkLlamaCpp {
		return spec.FamilyLlamaCpp
	}
	return family
}

// ToLocalMaxxing builds a LocalMaxxing speed test from a record: what the
// record knows, and nothing else. A record imported from a LocalMaxxing
// file carries the file's other fields (engineFlags, contextLength,
// batchSize, …) back out unchanged. A failed run, and a run missing a
// field LocalMaxxing requires, is a [*RefusedError] that says why.
func ToLocalMaxxing(rec Record) (*LocalMaxxing, error) {
	r := rec.Run
	refuse := func(reason string) error {
		return &RefusedError{Run: r.ID, Format: ExportLocalMaxxing, Reason: reason}
	}
	if r.Status != results.StatusOK {
		why := r.Status
		if r.Error != "" {
			why += " (" + r.Error + ")"
		}
		return nil, refuse("the run " + why + "; LocalMaxxing takes successful runs only")
	}
	d := &LocalMaxxing{}
	if r.Provenance != nil && r.Provenance.Format == FormatLocalMaxxing {
		if src, ok := rec.Raw[SourceFile]; ok {
			if err := json.Unmarshal(src, d); err != nil {
				return nil, fmt.Errorf("reading the imported %s of run %s: %w", SourceFile, r.ID, err)
			}
		}
	}
	s := recordSpec(r)
	d.HfID = r.Model.HF
	if r.Model.Commit != "" {
		d.ModelRevision = r.Model.Commit
	} else if r.Model.Revision != "" {
		d.ModelRevision = r.Model.Revision
	}
	d.EngineName = lmEngineName(r.Engine.Family)
	if r.Engine.Version != "" {
		d.EngineVersion = r.Engine.Version
	}
	if hex40.MatchString(r.Engine.Commit) {
		d.EngineCommit = r.Engine.Commit
	}
	if strings.HasPrefix(r.Engine.Source, "https://") {
		d.EngineRepository = r.Engine.Source
	}
	d.Quantization = r.Model.Quant
	if g := r.Rig; g != nil {
		h := d.Hardware
		if h == nil {
			h = &LMHardware{}
		}
		if g.AcceleratorsPerNode > 0 && h.HwClass == "" {
			h.HwClass = "DISCRETE_GPU"
		}
		if g.AcceleratorModelName != "" {
			h.GpuName = g.AcceleratorModelName
		}
		if g.AcceleratorsPerNode > 0 {
			h.GpuCount = iptr(g.AcceleratorsPerNode)
		}
		if g.AcceleratorMemoryCapacityGB > 0 {
			h.VramGb = fptr(g.AcceleratorMemoryCapacityGB)
		}
		if g.HostProcessorModelName != "" {
			h.Cpu = g.HostProcessorModelName
		}
		if g.HostMemoryCapacityGB > 0 {
			h.RamGb = fptr(g.HostMemoryCapacityGB)
		}
		if g.OperatingSystem != "" {
			h.Os = g.OperatingSystem
		}
		d.Hardware = h
	}
	in, out := workload(s)
	if d.PromptTokens == nil && in != nil {
		d.PromptTokens = in
	}
	if d.OutputTokens == nil && out != nil {
		d.OutputTokens = out
	}
	set := func(dst **float64, name string) {
		if m, ok := metricOf(r, name); ok {
			*dst = fptr(m.Value)
		}
	}
	set(&d.TokSOut, metric.TokSOut)
	set(&d.TokSPrefill, metric.TokSPrompt)
	set(&d.TokSTotal, metric.TokSTotal)
	set(&d.TtftMs, metric.TTFTMs)
	set(&d.PeakVramGb, metric.PeakVRAMGB)
	if r.Notes != "" && d.Notes == "" {
		d.Notes = r.Notes
	}
	d.Notes = scrubText(d.Notes)
	if len(r.Processes) > 0 {
		if d.EngineFlags == nil {
			d.EngineFlags = map[string]any{}
		}
		if _, ok := d.EngineFlags["commandSnippet"]; !ok {
			d.EngineFlags["commandSnippet"] = commandSnippet(r.Processes[len(r.Processes)-1])
		}
	}
	if snip, ok := d.EngineFlags["commandSnippet"].(string); ok {
		env, argv := splitCommand(snip)
		if redacted := results.RedactEnv(env); !equalMaps(redacted, env) || !equalSlices(results.RedactArgv(argv), argv) {
			d.EngineFlags["commandSnippet"] = commandSnippet(results.Process{Argv: results.RedactArgv(argv), Env: redacted})
		}
	}
	if len(d.EngineTimingsRaw) == 0 {
		if raw := timingsRaw(r); raw != nil {
			d.EngineTimingsRaw = raw
		}
	}
	d.ID, d.CreatedAt = "", ""
	if miss := d.missing(true); len(miss) > 0 {
		return nil, refuse("the record does not know what LocalMaxxing requires (" + strings.Join(miss, ", ") + "); rigor does not invent values")
	}
	if err := d.validate(); err != nil {
		return nil, refuse(err.Error())
	}
	return d, nil
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func equalSlices(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// workload returns the prompt and output token counts of a spec.
func workload(s spec.Spec) (in, out *int) {
	get := func(keys ...string) *int {
		for _, k := range keys {
			if v, ok := toInt(s.Bench[k]); ok {
				return iptr(v)
			}
		}
		return nil
	}
	if s.Engine.Family == spec.FamilyVLLM {
		return get("inputLen"), get("outputLen")
	}
	return get("p"), get("n")
}

// commandSnippet renders a process as one shell line.
func commandSnippet(p results.Process) string {
	keys := make([]string, 0, len(p.Env))
	for k := range p.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var words []string
	for _, k := range keys {
		words = append(words, k+"="+shellQuote(p.Env[k]))
	}
	for _, a := range p.Argv {
		words = append(words, shellQuote(a))
	}
	return strings.Join(words, " ")
}

var plainWord = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

func shellQuote(s string) string {
	if s != "" && plainWord.MatchString(s) || s == results.Redacted {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// timingsRaw is the record's raw samples, as LocalMaxxing's
// engineTimingsRaw: {"<name> <test>": {"unit": …, "samples": […]}}.
func timingsRaw(r *results.Run) json.RawMessage {
	m := map[string]any{}
	for _, x := range r.Metrics {
		if len(x.Samples) > 0 {
			m[x.Key()] = map[string]any{"unit": x.Unit, "samples": x.Samples}
		}
	}
	if len(m) == 0 {
		return nil
	}
	b, _ := json.Marshal(m)
	if len(b) > 8000 {
		return nil
	}
	return b
}

// registryFact is a local-ai-registry fact about a field.
type registryFact struct {
	State      string         `json:"state"`
	Reason     string         `json:"reason,omitempty"`
	Provenance registryProvOf `json:"provenance"`
}

type registrySource struct {
	Kind       string   `json:"kind"`
	URL        string   `json:"url"`
	Repository string   `json:"repository,omitempty"`
	Commit     *string  `json:"commit"`
	Paths      []string `json:"paths,omitempty"`
	CapturedAt string   `json:"captured_at,omitempty"`
	Publisher  string   `json:"publisher,omitempty"`
}

type registryProvOf struct {
	CapturedAt string           `json:"captured_at"`
	Sources    []registrySource `json:"sources"`
}

// RegistrySweep is a local-ai-registry v1 speed-sweep record.
type RegistrySweep struct {
	SchemaVersion string                  `json:"schema_version"`
	ID            string                  `json:"id"`
	RecipeID      string                  `json:"recipe_id"`
	MeasuredAt    string                  `json:"measured_at"`
	AcceptedAt    *string                 `json:"accepted_at"`
	Source        registrySource          `json:"source"`
	Rows          []map[string]any        `json:"rows"`
	Metrics       map[string]any          `json:"metrics,omitempty"`
	Provenance    registryProvOf          `json:"provenance"`
	Facts         map[string]registryFact `json:"facts,omitempty"`
}

var slugRe = regexp.MustCompile(`[^a-z0-9.]+`)

func slug(s string) string {
	return strings.Trim(slugRe.ReplaceAllString(strings.ToLower(s), "-"), "-.")
}

// ToRegistry builds a local-ai-registry v1 speed sweep from a record: one
// row with what the run measured. A value the run did not measure is null
// in the row and has a fact of state unknown with the reason, as the
// registry records them. A failed run is refused.
func ToRegistry(rec Record, now time.Time) (*RegistrySweep, error) {
	r := rec.Run
	if r.Status != results.StatusOK {
		why := r.Status
		if r.Error != "" {
			why += " (" + r.Error + ")"
		}
		return nil, &RefusedError{Run: r.ID, Format: ExportRegistry, Reason: "the run " + why + "; a speed sweep records measured speeds only"}
	}
	s := recordSpec(r)
	captured := now.UTC().Format(time.RFC3339)
	path := rec.Path
	if path == "" {
		path = "results/" + r.Experiment + "/" + r.ID + ".json"
	}
	src := registrySource{Kind: "benchmark-run", URL: "https://github.com/rigorbench/rigor", Repository: "https://github.com/rigorbench/rigor",
		Paths: []string{path}, CapturedAt: captured, Publisher: "rigor"}
	if r.Provenance != nil && r.Provenance.Kind == "import" {
		src.Kind = "rigor-import"
		if r.Provenance.ExternalID != "" && strings.HasPrefix(r.Provenance.Label, "localmaxxing") {
			src.URL = "https://www.localmaxxing.com/en/runs/" + r.Provenance.ExternalID
		}
	}
	prov := registryProvOf{CapturedAt: captured, Sources: []registrySource{src}}
	recipe := slug(strings.Join([]string{r.Model.HF, r.Model.Quant, hardwareID(r), lmEngineName(r.Engine.Family)}, "-"))
	if r.Rig != nil && r.Rig.AcceleratorsPerNode > 0 {
		recipe += fmt.Sprintf("-tp%d", r.Rig.AcceleratorsPerNode)
	}
	recipe += "-" + slug(r.ID)
	in, out := workload(s)
	row := map[string]any{"concurrency": 1, "context_tokens": nil, "output_tokens": nil, "prefill_tok_s": nil,
		"decode_tok_s": nil, "ttft_ms_p50": nil, "peak_vram_gb": nil, "samples": 1, "status": "observed"}
	facts := map[string]registryFact{}
	unknown := func(field, reason string) {
		facts["rows.0."+field] = registryFact{State: "unknown", Reason: reason, Provenance: prov}
	}
	if in != nil {
		row["context_tokens"] = *in
	} else {
		unknown("context_tokens", "workload-not-recorded")
	}
	if out != nil {
		row["output_tokens"] = *out
	} else {
		unknown("output_tokens", "workload-not-recorded")
	}
	if v, ok := toInt(s.Flags["maxNumSeqs"]); ok && s.Engine.Family == spec.FamilyVLLM {
		row["concurrency"] = v
	}
	for _, f := range []struct{ field, metric string }{{"prefill_tok_s", metric.TokSPrompt}, {"decode_tok_s", metric.TokSOut}, {"ttft_ms_p50", metric.TTFTMs}, {"peak_vram_gb", metric.PeakVRAMGB}} {
		m, ok := metricOf(r, f.metric)
		switch {
		case !ok:
			unknown(f.field, "not-measured-by-this-run")
		case f.metric == metric.TTFTMs && len(m.Samples) == 0:
			// a mean is not a median: only samples give the p50
			if med, ok := metricOf(r, metric.TTFTMs+"Median"); ok {
				row[f.field] = med.Value
			} else {
				unknown(f.field, "median-not-recorded")
			}
		case f.metric == metric.TTFTMs:
			row[f.field] = median(m.Samples)
		default:
			row[f.field] = m.Value
		}
	}
	if m, ok := metricOf(r, metric.TokSOut); ok && len(m.Samples) > 0 {
		row["samples"] = len(m.Samples)
	}
	return &RegistrySweep{SchemaVersion: RegistrySchema, ID: recipe + "-sweep", RecipeID: recipe,
		MeasuredAt: r.Start.UTC().Format(time.RFC3339), Source: src, Rows: []map[string]any{row},
		Provenance: prov, Facts: facts}, nil
}

func hardwareID(r *results.Run) string {
	if r.Rig == nil || r.Rig.AcceleratorModelName == "" {
		return "unknown-hardware"
	}
	return fmt.Sprintf("%s-%sgb", r.Rig.AcceleratorModelName, strconv.FormatFloat(r.Rig.AcceleratorMemoryCapacityGB, 'f', -1, 64))
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// tableRow is one metric of one run.
type tableRow struct {
	Experiment string   `json:"experiment"`
	Point      string   `json:"point"`
	Run        string   `json:"run"`
	Start      string   `json:"start"`
	Status     string   `json:"status"`
	Metric     string   `json:"metric,omitempty"`
	Test       string   `json:"test,omitempty"`
	Unit       string   `json:"unit,omitempty"`
	Direction  string   `json:"direction,omitempty"`
	Value      *float64 `json:"value,omitempty"`
	Stddev     *float64 `json:"stddev,omitempty"`
	// CILow and CIHigh bound the Student-t 95% interval of the mean of
	// the samples; Min and Max are their spread. Absent with fewer than
	// two samples.
	CILow   *float64  `json:"ci95Low,omitempty"`
	CIHigh  *float64  `json:"ci95High,omitempty"`
	Min     *float64  `json:"min,omitempty"`
	Max     *float64  `json:"max,omitempty"`
	N       int       `json:"n"`
	Samples []float64 `json:"samples,omitempty"`
	Derived string    `json:"derived,omitempty"`
	Error   string    `json:"error,omitempty"`
}

// tableRows lists every metric of every run, experiments in order, each
// experiment's sweep points in the order of their values (not of their
// run ids), a point's runs by start.
func tableRows(recs []Record) []tableRow {
	recs = slices.Clone(recs)
	slices.SortStableFunc(recs, func(a, b Record) int {
		if c := strings.Compare(a.Run.Experiment, b.Run.Experiment); c != 0 {
			return c
		}
		if c := compare.ComparePointValues(a.Run.Swept, b.Run.Swept); c != 0 {
			return c
		}
		return a.Run.Start.Compare(b.Run.Start)
	})
	var rows []tableRow
	for _, rec := range recs {
		r := rec.Run
		base := tableRow{Experiment: r.Experiment, Point: r.Point, Run: r.ID, Start: r.Start.UTC().Format(time.RFC3339), Status: r.Status, Error: scrubText(r.Error)}
		if len(r.Metrics) == 0 {
			rows = append(rows, base)
			continue
		}
		for _, m := range r.Metrics {
			t := base
			t.Metric, t.Test, t.Unit, t.Direction = m.Name, m.Test, m.Unit, m.Direction
			t.Value = fptr(m.Value)
			if m.Stddev != 0 {
				t.Stddev = fptr(m.Stddev)
			}
			t.N = len(m.Samples)
			t.Samples = m.Samples
			if len(m.Samples) > 1 {
				ci := stats.MeanCI(m.Samples, 0.95)
				t.CILow, t.CIHigh = fptr(ci.Low), fptr(ci.High)
				t.Min, t.Max = fptr(slices.Min(m.Samples)), fptr(slices.Max(m.Samples))
			}
			t.Derived = m.Derived
			rows = append(rows, t)
		}
	}
	return rows
}

func fmtNum(p *float64) string {
	if p == nil {
		return ""
	}
	return strconv.FormatFloat(*p, 'g', -1, 64)
}

func table(format string, recs []Record) ([]byte, error) {
	rows := tableRows(recs)
	var b bytes.Buffer
	switch format {
	case ExportJSON:
		if rows == nil {
			rows = []tableRow{}
		}
		return marshal(rows)
	case ExportCSV:
		w := csv.NewWriter(&b)
		w.Write([]string{"experiment", "point", "run", "start", "status", "metric", "test", "unit", "direction", "value", "stddev", "ci95_low", "ci95_high", "min", "max", "n", "samples", "derived", "error"})
		for _, t := range rows {
			var ss []string
			for _, s := range t.Samples {
				ss = append(ss, strconv.FormatFloat(s, 'g', -1, 64))
			}
			w.Write([]string{t.Experiment, t.Point, t.Run, t.Start, t.Status, t.Metric, t.Test, t.Unit, t.Direction,
				fmtNum(t.Value), fmtNum(t.Stddev), fmtNum(t.CILow), fmtNum(t.CIHigh), fmtNum(t.Min), fmtNum(t.Max),
				strconv.Itoa(t.N), strings.Join(ss, " "), t.Derived, t.Error})
		}
		w.Flush()
		return b.Bytes(), w.Error()
	case ExportMarkdown:
		// For people: the value with the 95% interval of the mean (± in
		// percent of it) and the spread apart, no exponents.
		b.WriteString("| point | run | status | metric | test | value | ± 95% CI | min–max | n | unit |\n")
		b.WriteString("| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | --- |\n")
		for _, t := range rows {
			status := t.Status
			if t.Error != "" {
				status += ": " + t.Error
			}
			value, ci, span := "", "", ""
			if t.Value != nil {
				value = compare.FormatNum(*t.Value)
			}
			if t.CILow != nil {
				ci = text.FormatCI(compare.Summary{N: t.N, Center: stats.Mean(t.Samples), Low: *t.CILow, High: *t.CIHigh, Confidence: 0.95}, 0.95)
				span = compare.FormatNum(*t.Min) + "–" + compare.FormatNum(*t.Max)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %d | %s |\n", mdEscape(t.Point), t.Run, mdEscape(status),
				t.Metric, mdEscape(t.Test), value, ci, span, t.N, t.Unit)
		}
		return b.Bytes(), nil
	}
	return nil, errors.New("unknown table format " + format)
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// marshal encodes indented JSON without HTML escaping ("<redacted>" stays
// readable), with a trailing newline.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

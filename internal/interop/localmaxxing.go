package interop

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rigorbench/rigor/internal/metric"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/rig"
	"github.com/rigorbench/rigor/internal/spec"
)

// LocalMaxxing is a LocalMaxxing speed-test document, the body of
// POST /api/speed-tests. Numbers are pointers so that an absent field
// stays absent on the way out.
type LocalMaxxing struct {
	ID               string          `json:"id,omitempty"`
	CreatedAt        string          `json:"createdAt,omitempty"`
	HfID             string          `json:"hfId"`
	ModelRevision    string          `json:"modelRevision,omitempty"`
	Hardware         *LMHardware     `json:"hardware"`
	EngineName       string          `json:"engineName"`
	EngineVersion    string          `json:"engineVersion,omitempty"`
	EngineRepository string          `json:"engineRepository,omitempty"`
	EngineBuild      string          `json:"engineBuild,omitempty"`
	EngineCommit     string          `json:"engineCommit,omitempty"`
	Backend          string          `json:"backend,omitempty"`
	Quantization     string          `json:"quantization"`
	PromptTokens     *int            `json:"promptTokens,omitempty"`
	OutputTokens     *int            `json:"outputTokens,omitempty"`
	PrefillTokens    *int            `json:"prefillTokens,omitempty"`
	ContextLength    *int            `json:"contextLength,omitempty"`
	BatchSize        *int            `json:"batchSize,omitempty"`
	TokSOut          *float64        `json:"tokSOut"`
	TokSPrefill      *float64        `json:"tokSPrefill,omitempty"`
	TokSTotal        *float64        `json:"tokSTotal,omitempty"`
	TtftMs           *float64        `json:"ttftMs,omitempty"`
	PeakVramGb       *float64        `json:"peakVramGb,omitempty"`
	Notes            string          `json:"notes,omitempty"`
	EngineFlags      map[string]any  `json:"engineFlags,omitempty"`
	EngineTimingsRaw json.RawMessage `json:"engineTimingsRaw,omitempty"`
}

// LMHardware is the hardware object of a speed test.
type LMHardware struct {
	HwClass    string   `json:"hwClass"`
	GpuName    string   `json:"gpuName,omitempty"`
	GpuCount   *int     `json:"gpuCount,omitempty"`
	VramGb     *float64 `json:"vramGb,omitempty"`
	Cpu        string   `json:"cpu,omitempty"`
	CpuThreads *int     `json:"cpuThreads,omitempty"`
	RamGb      *float64 `json:"ramGb,omitempty"`
	Os         string   `json:"os,omitempty"`
}

// lmKeys are the top-level keys a speed test may carry; unknown keys are
// an error (the API drops them, so a typo would lose data silently).
var lmKeys = map[string]bool{"id": true, "createdAt": true, "hfId": true, "modelRevision": true, "hardware": true,
	"engineName": true, "engineVersion": true, "engineRepository": true, "engineBuild": true, "engineCommit": true,
	"backend": true, "quantization": true, "promptTokens": true, "outputTokens": true, "prefillTokens": true,
	"contextLength": true, "batchSize": true, "tokSOut": true, "tokSPrefill": true, "tokSTotal": true,
	"ttftMs": true, "peakVramGb": true, "gpuPowerWatts": true, "hardwareCost": true, "notes": true,
	"engineFlags": true, "promptSha256": true, "promptSample": true, "outputSha256": true,
	"outputSample": true, "engineTimingsRaw": true, "status": true, "verifiedRun": true, "verificationIssues": true}

// lmModelled are the keys the record holds itself; the others are kept
// only in the source file beside it.
var lmModelled = map[string]bool{"id": true, "createdAt": true, "hfId": true, "modelRevision": true, "hardware": true,
	"engineName": true, "engineVersion": true, "engineRepository": true, "engineCommit": true, "backend": true,
	"quantization": true, "tokSOut": true, "tokSPrefill": true, "tokSTotal": true, "ttftMs": true,
	"peakVramGb": true, "notes": true}

// missing lists the required fields d lacks. strict adds what LocalMaxxing
// requires of a submission beyond what an import needs to make a record:
// one of the secondary speeds, and the hardware details.
func (d *LocalMaxxing) missing(strict bool) []string {
	var miss []string
	if d.HfID == "" {
		miss = append(miss, "hfId")
	}
	if d.EngineName == "" {
		miss = append(miss, "engineName")
	}
	if d.Quantization == "" {
		miss = append(miss, "quantization")
	}
	if d.TokSOut == nil {
		miss = append(miss, "tokSOut")
	}
	if strict && d.TokSPrefill == nil && d.TokSTotal == nil && d.TtftMs == nil && d.PeakVramGb == nil {
		miss = append(miss, "one of tokSPrefill/tokSTotal/ttftMs/peakVramGb")
	}
	h := d.Hardware
	if h == nil {
		return append(miss, "hardware")
	}
	if h.HwClass == "" {
		miss = append(miss, "hardware.hwClass")
	}
	if !strict {
		return miss
	}
	if h.HwClass == "DISCRETE_GPU" {
		if h.GpuName == "" {
			miss = append(miss, "hardware.gpuName")
		}
		if h.GpuCount == nil {
			miss = append(miss, "hardware.gpuCount")
		}
		if h.VramGb == nil {
			miss = append(miss, "hardware.vramGb")
		}
	}
	if h.Cpu == "" {
		miss = append(miss, "hardware.cpu")
	}
	if h.RamGb == nil {
		miss = append(miss, "hardware.ramGb")
	}
	if h.Os == "" {
		miss = append(miss, "hardware.os")
	}
	return miss
}

// validate checks the fields LocalMaxxing requires.
func (d *LocalMaxxing) validate() error {
	if miss := d.missing(false); len(miss) > 0 {
		return fmt.Errorf("required fields missing: %s", strings.Join(miss, ", "))
	}
	if *d.TokSOut <= 0 {
		return fmt.Errorf("tokSOut is %g; LocalMaxxing requires a positive decode speed", *d.TokSOut)
	}
	if d.TokSPrefill == nil && d.TokSTotal == nil && d.TtftMs == nil && d.PeakVramGb == nil {
		return errors.New("none of tokSPrefill, tokSTotal, ttftMs, peakVramGb (at least one is required)")
	}
	switch d.Hardware.HwClass {
	case "DISCRETE_GPU", "UNIFIED", "CPU_ONLY":
	default:
		return fmt.Errorf("hardware.hwClass %q: want DISCRETE_GPU, UNIFIED or CPU_ONLY", d.Hardware.HwClass)
	}
	return nil
}

func (c *conv) localMaxxing() ([]Imported, error) {
	var d LocalMaxxing
	if err := decodeStrict(c.data, &d); err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	_ = json.Unmarshal(c.data, &top)
	var unknown, kept []string
	for k := range top {
		if !lmKeys[k] {
			unknown = append(unknown, k)
		} else if !lmModelled[k] {
			kept = append(kept, k)
		}
	}
	sort.Strings(unknown)
	sort.Strings(kept)
	if len(unknown) > 0 {
		return nil, fmt.Errorf("unknown fields %s (not a LocalMaxxing speed-test field)", strings.Join(unknown, ", "))
	}
	if err := d.validate(); err != nil {
		return nil, err
	}
	label := ""
	if d.ID != "" {
		label = "localmaxxing " + d.ID
	}
	p, how, err := c.link(label)
	if err != nil {
		return nil, err
	}
	if p == nil {
		p, how, err = c.linkByModel(d.HfID, d.EngineName, d.Quantization)
		if err != nil {
			return nil, err
		}
	}
	r := &results.Run{Schema: results.SchemaVersion}
	apply(r, p, how)
	start, err := time.Parse(time.RFC3339, d.CreatedAt)
	if err != nil {
		start = c.opts.Now.UTC().Truncate(time.Second)
		r.Unverified = append(r.Unverified, "start: the speed test carries no run time; this is the import time")
	}
	r.Start = start
	r.ID = c.runID(start, label)
	r.Provenance = c.provenance(label, d.ID)
	if label != "" {
		r.Labels = []string{label}
	}
	r.Status = results.StatusOK
	r.Engine = results.Engine{Family: d.EngineName, Version: d.EngineVersion, Source: d.EngineRepository, Backend: d.Backend}
	if d.EngineName == "llama.cpp" && p.Spec.Engine.Family == spec.FamilyIkLlamaCpp {
		r.Engine.Family = spec.FamilyIkLlamaCpp
	}
	commitFacts(r, d.EngineCommit)
	if d.EngineCommit == "" {
		r.Unverified = append(r.Unverified, "engine.commit: not in the speed test")
	}
	r.Model = results.Model{HF: d.HfID, Quant: d.Quantization, Path: p.Spec.Model.Path}
	revisionFacts(r, d.ModelRevision)
	if p.Spec.Model.Path != "" {
		r.Unverified = append(r.Unverified, "model.files: local path "+p.Spec.Model.Path+" not hashed")
	}
	r.Rig = lmRig(d.Hardware)
	if snip, _ := d.EngineFlags["commandSnippet"].(string); snip != "" {
		env, argv := splitCommand(snip)
		r.Processes = []results.Process{{Role: "bench", Argv: argv, Env: env}}
		r.Unverified = append(r.Unverified, "processes: from the submitter's engineFlags.commandSnippet, not observed by rigor")
	}
	r.Metrics = lmMetrics(&d, p)
	r.Notes = d.Notes
	if len(kept) > 0 {
		r.Warnings = append(r.Warnings, "kept only in "+SourceFile+" beside the record: "+strings.Join(kept, ", "))
	}
	return []Imported{{Run: r, Raw: c.raw()}}, nil
}

func lmRig(h *LMHardware) *rig.Rig {
	g := &rig.Rig{AcceleratorModelName: h.GpuName, HostProcessorModelName: h.Cpu, OperatingSystem: h.Os}
	if h.GpuCount != nil {
		g.AcceleratorsPerNode = *h.GpuCount
	}
	if h.VramGb != nil {
		g.AcceleratorMemoryCapacityGB = *h.VramGb
	}
	if h.RamGb != nil {
		g.HostMemoryCapacityGB = *h.RamGb
	}
	if h.CpuThreads != nil {
		g.HostProcessorCoreCount = *h.CpuThreads
	}
	return g
}

// lmTest names the workload of a speed test's metrics: the vLLM bench
// mode of the linked experiment, else llama-bench's spelling.
func lmTest(p *spec.Point, d *LocalMaxxing, name string) string {
	if mode, _ := p.Spec.Bench["mode"].(string); mode != "" {
		return mode
	}
	switch name {
	case metric.TokSOut:
		if d.OutputTokens != nil {
			return "tg" + strconv.Itoa(*d.OutputTokens)
		}
	case metric.TokSPrompt, metric.TTFTMs:
		if d.PromptTokens != nil {
			return "pp" + strconv.Itoa(*d.PromptTokens)
		}
	case metric.TokSTotal:
		if d.PromptTokens != nil && d.OutputTokens != nil {
			return "pp" + strconv.Itoa(*d.PromptTokens) + "+tg" + strconv.Itoa(*d.OutputTokens)
		}
	}
	return ""
}

func lmMetrics(d *LocalMaxxing, p *spec.Point) []results.Metric {
	var out []results.Metric
	add := func(name, unit, dir string, v *float64) {
		if v != nil {
			out = append(out, results.Metric{Name: name, Test: lmTest(p, d, name), Unit: unit, Direction: dir, Value: *v})
		}
	}
	add(metric.TokSOut, metric.TokPerSec, results.HigherIsBetter, d.TokSOut)
	add(metric.TokSPrompt, metric.TokPerSec, results.HigherIsBetter, d.TokSPrefill)
	add(metric.TokSTotal, metric.TokPerSec, results.HigherIsBetter, d.TokSTotal)
	add(metric.TTFTMs, metric.Ms, results.LowerIsBetter, d.TtftMs)
	add(metric.PeakVRAMGB, metric.GB, results.LowerIsBetter, d.PeakVramGb)
	return out
}

// linkByModel finds the one experiment point with the model, engine and
// quantization of a leaderboard record.
func (c *conv) linkByModel(hf, engineName, quant string) (*spec.Point, string, error) {
	var found []*spec.Experiment
	for _, x := range c.opts.Experiments {
		fam := x.Spec.Engine.Family
		if fam == spec.FamilyIkLlamaCpp {
			fam = spec.FamilyLlamaCpp // LocalMaxxing has no ik_llama.cpp engine name
		}
		if x.Spec.Model.HF == hf && fam == engineName && x.Spec.Model.Quant == quant {
			found = append(found, x)
		}
	}
	switch len(found) {
	case 0:
		return nil, "", c.noLink("", fmt.Sprintf("no experiment has model.hf %q, engine %q and model.quant %q", hf, engineName, quant))
	case 1:
		p, err := pickPoint(found[0], "")
		return p, fmt.Sprintf("linked as the one experiment with model.hf %s, engine %s and model.quant %q", hf, engineName, quant), err
	}
	var ids []string
	for _, x := range found {
		ids = append(ids, x.ID)
	}
	return nil, "", &LinkError{Msg: fmt.Sprintf("several experiments have model.hf %q, engine %q and model.quant %q (%s); give --experiment", hf, engineName, quant, strings.Join(ids, ", "))}
}

package interop

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rigorbench/rigor/internal/metric"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/rig"
	"github.com/rigorbench/rigor/internal/spec"
)

// registryRecord holds the fields of a local-ai-registry v1 recipe or
// speed sweep that an import reads.
type registryRecord struct {
	SchemaVersion   string `json:"schema_version"`
	ID              string `json:"id"`
	RecipeSource    string `json:"recipe_source"`
	ModelInstanceID string `json:"model_instance_id"`
	HardwareID      string `json:"hardware_id"`
	HardwareCount   int    `json:"hardware_count"`
	Description     string `json:"description"`
	Engine          *struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"engine"`
	Launch *struct {
		Kind  string `json:"kind"`
		RunID string `json:"run_id"`
		URL   string `json:"url"`
	} `json:"launch"`
	Metadata struct {
		LocalMaxxing *struct {
			RunID           string `json:"run_id"`
			HardwareLabel   string `json:"hardware_label"`
			Notes           string `json:"notes"`
			ObservedCommand string `json:"observed_command"`
			Tokenized       *struct {
				Arguments   []string          `json:"arguments"`
				Environment map[string]string `json:"environment"`
				Fidelity    string            `json:"fidelity"`
			} `json:"tokenized"`
		} `json:"localmaxxing"`
	} `json:"metadata"`
	Provenance *struct {
		CapturedAt string `json:"captured_at"`
	} `json:"provenance"`
	Huggingface *struct {
		Repository string `json:"repository"`
		Status     string `json:"status"`
	} `json:"huggingface"`
	Relationships *struct {
		Hardware *struct {
			Name string `json:"name"`
		} `json:"hardware"`
	} `json:"relationships"`
	SpeedSweepIDs []string `json:"speed_sweep_ids"`
	// speed sweep
	RecipeID   string        `json:"recipe_id"`
	MeasuredAt string        `json:"measured_at"`
	Rows       []registryRow `json:"rows"`
}

type registryRow struct {
	Concurrency   *int     `json:"concurrency"`
	ContextTokens *int     `json:"context_tokens"`
	OutputTokens  *int     `json:"output_tokens"`
	PrefillTokS   *float64 `json:"prefill_tok_s"`
	DecodeTokS    *float64 `json:"decode_tok_s"`
	TtftMsP50     *float64 `json:"ttft_ms_p50"`
	PeakVramGb    *float64 `json:"peak_vram_gb"`
	Samples       *int     `json:"samples"`
	Status        string   `json:"status"`
}

var vramFromID = regexp.MustCompile(`-([0-9]+)gb$`)

func (c *conv) registry() ([]Imported, error) {
	body := c.data
	var wrap struct {
		Data json.RawMessage `json:"data"`
	}
	if err := decodeStrict(c.data, &wrap); err != nil {
		return nil, err
	}
	if len(wrap.Data) > 0 {
		body = wrap.Data
	}
	var rec registryRecord
	if err := decodeStrict(body, &rec); err != nil {
		return nil, err
	}
	switch {
	case rec.SchemaVersion == "":
		return nil, errors.New("no schema_version")
	case rec.SchemaVersion != RegistrySchema:
		return nil, fmt.Errorf("schema_version %q: rigor reads %s only", rec.SchemaVersion, RegistrySchema)
	case rec.ID == "":
		return nil, errors.New("no id")
	}
	if rec.RecipeID != "" || rec.Rows != nil {
		return c.registrySweep(&rec)
	}
	if rec.HardwareID == "" || rec.Engine == nil {
		return nil, fmt.Errorf("record %s is neither a recipe (hardware_id, engine) nor a speed sweep (recipe_id, rows)", rec.ID)
	}
	return c.registryRecipe(&rec)
}

func (c *conv) registryRecipe(rec *registryRecord) ([]Imported, error) {
	runID := ""
	if rec.Launch != nil {
		runID = rec.Launch.RunID
	}
	lm := rec.Metadata.LocalMaxxing
	if runID == "" && lm != nil {
		runID = lm.RunID
	}
	label := rec.ID
	var p *spec.Point
	var how string
	var err error
	if runID != "" {
		p, how, err = c.link("localmaxxing " + runID)
		label = "localmaxxing " + runID
	}
	if err == nil && p == nil {
		p, how, err = c.link(rec.ID)
		if p != nil {
			label = rec.ID
		}
	}
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, c.noLink(label, "no experiment has it in its labels")
	}
	r := &results.Run{Schema: results.SchemaVersion}
	apply(r, p, how)
	start, ok := registryTime(rec)
	r.Start = start
	if !ok {
		return nil, errors.New("no provenance.captured_at")
	}
	r.Unverified = append(r.Unverified, "start: the registry's capture time "+start.Format(time.RFC3339)+", not the run's time")
	r.ID = c.runID(start, label)
	r.Provenance = c.provenance(label, runID)
	r.Labels = []string{label}
	r.Status = results.StatusOK
	r.Engine = results.Engine{Family: rec.Engine.Name, Version: rec.Engine.Version}
	if fam := p.Spec.Engine.Family; fam != rec.Engine.Name {
		r.Engine.Family = fam
		r.Warnings = append(r.Warnings, fmt.Sprintf("the registry names the engine %q (version %q); the linked experiment's family %s is recorded", rec.Engine.Name, rec.Engine.Version, fam))
	}
	r.Engine.Source = p.Spec.Engine.Source.Git
	r.Unverified = append(r.Unverified, "engine.commit: the registry gives only the version text "+strconv.Quote(rec.Engine.Version))
	if rec.Huggingface != nil {
		r.Model.HF = rec.Huggingface.Repository
	}
	r.Model.Quant = p.Spec.Model.Quant
	r.Unverified = append(r.Unverified, "model.revision: not in the registry record", "model.quant: from the linked experiment; the registry has model instance "+rec.ModelInstanceID)
	r.Rig = &rig.Rig{AcceleratorsPerNode: rec.HardwareCount}
	if rec.Relationships != nil && rec.Relationships.Hardware != nil {
		r.Rig.AcceleratorModelName = rec.Relationships.Hardware.Name
	} else if lm != nil {
		r.Rig.AcceleratorModelName = lm.HardwareLabel
	}
	if m := vramFromID.FindStringSubmatch(rec.HardwareID); m != nil {
		r.Rig.AcceleratorMemoryCapacityGB, _ = strconv.ParseFloat(m[1], 64)
	}
	if lm != nil && lm.Tokenized != nil && len(lm.Tokenized.Arguments) > 0 {
		r.Processes = []results.Process{{Role: "bench", Argv: lm.Tokenized.Arguments, Env: lm.Tokenized.Environment}}
		r.Unverified = append(r.Unverified, "processes: the submitter's observed command ("+lm.Tokenized.Fidelity+" tokenization), not observed by rigor")
	}
	var notes []string
	if rec.Description != "" {
		notes = append(notes, rec.Description)
	}
	if lm != nil && lm.Notes != "" {
		notes = append(notes, lm.Notes)
	}
	r.Notes = strings.Join(notes, "\n")
	if len(rec.SpeedSweepIDs) > 0 {
		r.Warnings = append(r.Warnings, "the recipe carries no speed figures; they are in its speed sweep "+strings.Join(rec.SpeedSweepIDs, ", ")+", which is not in this file")
	}
	return []Imported{{Run: r, Raw: c.raw()}}, nil
}

func registryTime(rec *registryRecord) (time.Time, bool) {
	for _, s := range []string{rec.MeasuredAt, capturedAt(rec)} {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

func capturedAt(rec *registryRecord) string {
	if rec.Provenance == nil {
		return ""
	}
	return rec.Provenance.CapturedAt
}

func (c *conv) registrySweep(rec *registryRecord) ([]Imported, error) {
	if len(rec.Rows) == 0 {
		return nil, errors.New("speed sweep with no rows")
	}
	label := rec.RecipeID
	p, how, err := c.link(label)
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, c.noLink(label, "no experiment has the recipe id in its labels")
	}
	start, ok := registryTime(rec)
	if !ok {
		return nil, errors.New("no measured_at")
	}
	r := &results.Run{Schema: results.SchemaVersion}
	apply(r, p, how)
	r.Start = start
	r.ID = c.runID(start, rec.ID)
	r.Provenance = c.provenance(rec.ID, rec.RecipeID)
	r.Labels = []string{label}
	r.Status = results.StatusOK
	r.Engine.Family = p.Spec.Engine.Family
	r.Unverified = append(r.Unverified, "engine.commit: not in a speed sweep", "model.revision: not in a speed sweep")
	for i, row := range rec.Rows {
		if row.Concurrency == nil || *row.Concurrency < 1 {
			return nil, fmt.Errorf("rows[%d]: concurrency missing or below 1", i)
		}
		test := fmt.Sprintf("c%d", *row.Concurrency)
		if row.ContextTokens != nil {
			test += fmt.Sprintf("@ctx%d", *row.ContextTokens)
		}
		add := func(name, unit, dir string, v *float64) {
			if v != nil {
				r.Metrics = append(r.Metrics, results.Metric{Name: name, Test: test, Unit: unit, Direction: dir, Value: *v})
			}
		}
		add(metric.TokSOut, metric.TokPerSec, results.HigherIsBetter, row.DecodeTokS)
		add(metric.TokSPrompt, metric.TokPerSec, results.HigherIsBetter, row.PrefillTokS)
		add(metric.TTFTMs, metric.Ms, results.LowerIsBetter, row.TtftMsP50)
		add(metric.PeakVRAMGB, metric.GB, results.LowerIsBetter, row.PeakVramGb)
	}
	return []Imported{{Run: r, Raw: c.raw()}}, nil
}

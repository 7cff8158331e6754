package interop

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rigorbench/rigor/internal/engine/llamabench"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/rig"
	"github.com/rigorbench/rigor/internal/spec"
)

// llamaBench imports llama-bench -o json or -o jsonl output. The output
// does not say which experiment it belongs to, so --experiment is
// required; a sweep experiment gets one run per point, its rows found by
// the point's swept flag values.
func (c *conv) llamaBench() ([]Imported, error) {
	rows, complete, err := llamabench.ParseJSON(c.data)
	if err != nil {
		return nil, err
	}
	if !complete {
		return nil, fmt.Errorf("%w: the output stops after %d complete rows (llama-bench died, or the file was cut); nothing imported", ErrTruncated, len(rows))
	}
	if len(rows) == 0 {
		return nil, errors.New("no rows")
	}
	if c.opts.Experiment == "" {
		return nil, &LinkError{Msg: "llama-bench output does not say which experiment it belongs to; give --experiment ID"}
	}
	x, err := c.findExperiment(c.opts.Experiment)
	if err != nil {
		return nil, err
	}
	_, axes := spec.SplitPointID(c.opts.Experiment)
	points := x.Points
	if axes != "" {
		points = nil
		for _, p := range x.Points {
			if results.SamePoint(p.ID, c.opts.Experiment) {
				points = append(points, p)
			}
		}
		if len(points) == 0 {
			return nil, fmt.Errorf("%s has no point %q", x.ID, c.opts.Experiment)
		}
	}
	var out []Imported
	if len(points) == 1 {
		r, err := c.llamaRun(points[0], rows, "")
		if err != nil {
			return nil, err
		}
		return []Imported{{Run: r, Raw: c.raw()}}, nil
	}
	used := 0
	for _, p := range points {
		flags := map[string]any{}
		for _, a := range p.Axes {
			if a.Section != "flags" {
				return nil, fmt.Errorf("%s sweeps %s, which llama-bench rows do not report; import one point at a time with --experiment POINT", x.ID, a.Path())
			}
			flags[a.Name] = a.Value
		}
		key, fields, err := llamabench.FlagKey(flags)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.ID, err)
		}
		g, ok := llamabench.SplitRows(rows, fields)[key]
		if !ok {
			continue
		}
		used += len(g.Rows)
		r, err := c.llamaRun(p, g.Rows, p.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, Imported{Run: r, Raw: c.raw()})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no row matches a point of %s", x.ID)
	}
	if used != len(rows) {
		return nil, fmt.Errorf("%d of %d rows match no point of %s", len(rows)-used, len(rows), x.ID)
	}
	return out, nil
}

func (c *conv) llamaRun(p *spec.Point, rows []llamabench.Row, label string) (*results.Run, error) {
	seen := map[string]bool{}
	r := &results.Run{Schema: results.SchemaVersion}
	apply(r, p, "given with --experiment")
	first := rows[0]
	for _, row := range rows {
		for _, m := range row.Metrics() {
			if seen[m.Key()] {
				return nil, fmt.Errorf("two rows of %s %s for %s; the rows differ in parameters the experiment does not sweep", m.Name, m.Test, p.ID)
			}
			seen[m.Key()] = true
			r.Metrics = append(r.Metrics, m)
		}
		if !row.TestTime.IsZero() && (r.Start.IsZero() || row.TestTime.Before(r.Start)) {
			r.Start = row.TestTime
		}
		if end := row.TestTime.Add(time.Duration(sum(row.SamplesNs))); !row.TestTime.IsZero() && end.After(r.End) {
			r.End = end
		}
	}
	if r.Start.IsZero() {
		r.Start = c.opts.Now.UTC().Truncate(time.Second)
		r.Unverified = append(r.Unverified, "start: no test_time in the output; this is the import time")
	}
	if err := llamabench.VerifyRows(rows, pointFlags(p)); err != nil {
		return nil, fmt.Errorf("the rows do not match %s: %w", p.ID, err)
	}
	r.ID = c.runID(r.Start, label)
	r.Provenance = c.provenance(label, "")
	r.Status = results.StatusOK
	r.Engine = results.Engine{Family: p.Spec.Engine.Family, Source: p.Spec.Engine.Source.Git, Backend: first.Backends, Build: llamabench.Build(rows)}
	commitFacts(r, first.BuildCommit)
	r.Model = results.Model{HF: p.Spec.Model.HF, Quant: p.Spec.Model.Quant,
		Files: []results.File{{Path: first.ModelFilename, Size: first.ModelSize}}}
	revisionFacts(r, p.Spec.Model.Rev())
	r.Unverified = append(r.Unverified, "model.files: "+first.ModelFilename+" not hashed")
	r.Rig = &rig.Rig{HostProcessorModelName: first.CPUInfo, AcceleratorModelName: first.GPUInfo}
	if first.GPUInfo != "" {
		r.Rig.AcceleratorsPerNode = len(strings.Split(first.GPUInfo, ", "))
	}
	return r, nil
}

// pointFlags are the point's flags that llama-bench reports, for
// [llamabench.VerifyRows].
func pointFlags(p *spec.Point) map[string]any {
	out := map[string]any{}
	for k, v := range p.Spec.Flags {
		if _, ok := llamabench.FieldOf(k); ok {
			out[k] = v
		}
	}
	return out
}

func sum(xs []int64) int64 {
	var s int64
	for _, x := range xs {
		s += x
	}
	return s
}

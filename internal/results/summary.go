package results

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rigorbench/rigor/internal/hoststate"
	"github.com/rigorbench/rigor/internal/rig"
)

// Summary is what the listing verbs need of a record, small enough that
// an index of a year of records loads in a fraction of a second: the
// record's identity, status, engine commit, rig, each metric's mean and
// spread, and the import source. [Summarize] computes it from a record;
// the index ([Store.Summaries]) keeps it beside the record file's stat.
type Summary struct {
	ID         string    `json:"id"`
	Experiment string    `json:"experiment"`
	Point      string    `json:"point"`
	Start      time.Time `json:"start"`
	Status     string    `json:"status"`
	Error      string    `json:"error,omitempty"`
	// Engine holds the engine commit, requested ref and version only.
	Engine EngineRef `json:"engine,omitzero"`
	// Accelerator and Accelerators summarize the rig's GPUs: the model
	// name and how many per node.
	Accelerator  string          `json:"accelerator,omitempty"`
	Accelerators int             `json:"accelerators,omitempty"`
	Metrics      []MetricSummary `json:"metrics,omitempty"`
	// Import is the source file's hash and the source's own name for the
	// run, for an imported record: what import's duplicate check matches.
	Import *ImportKey `json:"import,omitempty"`
	// Invocation is the record's invocation id ([Run.Invocation]): the
	// rounds of one invocation are compared together.
	Invocation string `json:"invocation,omitempty"`

	// Detail is what rigor log shows beyond the above; set by
	// [Summarize] and by [Store.Details], not by [Store.Summaries].
	Detail *Detail `json:"detail,omitempty"`

	// Path is the record file; set when listed, never stored.
	Path string `json:"-"`
	// stat is the record file's stat when listed, "" when it changed
	// within the index's racy window (see [Summary.StatKey]).
	stat string
}

// StatKey is the record file's stat (size, modification and change times,
// inode) when it was listed by [Store.Summaries], or "" when the file
// changed too recently for its stat to tell a later change from this
// one. Equal keys mean an unchanged record, as the index trusts them.
func (x *Summary) StatKey() string { return x.stat }

// Detail is what a run's history (rigor log) needs of its record beyond
// the [Summary], so that the history is built from the index: timing,
// rig, machine, the metrics' samples, and a hash of what each section of
// the run's configuration is made of. Equal hashes mean an equal section
// (no drift to show); only where a hash changes are the two records read
// to say what changed.
type Detail struct {
	End   time.Time `json:"end,omitzero"`
	Round int       `json:"round,omitempty"`
	// Swept is the record's swept values as JSON (keys sorted); "" without
	// a sweep.
	Swept string `json:"swept,omitempty"`
	Host  string `json:"host,omitempty"`
	// Rig is [RigSummary] of the record's rig.
	Rig string `json:"rig,omitempty"`
	// Busy says why the machine was busy while the run ran (the record's
	// machine state judged at [hoststate.DefaultBusyShare]); "" when it was
	// not.
	Busy       string `json:"busy,omitempty"`
	SpecDigest string `json:"specDigest,omitempty"`
	LockDigest string `json:"lockDigest,omitempty"`
	// Hashes of the inputs of the configuration's sections ([ConfigHashes]).
	Hashes ConfigHashes `json:"hashes"`
	// Samples are each metric's samples, in the order of the summary's
	// metrics; nil for a metric with fewer than two (its mean is its value).
	Samples [][]float64 `json:"samples,omitempty"`
	// Directions are the metrics' recorded directions ([Metric.Direction]),
	// in the order of the summary's metrics; nil when none has one.
	Directions []string `json:"directions,omitempty"`
}

// ConfigHashes hash, for each section of a run's configuration as the
// configuration diff flattens it (spec, lock, passEnv values, rig), every
// field of the record the section is made of: two records with equal
// hashes have equal sections. Different hashes may still flatten to equal
// sections (a reworded description): the records then tell.
type ConfigHashes struct {
	Spec string `json:"spec"`
	Lock string `json:"lock"`
	Env  string `json:"env"`
	Rig  string `json:"rig"`
}

// configHashes computes a record's [ConfigHashes]. The spec's top-level
// fields named like another section (lock…, rig…, passEnv…) flatten to
// paths that section claims, so they are in its hash too.
func configHashes(r *Run) ConfigHashes {
	// Compacted: a record's spec is indented where it sits in the file.
	spec := []byte(r.Spec)
	var buf bytes.Buffer
	if json.Compact(&buf, r.Spec) == nil {
		spec = buf.Bytes()
	}
	var top map[string]json.RawMessage
	json.Unmarshal(spec, &top)
	specPart := func(prefix string) []byte {
		var keys []string
		for k := range top {
			if strings.HasPrefix(k, prefix) {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		var b []byte
		for _, k := range keys {
			b = append(append(append(b, k...), 0), top[k]...)
		}
		return b
	}
	var env map[string]string
	if len(r.Processes) > 0 {
		env = r.Processes[len(r.Processes)-1].Env
	}
	return ConfigHashes{
		Spec: hashOf(spec),
		Lock: hashOf(marshal(r.Engine), marshal(r.Model), specPart("lock")),
		Env:  hashOf(spec, marshal(env)),
		Rig:  hashOf(marshal(r.Rig), specPart("rig")),
	}
}

func marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(err.Error())
	}
	return b
}

// hashOf is the first 16 hex digits of the SHA-256 of the parts, each
// prefixed with its length.
func hashOf(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:", len(p))
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// RigGPU is the rig's GPU model name, from the summary field or else the
// detected GPUs' names.
func RigGPU(g *rig.Rig) string {
	if g == nil {
		return ""
	}
	if g.AcceleratorModelName != "" {
		return g.AcceleratorModelName
	}
	var names []string
	for _, a := range g.Accelerators {
		if !slices.Contains(names, a.Name) {
			names = append(names, a.Name)
		}
	}
	return strings.Join(names, " + ")
}

// RigGPUCount is the rig's number of GPUs per node.
func RigGPUCount(g *rig.Rig) int {
	if g == nil {
		return 0
	}
	if g.AcceleratorsPerNode > 0 {
		return g.AcceleratorsPerNode
	}
	return len(g.Accelerators)
}

// RigSummary summarizes a rig in a few words: "4× Intel Arc Pro B70",
// else its CPU.
func RigSummary(g *rig.Rig) string {
	if g == nil {
		return ""
	}
	if name := RigGPU(g); name != "" {
		if n := RigGPUCount(g); n > 1 {
			return fmt.Sprintf("%d× %s", n, name)
		}
		return name
	}
	return g.HostProcessorModelName
}

// EngineRef is the part of [Engine] a listing shows.
type EngineRef struct {
	Commit  string `json:"commit,omitempty"`
	Ref     string `json:"ref,omitempty"`
	Version string `json:"version,omitempty"`
}

// ImportKey identifies an imported run's source: the file's sha256 and
// the source's label for the run.
type ImportKey struct {
	SHA256 string `json:"sha256,omitempty"`
	Label  string `json:"label,omitempty"`
}

// String is the key as one string, for maps.
func (k ImportKey) String() string { return k.SHA256 + "\x00" + k.Label }

// MetricSummary is one metric of a run: the mean of its samples (the
// engine's value when it recorded none) and their count.
type MetricSummary struct {
	Name string  `json:"name"`
	Test string  `json:"test,omitempty"`
	Unit string  `json:"unit,omitempty"`
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
}

// Key identifies the metric within a run: name plus test, as [Metric.Key].
func (m MetricSummary) Key() string {
	if m.Test == "" {
		return m.Name
	}
	return m.Name + " " + m.Test
}

// Summarize returns the summary of a run.
func Summarize(r *Run) *Summary {
	s := &Summary{ID: r.ID, Experiment: r.Experiment, Point: r.Point, Start: r.Start.UTC(), Status: r.Status, Error: r.Error,
		Engine:     EngineRef{Commit: r.Engine.Commit, Ref: r.Engine.Ref, Version: r.Engine.Version},
		Invocation: r.Invocation}
	if s.Point == "" {
		s.Point = r.Experiment
	}
	if g := r.Rig; g != nil {
		s.Accelerator, s.Accelerators = g.AcceleratorModelName, g.AcceleratorsPerNode
	}
	if p := r.Provenance; p != nil && p.Kind == "import" {
		s.Import = &ImportKey{SHA256: p.SHA256, Label: p.Label}
	}
	d := &Detail{End: r.End.UTC(), Round: r.Round, Rig: RigSummary(r.Rig),
		SpecDigest: r.SpecDigest, LockDigest: r.LockDigest, Hashes: configHashes(r)}
	if len(r.Swept) > 0 {
		d.Swept = string(marshal(r.Swept))
	}
	if r.Rig != nil {
		d.Host = r.Rig.Hostname
	}
	if busy, why := r.Machine.Busy(hoststate.DefaultBusyShare); busy {
		d.Busy = why
	}
	s.Detail = d
	for i, m := range r.Metrics {
		if len(m.Samples) > 1 {
			if d.Samples == nil {
				d.Samples = make([][]float64, len(r.Metrics))
			}
			d.Samples[i] = slices.Clone(m.Samples)
		}
		if m.Direction != "" && d.Directions == nil {
			d.Directions = make([]string, len(r.Metrics))
		}
		if d.Directions != nil {
			d.Directions[i] = m.Direction
		}
		ms := MetricSummary{Name: m.Name, Test: m.Test, Unit: m.Unit, N: 1, Mean: m.Value}
		if len(m.Samples) > 0 {
			// The same sum, in the same order, as stats.Mean (internal/compare/stats).
			var sum float64
			for _, v := range m.Samples {
				sum += v
			}
			ms.N, ms.Mean = len(m.Samples), sum/float64(len(m.Samples))
		}
		s.Metrics = append(s.Metrics, ms)
	}
	return s
}

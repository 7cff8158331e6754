package results

import "time"

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

	// Path is the record file; set when listed, never stored.
	Path string `json:"-"`
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
	for _, m := range r.Metrics {
		ms := MetricSummary{Name: m.Name, Test: m.Test, Unit: m.Unit, N: 1, Mean: m.Value}
		if len(m.Samples) > 0 {
			// The same sum, in the same order, as compare.Mean.
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

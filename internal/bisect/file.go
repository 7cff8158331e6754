package bisect

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// File is a bisect as it is kept in results/.bisect/<experiment>.json,
// committed after every round: what was asked, and the [State].
type File struct {
	Schema     int    `json:"schema"`
	Experiment string `json:"experiment"`
	Point      string `json:"point"`
	// Metric and Test name the figure bisected (Test is set by the first
	// run that reports the metric).
	Metric string `json:"metric"`
	Test   string `json:"test,omitempty"`
	// Good and Bad are the refs as given, GoodCommit and BadCommit what
	// they resolved to.
	Good       string `json:"good"`
	Bad        string `json:"bad"`
	GoodCommit string `json:"goodCommit"`
	BadCommit  string `json:"badCommit"`
	MinRounds  int    `json:"minRounds"`
	MaxRounds  int    `json:"maxRounds"`
	// Seed shuffles the order of every round; Invocation is the prefix of
	// the invocation ids of the runs.
	Seed       uint64 `json:"seed"`
	Invocation string `json:"invocation"`
	// Outcome is set once the bisect is over.
	Outcome *Summary `json:"outcome,omitempty"`
	State
}

// Summary is how a bisect ended, as kept in its file.
type Summary struct {
	Ending    Ending   `json:"ending"`
	First     string   `json:"first,omitempty"`
	LastGood  string   `json:"lastGood"`
	FirstBad  string   `json:"firstBad"`
	Undecided string   `json:"undecided,omitempty"`
	Skipped   []string `json:"skipped,omitempty"`
}

// Rule is the file's decision rule.
func (f *File) Rule() Rule { return Rule{MinRounds: f.MinRounds, MaxRounds: f.MaxRounds} }

// Read reads a bisect file.
func Read(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if f.Schema != 1 {
		return nil, fmt.Errorf("reading %s: schema %d, want 1", path, f.Schema)
	}
	return &f, nil
}

// Write writes f to path atomically (a temporary file renamed over it),
// so that a kill leaves the previous state or the new one.
func Write(path string, f *File) error {
	f.Schema = 1
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

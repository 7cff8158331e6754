package compare

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rigorbench/rigor/internal/results"
)

// TestCompare_unpinned: an endpoint's runs (engine.unpinned) against a
// pinned engine are a mismatch that says one side is not pinned; two
// endpoint sides are a warning that nothing pins either, and another
// endpoint is named as such.
func TestCompare_unpinned(t *testing.T) {
	mk := func(unpinned, source string) results.Run {
		return results.Run{ID: "r", Experiment: "x", Status: "ok", Spec: json.RawMessage(`{}`),
			Engine:  results.Engine{Family: "endpoint", Source: source, Unpinned: unpinned},
			Metrics: []results.Metric{{Name: "tokSOut", Unit: "tok/s", Direction: "higher", Samples: []float64{1, 2, 3}}}}
	}
	pinned := mk("", "https://github.com/ggml-org/llama.cpp")
	pinned.Engine.Family = "llama.cpp"
	ep := mk("an endpoint rigor did not start", "http://box:8000")
	other := mk("an endpoint rigor did not start", "http://other:8000")

	_, err := Compare(Side{"a", []results.Run{pinned}}, Side{"b", []results.Run{ep}}, Options{Strict: true})
	if want := "sides are not comparable: engine not pinned on one side: pinned → not pinned (http://box:8000)"; err == nil || err.Error() != want {
		t.Errorf("pinned against an endpoint: %v, want %q", err, want)
	}

	rep, err := Compare(Side{"a", []results.Run{ep}}, Side{"b", []results.Run{ep}}, Options{Strict: true})
	if err != nil {
		t.Fatalf("one endpoint on both sides: %v", err)
	}
	found := false
	for _, w := range rep.Warnings {
		if w.Kind == WarnUnverified && strings.HasPrefix(w.Message, "engine not pinned: a and b measured an endpoint rigor did not start") {
			found = true
		}
	}
	if !found {
		t.Errorf("one endpoint on both sides: warnings %+v, want engine not pinned", rep.Warnings)
	}

	_, err = Compare(Side{"a", []results.Run{ep}}, Side{"b", []results.Run{other}}, Options{Strict: true})
	if want := "engine not pinned, and another endpoint: not pinned (http://box:8000) → not pinned (http://other:8000)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("two endpoints: %v, want %q", err, want)
	}

	rep, _ = Compare(Side{"a", []results.Run{pinned}}, Side{"b", []results.Run{pinned}}, Options{})
	for _, w := range rep.Warnings {
		if strings.Contains(w.Message, "not pinned") {
			t.Errorf("pinned engines: warning %q", w.Message)
		}
	}
}

package run

import (
	"testing"

	"github.com/rigorbench/rigor/internal/results"
)

// TestBuildFacts_perReporter: llama-bench and llama-server of one build
// report different facts; a run without a report takes the last one of
// its own kind, never the other program's.
func TestBuildFacts_perReporter(t *testing.T) {
	cache := t.TempDir()
	bins := map[string]string{"llama-bench": "aa", "llama-server": "bb"}
	keepBuildFacts(cache, bins, "", &results.Build{Backends: "CPU", CPU: "Test CPU"})
	keepBuildFacts(cache, bins, "server", &results.Build{Flavour: "server (build b1-abc1234)"})
	if b := keptBuildFacts(cache, bins, ""); b == nil || b.CPU != "Test CPU" || b.Flavour != "" || b.From == "" {
		t.Errorf("the bench's kept facts %+v, want llama-bench's report, marked as from an earlier run", b)
	}
	if b := keptBuildFacts(cache, bins, "server"); b == nil || b.Flavour != "server (build b1-abc1234)" || b.CPU != "" {
		t.Errorf("the server's kept facts %+v, want llama-server's report", b)
	}
	if b := keptBuildFacts(cache, map[string]string{"llama-bench": "cc"}, ""); b != nil {
		t.Errorf("facts %+v kept for other binaries", b)
	}
}

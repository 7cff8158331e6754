package llamacpp_test

import (
	"context"
	"strings"
	"testing"

	"github.com/rigorbench/rigor/internal/engine/llamacpp"
	"github.com/rigorbench/rigor/internal/spec"
)

// TestBuildInputs_noCache: the cache directory is configuration, read at
// the front door; a build without one fails instead of reading the
// environment for a default.
func TestBuildInputs_noCache(t *testing.T) {
	opts := llamacpp.BuildOptions{Commit: strings.Repeat("a", 40), Fork: spec.FamilyLlamaCpp}
	if _, _, err := llamacpp.BuildInputs(context.Background(), opts); err == nil || !strings.Contains(err.Error(), "no cache directory") {
		t.Errorf("BuildInputs without a cache = %v, want an error naming the missing cache", err)
	}
}

package llamacpp_test

import (
	"context"
	"testing"

	"github.com/rigorbench/rigor/internal/engine/llamacpp"
	"github.com/rigorbench/rigor/internal/engine/llamacpp/testengine"
)

// BenchmarkBuild_cached measures finding a cached build: the key (three
// `--version` runs for the compiler identity, a sha256) and the marker's
// stat and read. Build and LookupBuild take the same path on a hit.
func BenchmarkBuild_cached(b *testing.B) {
	s := newEngineSrc(b, false)
	opts := s.opts(b, testengine.V2)
	opts.Patches = []llamacpp.PatchInput{s.patch(b, "cpu-info.patch")}
	ctx := context.Background()
	if _, err := llamacpp.Build(ctx, opts); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		bi, err := llamacpp.Build(ctx, opts)
		if err != nil || !bi.Cached {
			b.Fatalf("cached build: %v, cached %v", err, bi != nil && bi.Cached)
		}
	}
}

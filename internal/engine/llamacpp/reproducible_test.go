package llamacpp_test

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rigorbench/rigor/internal/buildcache"
	"github.com/rigorbench/rigor/internal/engine/llamacpp"
	"github.com/rigorbench/rigor/internal/engine/llamacpp/testengine"
)

// TestBuild_reproducible builds the test engine twice, in two caches at
// different paths: the programs must be byte-identical, so that a record's
// binary hashes name the build, not the machine's temporary path or pid.
// It then damages a program and checks that the cached build is refused.
func TestBuild_reproducible(t *testing.T) {
	s := newEngineSrc(t, false)
	var sums []map[string]string
	var first *llamacpp.BuildInfo
	for i, cache := range []string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "somewhere", "else")} {
		opts := s.opts(t, testengine.V2)
		opts.Cache, opts.RPC = cache, true
		b, err := llamacpp.Build(context.Background(), opts)
		if err != nil {
			t.Fatalf("build %d: %v", i, err)
		}
		if len(b.SHA256) < 2 {
			t.Fatalf("build %d recorded hashes %v, want llama-bench and rpc-server", i, b.SHA256)
		}
		sums = append(sums, b.SHA256)
		if first == nil {
			first = b
		}
	}
	for name, sum := range sums[0] {
		if sums[1][name] != sum {
			t.Errorf("%s differs between two builds of one key: %.12s and %.12s", name, sum, sums[1][name])
		}
	}
	e, err := buildcache.Cache{Root: filepath.Dir(filepath.Dir(first.Dir))}.Lookup(first.ID)
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]string{}
	for n := range e.Bins {
		byPath[e.Bin(n)] = sums[0][n]
	}
	if _, ok := sums[0]["bin/libllama.so"]; !ok {
		t.Errorf("the build recorded %v, want bin/libllama.so among them", slices.Sorted(maps.Keys(sums[0])))
	}
	ok := func(p string) (string, error) { return byPath[p], nil }
	if err := e.Verify(ok); err != nil {
		t.Errorf("Verify of an intact build: %v", err)
	}
	bad := func(p string) (string, error) { return "0000", nil }
	if err := e.Verify(bad); err == nil {
		t.Error("Verify of a changed program: no error")
	} else if _, is := err.(*buildcache.BinaryChangedError); !is {
		t.Errorf("Verify of a changed program: %T %v, want a *BinaryChangedError", err, err)
	}
}

package interop

import (
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/spec"
)

var (
	repoOnce sync.Once
	repoSet  *spec.Set
	repoIDs  []string
	repoErr  error
)

// repoOptions loads this repository's experiments, the ones the seeds
// belong to.
func repoOptions(t testing.TB) ImportOptions {
	t.Helper()
	repoOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		repoSet, repoErr = spec.Load(spec.Options{Root: root})
		if repoErr == nil {
			repoIDs, repoErr = spec.AllIDs(root)
		}
	})
	if repoErr != nil {
		t.Fatal(repoErr)
	}
	var xs []*spec.Experiment
	for _, x := range repoSet.Experiments {
		if !x.Broken {
			xs = append(xs, x)
		}
	}
	return ImportOptions{Experiments: xs, IDs: repoIDs, Now: time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)}
}

func readSeed(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

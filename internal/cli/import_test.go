package cli

import (
	"path/filepath"
	"testing"
)

// TestRecordedPath: an imported record names its file relative to the
// module when the file is inside it, else by its name only: never by a
// path of the importing machine.
func TestRecordedPath(t *testing.T) {
	root := filepath.FromSlash("/home/u/bench")
	wd := filepath.Join(root, "experiments")
	for f, want := range map[string]string{
		"../seeds/000.json":                     "seeds/000.json",
		"a.json":                                "experiments/a.json",
		filepath.Join(root, "x", "b.json"):      "x/b.json",
		"../../shared/seeds/000_6ca3.json":      "000_6ca3.json",
		filepath.FromSlash("/mnt/s/004.json"):   "004.json",
		filepath.FromSlash("/home/u/benchmark"): "benchmark",
	} {
		if got := recordedPath(root, wd, f); got != want {
			t.Errorf("recordedPath(%q) = %q, want %q", f, got, want)
		}
	}
}

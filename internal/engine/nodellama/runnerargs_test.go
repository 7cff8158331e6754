package nodellama

import (
	"os"
	"regexp"
	"slices"
	"sort"
	"testing"
)

// TestRunnerArgs checks that RunnerArgs is exactly the options the
// runner's parseArgs switch accepts.
func TestRunnerArgs(t *testing.T) {
	src, err := os.ReadFile("runner/rigor-bench.mjs")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range regexp.MustCompile(`case "(-[^"]+)":`).FindAllStringSubmatch(string(src), -1) {
		got = append(got, m[1])
	}
	want := slices.Clone(RunnerArgs)
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("the runner accepts %v, RunnerArgs lists %v", got, want)
	}
}

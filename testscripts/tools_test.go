package testscripts

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// needTools are the tools some scripts need and CI installs (.ci/run).
var needTools = []string{"cmake", "node", "npm"}

func init() {
	// [cmake], [node], [npm]: the tool is on the PATH. Outside CI a script
	// skips without it ([!cmake] skip); under CI=true a missing tool fails
	// the script instead, so that a CI image without it cannot pass by
	// skipping what the README calls "every test".
	for _, tool := range needTools {
		scriptConds[tool] = func() (bool, error) { return haveTool(tool) }
	}
}

func haveTool(tool string) (bool, error) {
	if _, err := exec.LookPath(tool); err == nil {
		return true, nil
	}
	if os.Getenv("CI") == "true" {
		return false, fmt.Errorf("CI=true but %s is not installed: .ci/run installs it", tool)
	}
	return false, nil
}

// TestNoSilentSkips: scripts ask for CI's tools through the conditions
// above, never through [exec:TOOL], which skips in CI too.
func TestNoSilentSkips(t *testing.T) {
	files, err := filepath.Glob("*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	re := regexp.MustCompile(`\[!?exec:(cmake|node|npm|chromium)\]`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := re.Find(b); m != nil {
			t.Errorf("%s: %s skips in CI too; use [!%s] (tools_test.go)", f, m, re.FindSubmatch(b)[1])
		}
	}
}

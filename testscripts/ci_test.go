package testscripts

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// goTestRe finds a go test command in a shell script or Makefile recipe:
// `go test`, `$(GO) test`, `"$GO" test`.
var goTestRe = regexp.MustCompile(`(^|[\s;&|(])(go|\$\(GO\)|"?\$\{?GO\}?"?) test(\s|$)`)

var timeoutRe = regexp.MustCompile(`-timeout[ =](\S+)`)

// minTimeout is the least -timeout each kind of go test in CI may have,
// from the worst cases measured (TESTING.md, "Timeouts in CI"): the native
// node-llama-cpp build took 36 min on 2 cores, make test 26 min at load 31.
func minTimeout(line string) time.Duration {
	if strings.Contains(line, "nodellama_native_build") {
		return 60 * time.Minute
	}
	return 40 * time.Minute
}

// TestCITimeouts: every go test that .ci/run runs, directly or through
// the Makefile, names its -timeout, at least the measured worst case with
// room to spare. go test's default of 10 minutes killed the native build
// at 47% on a loaded CI machine (issue 31).
func TestCITimeouts(t *testing.T) {
	for _, f := range []string{"../.ci/run", "../Makefile"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		for i, line := range strings.Split(string(b), "\n") {
			code, _, _ := strings.Cut(line, "#")
			if !goTestRe.MatchString(code) {
				continue
			}
			n++
			m := timeoutRe.FindStringSubmatch(code)
			if m == nil {
				t.Errorf("%s:%d: go test without -timeout (go's default of 10m is too short under load): %s", f, i+1, strings.TrimSpace(line))
				continue
			}
			d, err := time.ParseDuration(resolveMakeVar(string(b), m[1]))
			if err != nil {
				t.Errorf("%s:%d: -timeout %s: %v", f, i+1, m[1], err)
				continue
			}
			if min := minTimeout(code); d < min {
				t.Errorf("%s:%d: -timeout %s is below the measured worst case's %s", f, i+1, d, min)
			}
		}
		if n == 0 {
			t.Errorf("%s: found no go test command; is this test's pattern out of date?", f)
		}
	}
}

// resolveMakeVar turns $(NAME) into the value of `NAME ?= value` or
// `NAME := value` in the Makefile text.
func resolveMakeVar(makefile, v string) string {
	name, ok := strings.CutPrefix(v, "$(")
	if !ok {
		return v
	}
	name = strings.TrimSuffix(name, ")")
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\s*[?:]?=\s*(\S+)`)
	if m := re.FindStringSubmatch(makefile); m != nil {
		return m[1]
	}
	return v
}

// TestCIPhases: .ci/run runs each long step through its phase helper,
// which prints the step's duration, so that a slow phase is visible in
// CI's log (issue 31).
func TestCIPhases(t *testing.T) {
	b, err := os.ReadFile("../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "phase() {") {
		t.Fatalf(".ci/run has no phase helper")
	}
	long := regexp.MustCompile(`(^|\s)(make \w+|go test|\$\(GO\) test|scripts/ci-slurm\.sh (install|start))`)
	for i, line := range strings.Split(string(b), "\n") {
		code, _, _ := strings.Cut(line, "#")
		code = strings.TrimSpace(code)
		if !long.MatchString(code) {
			continue
		}
		if !strings.HasPrefix(code, "phase ") && !strings.Contains(code, " phase ") {
			t.Errorf(".ci/run:%d: %q does not run through phase, so its duration is not printed", i+1, code)
		}
	}
}

//go:build unix

package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/results"
)

// sampledStore is a module whose lab/r holds a one-off run, then an
// invocation of 45 rounds, with results.MaxRounds lowered to 20 for the
// test: a diff compares 20 of those rounds. It returns the module and the
// one-off run's id.
func sampledStore(t *testing.T) (string, string) {
	t.Helper()
	old := results.MaxRounds
	t.Cleanup(func() { results.MaxRounds = old })
	results.MaxRounds = 20
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "cue.mod"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "cue.mod", "module.cue"), []byte("module: \"example.com/s@v0\"\nlanguage: version: \"v0.17.0\"\n"), 0o644)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	prev := writeRounds(t, dir, "lab/r", "", 1, t0, 0, 50)
	writeRounds(t, dir, "lab/r", "20260101T010000Z-inv", 45, t0.Add(time.Hour), 100, 51)
	return dir, prev[0]
}

const sampledWarning = "point lab/r: its latest invocation 20260101T010000Z-inv has 45 rounds; 20 of them, evenly spaced in time and the latest included, are compared"

// TestDiff_sampledRoundsInEveryFormat: a diff of an invocation of more
// rounds than results.MaxRounds compares a sample of them, and every
// format says so, once: among the text's and markdown's warnings, in
// --json's "warnings" (kind "sampled"), on the HTML page, and for CSV
// (tables only) on stderr with the other warnings (issue 25: one
// comparison everywhere; the warning went only to stderr, so a JSON, HTML
// or markdown file of the diff did not carry it).
func TestDiff_sampledRoundsInEveryFormat(t *testing.T) {
	dir, prev := sampledStore(t)
	want := "lab/r: " + sampledWarning
	for _, format := range []string{"text", "markdown", "json", "html", "csv"} {
		stdout, stderr, code := runCLI(t, "-C", dir, "diff", prev, "lab/r", "--format", format, "--color", "never")
		if code != 0 {
			t.Fatalf("rigor diff --format %s: exit %d\n%s%s", format, code, stdout, stderr)
		}
		out, other := stdout, stderr
		switch format {
		case "csv":
			out, other = stderr, stdout
		case "text":
			out = strings.ReplaceAll(stdout, "\n    ", " ") // lines wrapped at 100
		}
		if n := strings.Count(out, sampledWarning); n != 1 {
			t.Errorf("--format %s: the sampled rounds are said %d times, want once:\nstdout:\n%s\nstderr:\n%s", format, n, stdout, stderr)
		}
		if strings.Contains(other, sampledWarning) {
			t.Errorf("--format %s: the sampled rounds are said on the other stream too:\n%s", format, other)
		}
		switch format {
		case "text":
			if !strings.Contains(stdout, "Warnings:\n  "+want[:60]) {
				t.Errorf("--format text: the sampled rounds are not among the warnings:\n%s", stdout)
			}
		case "markdown":
			if !strings.Contains(stdout, "- "+want) {
				t.Errorf("--format markdown: no warning %q:\n%s", want, stdout)
			}
		case "json":
			var rep struct {
				B        struct{ Runs int }
				Warnings []struct{ Kind, Message string }
			}
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatal(err)
			}
			found := false
			for _, w := range rep.Warnings {
				found = found || (w.Kind == "sampled" && w.Message == want)
			}
			if !found {
				t.Errorf("--format json: warnings %+v, want {sampled %q}", rep.Warnings, want)
			}
			if rep.B.Runs != 20 {
				t.Errorf("--format json: side B compares %d runs, want the 20 sampled", rep.B.Runs)
			}
		case "html":
			if !strings.Contains(stdout, "<li>"+want+"</li>") {
				t.Errorf("--format html: the page does not warn %q", want)
			}
		case "csv":
			if !strings.Contains(stderr, "rigor: warning: "+want+"\n") {
				t.Errorf("--format csv: stderr does not warn %q:\n%s", want, stderr)
			}
		}
	}
}

// TestDiffAtRevision_boundedRounds: `rigor diff EXP@REV EXP` of an
// invocation of more rounds than results.MaxRounds compares at the
// revision the sample it compares in the working tree, decodes only those
// records whole (each record of the experiment at the revision is read
// once, to choose), and says so for both sides (issue 30: the side at a
// revision decoded and compared every round).
func TestDiffAtRevision_boundedRounds(t *testing.T) {
	dir, _ := sampledStore(t)
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "runs"},
	} {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	r0 := results.Reads()
	stdout, stderr, code := runCLI(t, "-C", dir, "diff", "lab/r@HEAD", "lab/r", "--format", "json")
	if code != 0 {
		t.Fatalf("rigor diff: exit %d\n%s%s", code, stdout, stderr)
	}
	r1 := results.Reads()
	var rep struct {
		A, B     struct{ Runs int }
		Warnings []struct{ Kind, Message string }
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.A.Runs != 20 || rep.B.Runs != 20 {
		t.Errorf("the sides compare %d runs (at HEAD) and %d (working tree), want the 20 sampled of 45 on each", rep.A.Runs, rep.B.Runs)
	}
	var said []string
	for _, w := range rep.Warnings {
		if w.Kind == "sampled" {
			said = append(said, w.Message)
		}
	}
	want := []string{"lab/r@HEAD: " + sampledWarning, "lab/r: " + sampledWarning}
	if strings.Join(said, "\n") != strings.Join(want, "\n") {
		t.Errorf("sampled warnings:\n%s\nwant:\n%s", strings.Join(said, "\n"), strings.Join(want, "\n"))
	}
	if strings.Contains(stderr, sampledWarning) {
		t.Errorf("the sampled rounds are said on stderr too:\n%s", stderr)
	}
	if n := r1.RevisionRuns - r0.RevisionRuns; n != 20 {
		t.Errorf("decoded %d records whole at HEAD, want the 20 compared", n)
	}
	if n := r1.RevisionRecords - r0.RevisionRecords; n != 46+20 {
		t.Errorf("read %d records at HEAD, want each of the 46 once to choose and the 20 compared again", n)
	}
}

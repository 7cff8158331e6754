package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestPrintRunWarnings: one short line per point and kind, the whole
// text with --explain (issue 31: ~600-character warnings buried the
// four-line result).
func TestPrintRunWarnings(t *testing.T) {
	long := func(metric, counter string) string {
		return metric + ": the engine's own counter (" + counter + ") is 1.26× rigor's wall-clock figure, more than the 1.25× they should agree within: 4.43 ms of each repetition's 25.8 ms went outside llama_decode; the runner's threads waited 31.0 ms in all for a CPU"
	}
	ws := []runWarning{
		busyWarning("x/a", "other processes took 1.8 of 2 cores while the engine ran (load 29.4)"),
		engineWarning("x/a", long("tokSPrompt pp32", "engineTokSPrompt")),
		engineWarning("x/a", long("tokSOut tg16", "engineTokSOut")),
	}
	var out bytes.Buffer
	printRunWarnings(&env{stderr: &out}, ws, false)
	want := "rigor: warning: x/a: busy machine: other processes took 1.8 of 2 cores (see the record)\n" +
		"rigor: warning: x/a: tokSPrompt pp32: the engine's own counter (engineTokSPrompt) is 1.26× rigor's wall-clock figure… (and 1 more like it)\n" +
		"rigor: hint: each record holds its warnings in full ('warnings' in its JSON); --explain prints them here\n"
	if out.String() != want {
		t.Errorf("short:\n%s\nwant:\n%s", out.String(), want)
	}
	out.Reset()
	printRunWarnings(&env{stderr: &out}, ws, true)
	if n := strings.Count(out.String(), "rigor: warning: "); n != 3 || !strings.Contains(out.String(), "waited 31.0 ms") {
		t.Errorf("--explain: %d warnings, want 3 whole:\n%s", n, out.String())
	}
}

package text

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/compare"
	"github.com/rigorbench/rigor/internal/compare/comparetest"
	"github.com/rigorbench/rigor/internal/results"
)

func TestWriteText_color(t *testing.T) {
	a := comparetest.RoundRuns("x/a", "inv1", 100, comparetest.BusyRounds)
	b := comparetest.RoundRuns("x/b", "inv1", 103, comparetest.BusyRounds)
	rep, _ := compare.Compare(compare.Side{Label: "a", Runs: a}, compare.Side{Label: "b", Runs: b}, compare.Options{})
	var plain, color strings.Builder
	WriteTextOptions(&plain, rep, TextOptions{})
	WriteTextOptions(&color, rep, TextOptions{Color: true})
	if strings.Contains(plain.String(), "\x1b[") {
		t.Errorf("plain text has escapes:\n%q", plain.String())
	}
	if !strings.Contains(color.String(), "\x1b[32mbetter\x1b[0m") {
		t.Errorf("colour text lacks a green better:\n%q", color.String())
	}
	if strings.ReplaceAll(strings.ReplaceAll(color.String(), "\x1b[32m", ""), "\x1b[0m", "") != plain.String() {
		t.Errorf("colour changed more than the verdict")
	}
	rev, _ := compare.Compare(compare.Side{Label: "b", Runs: b}, compare.Side{Label: "a", Runs: a}, compare.Options{})
	color.Reset()
	WriteTextOptions(&color, rev, TextOptions{Color: true})
	if !strings.Contains(color.String(), "\x1b[31mworse\x1b[0m") {
		t.Errorf("colour text lacks a red worse:\n%q", color.String())
	}
}

// TestLog_pointOrder: the runs of a shuffled round are listed in the
// order they ran (a log is a time series: its dates never go back), each
// with its round; an imported sweep whose records share a start time is
// listed by value, not by the records' ids.
func TestLog_pointOrder(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	mk := func(id string, ub int, start time.Time, inv string, round int) results.Run {
		return results.Run{ID: id, Experiment: "x/s", Point: fmt.Sprintf("x/s[ub=%d]", ub), Swept: map[string]any{"flags.ub": ub},
			Status: "ok", Start: start, Invocation: inv, Round: round,
			Metrics: []results.Metric{{Name: "tokSOut", Unit: "tok/s", Samples: []float64{1, 2}}}}
	}
	runs := []results.Run{
		// round 1 ran 64, 16, 32; round 2 ran 32, 64, 16
		mk("r1a", 64, t0, "inv", 1), mk("r1b", 16, t0.Add(time.Minute), "inv", 1), mk("r1c", 32, t0.Add(2*time.Minute), "inv", 1),
		mk("r2a", 32, t0.Add(3*time.Minute), "inv", 2), mk("r2b", 64, t0.Add(4*time.Minute), "inv", 2), mk("r2c", 16, t0.Add(5*time.Minute), "inv", 2),
		// an imported sweep: one start time, ids in no useful order
		mk("imp-a", 128, t0.Add(time.Hour), "", 0), mk("imp-b", 8, t0.Add(time.Hour), "", 0), mk("imp-c", 16, t0.Add(time.Hour), "", 0),
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(runs), func(i, j int) { runs[i], runs[j] = runs[j], runs[i] })
	h := compare.Log(runs)
	var got []string
	for _, e := range h.Entries {
		got = append(got, fmt.Sprintf("%s@%d/%d", e.Point, e.Round, e.Rounds))
	}
	want := []string{"ub=64@1/2", "ub=16@1/2", "ub=32@1/2", "ub=32@2/2", "ub=64@2/2", "ub=16@2/2", "ub=8@0/0", "ub=16@0/0", "ub=128@0/0"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("log order %v, want %v", got, want)
	}
	for i := 1; i < len(h.Entries); i++ {
		if h.Entries[i].Start.Before(h.Entries[i-1].Start) {
			t.Errorf("entry %d (%s) starts before entry %d (%s)", i, h.Entries[i].Start, i-1, h.Entries[i-1].Start)
		}
	}
	// The text says the round beside each run of one, in the order run.
	var b strings.Builder
	if err := WriteLogText(&b, h, 0); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, line := range []string{
		`2026-12-03 08:00  r1a    ub=64   1/2 `,
		`2026-12-03 08:01  r1b    ub=16   1/2 `,
		`2026-12-03 08:03  r2a    ub=32   2/2 `,
		`2026-12-03 09:00  imp-b  ub=8        `,
	} {
		if !strings.Contains(text, line) {
			t.Errorf("log text has no line with %q:\n%s", line, text)
		}
	}
	if !regexp.MustCompile(`point +round +rig`).MatchString(text) {
		t.Errorf("log text has no round column:\n%s", text)
	}
	// And the JSON says it too.
	b.Reset()
	if err := WriteLogJSON(&b, h); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"round": 2,`) || !strings.Contains(b.String(), `"rounds": 2,`) {
		t.Errorf("log --json has no round:\n%s", b.String())
	}
}

package compare

import (
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/hoststate"
	"github.com/rigorbench/rigor/internal/results"
)

// roundRuns builds one side's runs of one invocation: round i runs at
// center·load[i], its repetitions spread by ±0.2%.
func roundRuns(exp, inv string, center float64, load []float64) []results.Run {
	var runs []results.Run
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i, f := range load {
		c := center * f
		runs = append(runs, results.Run{ID: fmt.Sprintf("%s-%d", exp, i), Experiment: exp, Point: exp, Status: "ok",
			Invocation: inv, Round: i + 1, Start: start.Add(time.Duration(i) * time.Minute),
			Metrics: []results.Metric{{Name: "tokSOut", Test: "tg64", Unit: "tok/s", Direction: "higher",
				Samples: []float64{c * 0.998, c, c * 1.002}}}})
	}
	return runs
}

// A busy machine: the load changes from round to round and halves the
// throughput of both sides alike.
var busyRounds = []float64{1.0, 0.55, 0.95, 0.6, 1.0}

func TestCompare_pairedRounds(t *testing.T) {
	a := roundRuns("x/a", "inv1", 100, busyRounds)
	b := roundRuns("x/b", "inv1", 103, busyRounds)
	rep, err := Compare(Side{"a", a}, Side{"b", b}, Options{Detect: 2})
	if err != nil {
		t.Fatal(err)
	}
	row := rep.Tables[0].Rows[0]
	if row.SampleUnit != UnitRuns || row.Test != DecidePairedT || row.Pairs != 5 || row.A.N != 5 || row.A.Reps != 15 {
		t.Fatalf("row: unit %s test %s pairs %d n %d reps %d; want runs, paired-t-log, 5, 5, 15", row.SampleUnit, row.Test, row.Pairs, row.A.N, row.A.Reps)
	}
	// Every round is exactly 3% better: no spread of the ratios at all
	// but for rounding, so the paired test sees it at once.
	if row.Verdict != Better || !(row.P < 0.001) || !near(row.SignFlipP, 2.0/32, 1e-12) {
		t.Errorf("verdict %q p %g sign-flip p %g; want better, p < 0.001, 2/32", row.Verdict, row.P, row.SignFlipP)
	}
	// The same runs unpaired: the load swamps the 3%.
	for i := range b {
		b[i].Invocation = "inv2"
	}
	rep2, err := Compare(Side{"a", a}, Side{"b", b}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	row2 := rep2.Tables[0].Rows[0]
	if row2.Test != "" || row2.Verdict != Untested || !math.IsNaN(row2.P) {
		t.Errorf("unpaired: test %s verdict %q p %g; want untested, no test", row2.Test, row2.Verdict, row2.P)
	}
	text := renderText(t, rep2)
	for _, want := range []string{
		"untested: A and B ran in separate invocations and there is no estimate of the noise between invocations",
		"'rigor run x/a x/b --rounds 5' runs A and B interleaved in one invocation and gives a verdict",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("unpaired text lacks %q:\n%s", want, text)
		}
	}
	text = renderText(t, rep)
	for _, want := range []string{
		"paired rounds: runs of A and B that ran in the same round of one invocation are compared as pairs",
		"tokSOut tg64: to detect a change of 2.0%: ~2 paired rounds (now 5)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("paired text lacks %q:\n%s", want, text)
		}
	}
}

// TestCompare_pairedExtraRuns: runs of another invocation on one side
// count in its mean but not in the pairs, and the note says so.
func TestCompare_pairedExtraRuns(t *testing.T) {
	a := append(roundRuns("x/a", "inv1", 100, busyRounds), roundRuns("x/a", "inv0", 100, []float64{1, 1})...)
	b := roundRuns("x/b", "inv1", 103, busyRounds)
	rep, err := Compare(Side{"a", a}, Side{"b", b}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	row := rep.Tables[0].Rows[0]
	if row.Test != DecidePairedT || row.Pairs != 5 || row.A.N != 7 || row.B.N != 5 {
		t.Errorf("test %s pairs %d n %d/%d; want paired, 5 pairs, 7/5 runs", row.Test, row.Pairs, row.A.N, row.B.N)
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "runs without a partner in the same round (up to 2 of A's, 0 of B's per point) count in the means but not in the test") {
		t.Errorf("notes %q lack the runs left out of the pairs", rep.Notes)
	}
}

// TestCompare_pairedNoise: A against A on the busy machine with noise in
// the ratios: the paired test says "~" and states what it could detect.
func TestCompare_pairedAvsA(t *testing.T) {
	a := roundRuns("x/a", "inv1", 100, busyRounds)
	noise := []float64{1.004, 0.997, 1.001, 0.995, 1.003}
	b := roundRuns("x/a", "inv1", 100, busyRounds)
	for i := range b {
		for j := range b[i].Metrics[0].Samples {
			b[i].Metrics[0].Samples[j] *= noise[i]
		}
	}
	rep, err := Compare(Side{"a", a}, Side{"b", b}, Options{Detect: 2})
	if err != nil {
		t.Fatal(err)
	}
	row := rep.Tables[0].Rows[0]
	if row.Test != DecidePairedT || row.Verdict != Inconclusive || math.IsNaN(row.MDE) || row.MDE > 2 || row.DetectN == 0 || row.DetectN > 5 {
		t.Errorf("A vs A: test %s verdict %q MDE %g detect %d; want paired, ~, an MDE under 2%%, at most 5 rounds for 2%%", row.Test, row.Verdict, row.MDE, row.DetectN)
	}
	if text := renderText(t, rep); !strings.Contains(text, "with 5 paired rounds, changes under ±") {
		t.Errorf("text lacks the paired MDE:\n%s", text)
	}
}

func TestCompare_outliersAndWarmup(t *testing.T) {
	a := roundRuns("x/a", "inv1", 100, []float64{1, 1.001, 0.999, 1.0005, 0.7})
	b := roundRuns("x/b", "inv2", 100, []float64{1, 1.001, 0.999, 1.0005, 0.9995})
	// a warm-up: the first repetition of B's first run is slow
	b[0].Metrics[0].Samples = []float64{60, 100, 100.2, 99.9, 100.1}
	rep, err := Compare(Side{"a", a}, Side{"b", b}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	row := rep.Tables[0].Rows[0]
	if len(row.A.Outliers) != 1 || !near(row.A.Outliers[0], 70, 1e-9) || len(row.B.Outliers) != 1 || row.B.WarmupRuns != 1 {
		t.Errorf("outliers A %v B %v, warm-up runs B %d; want [70], B's first run's mean, 1", row.A.Outliers, row.B.Outliers, row.B.WarmupRuns)
	}
	if row.A.N != 5 {
		t.Errorf("n = %d: outliers must stay in the samples", row.A.N)
	}
	// A's first run is the slow one: a warm-up of the first process. (B's
	// first run is slow too, by its slow first repetition.)
	a2 := roundRuns("x/a", "inv1", 100, []float64{0.7, 1, 1.001, 0.999, 1.0005})
	rep2, _ := Compare(Side{"a", a2}, Side{"b", b}, Options{})
	if r := rep2.Tables[0].Rows[0]; !r.A.WarmupFirstRun || !r.B.WarmupFirstRun || row.A.WarmupFirstRun {
		t.Errorf("first run slow: WarmupFirstRun A %v B %v (A's last run slow: %v), want true, true, false", r.A.WarmupFirstRun, r.B.WarmupFirstRun, row.A.WarmupFirstRun)
	}
	if text := renderText(t, rep2); !strings.Contains(text, "tokSOut tg64: a: the first of 5 runs is a slow outlier, a warm-up effect") {
		t.Errorf("text lacks the first-run warm-up:\n%s", text)
	}
	text := renderText(t, rep)
	for _, want := range []string{
		"tokSOut tg64: a: 1 sample of 5 runs beyond hyperfine's outlier bound (modified z-score over 14.826): 70.00; kept in the test",
		"tokSOut tg64: b: the first repetition of 1 of 5 runs is a slow outlier, a warm-up effect",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
}

func TestCompare_machineStates(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	quiet := &hoststate.State{Cores: 2, OtherCores: f(0.02), Before: &hoststate.Sample{Load1: 0.3}, Peak: &hoststate.Sample{Load1: 0.3}}
	busy := &hoststate.State{Cores: 2, OtherCores: f(1.7), Before: &hoststate.Sample{Load1: 4}, Peak: &hoststate.Sample{Load1: 9.8}}
	a := roundRuns("x/a", "inv1", 100, []float64{1, 1})
	b := roundRuns("x/a", "inv2", 100, []float64{0.6, 0.7})
	for i := range a {
		a[i].Machine, b[i].Machine = quiet, busy
	}
	rep, err := Compare(Side{"a", a}, Side{"b", b}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	text := renderText(t, rep)
	for _, want := range []string{
		"b: 2 of 2 runs ran on a busy machine (other processes took 1.7 of 2 cores while the engine ran (load 9.8))",
		"A and B ran under different machine states: load 0.3 vs 9.8 on 2 cores; other processes took 0.0 vs 1.7 cores while the engine ran",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	// Records without a machine state (imports, older records) say nothing.
	for i := range b {
		b[i].Machine = nil
	}
	rep, _ = Compare(Side{"a", a}, Side{"b", b}, Options{})
	for _, w := range rep.Warnings {
		if w.Kind == WarnMachine {
			t.Errorf("machine warning without B's state: %v", w)
		}
	}
}

func TestWriteText_color(t *testing.T) {
	a := roundRuns("x/a", "inv1", 100, busyRounds)
	b := roundRuns("x/b", "inv1", 103, busyRounds)
	rep, _ := Compare(Side{"a", a}, Side{"b", b}, Options{})
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
	rev, _ := Compare(Side{"b", b}, Side{"a", a}, Options{})
	color.Reset()
	WriteTextOptions(&color, rev, TextOptions{Color: true})
	if !strings.Contains(color.String(), "\x1b[31mworse\x1b[0m") {
		t.Errorf("colour text lacks a red worse:\n%q", color.String())
	}
}

func renderText(t *testing.T, rep *Report) string {
	t.Helper()
	var b strings.Builder
	if err := WriteText(&b, rep, 0); err != nil {
		t.Fatal(err)
	}
	return b.String()
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
	h := Log(runs)
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

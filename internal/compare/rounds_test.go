package compare

import (
	"math"
	"strings"
	"testing"

	"github.com/rigorbench/rigor/internal/hoststate"
)

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
	text := reportText(t, rep2)
	for _, want := range []string{
		"untested: A and B ran in separate invocations and there is no estimate of the noise between invocations",
		"'rigor run x/a x/b --rounds 5' runs A and B interleaved in one invocation and gives a verdict",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("unpaired text lacks %q:\n%s", want, text)
		}
	}
	text = reportText(t, rep)
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
	if text := reportText(t, rep); !strings.Contains(text, "with 5 paired rounds, changes under ±") {
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
	if text := reportText(t, rep2); !strings.Contains(text, "tokSOut tg64: a: the first of 5 runs is a slow outlier, a warm-up effect") {
		t.Errorf("text lacks the first-run warm-up:\n%s", text)
	}
	text := reportText(t, rep)
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
	text := reportText(t, rep)
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

// reportText is what a report says in words: the untested line, the notes
// on the samples and the warnings, one a line, as every renderer shows
// them (internal/report/text).
func reportText(t *testing.T, rep *Report) string {
	t.Helper()
	lines := append([]string{rep.Untested}, rep.Notes...)
	for _, w := range rep.Warnings {
		lines = append(lines, w.Error())
	}
	return strings.Join(lines, "\n")
}

package compare

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/compare/stats"
	"github.com/rigorbench/rigor/internal/hoststate"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/rig"
)

func TestCompare_sweep(t *testing.T) {
	a, b := sweepSides()
	rep, err := Compare(a, b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.OnlyA, []string{"ub=128"}) || !slices.Equal(rep.OnlyB, []string{"ub=8"}) {
		t.Errorf("only A %v, only B %v; want [ub=128] and [ub=8]", rep.OnlyA, rep.OnlyB)
	}
	verdicts := map[string][]Verdict{}
	for _, tb := range rep.Tables {
		var pts []string
		for _, r := range tb.Rows {
			pts = append(pts, r.Point)
			verdicts[tb.Metric] = append(verdicts[tb.Metric], r.Verdict)
			// Two runs a side: the runs are the samples (their means); from
			// separate invocations without history nothing is tested.
			if r.A.N != 2 || r.B.N != 2 || r.A.Runs != 2 || r.B.Runs != 2 || r.A.Reps != 10 || r.SampleUnit != UnitRuns || r.Test != "" {
				t.Errorf("%s %s: n %d/%d from %d/%d runs (%d repetitions), unit %s, test %s; want 2/2 from 2/2 (10), runs, untested",
					tb.Metric, r.Point, r.A.N, r.B.N, r.A.Runs, r.B.Runs, r.A.Reps, r.SampleUnit, r.Test)
			}
		}
		if !slices.Equal(pts, []string{"ub=16", "ub=32", "ub=64"}) {
			t.Errorf("%s: points %v, want ub=16, ub=32, ub=64 in numeric order", tb.Metric, pts)
		}
		if tb.Geomean == nil {
			t.Errorf("%s: no geomean row", tb.Metric)
		}
	}
	want := map[string][]Verdict{
		"tokSOut tg128":    {Untested, Untested, Untested},
		"ttftMs":           {Untested, Untested, Untested},
		"tokSPrompt pp512": {Untested, Untested, Untested},
	}
	for k, v := range want {
		if !slices.Equal(verdicts[k], v) {
			t.Errorf("%s verdicts %v, want %v", k, verdicts[k], v)
		}
	}
	// Holm: three comparisons per table; adjusted p ≥ raw p.
	for _, tb := range rep.Tables {
		for _, r := range tb.Rows {
			if r.PAdjusted < r.P {
				t.Errorf("%s %s: adjusted p %g < raw p %g", tb.Metric, r.Point, r.PAdjusted, r.P)
			}
		}
	}
	if reg := rep.Regressions(5); len(reg) != 0 {
		t.Errorf("Regressions(5) = %+v, want none: nothing was tested", reg)
	}
	if reg := rep.Regressions(10); len(reg) != 0 {
		t.Errorf("Regressions(10) = %+v, want none (the loss is 6%%)", reg)
	}
	// The guard: the driver differs.
	if len(rep.Mismatches) != 1 || rep.Mismatches[0].Field != "driver" {
		t.Errorf("mismatches = %+v, want the driver", rep.Mismatches)
	}
	kinds := map[WarningKind]int{}
	for _, w := range rep.Warnings {
		kinds[w.Kind]++
	}
	for _, k := range []WarningKind{WarnStatus, WarnIncomparable, WarnMixed} {
		if kinds[k] == 0 {
			t.Errorf("no %s warning in %v", k, rep.Warnings)
		}
	}
	if rep.B.Runs != 9 || rep.B.Used != 8 {
		t.Errorf("B runs %d used %d, want 9 and 8 (one failed)", rep.B.Runs, rep.B.Used)
	}
}

func TestCompare_strict(t *testing.T) {
	a, b := sweepSides()
	rep, err := Compare(a, b, Options{Strict: true})
	var ie *IncomparableError
	if !errors.Is(err, ErrIncomparable) || !errors.As(err, &ie) || rep == nil {
		t.Fatalf("Compare strict = %v, %v; want the report and an *IncomparableError", rep, err)
	}
	if !strings.Contains(err.Error(), `GPU driver 570.133.07 → 575.51.03`) {
		t.Errorf("error %q does not name the driver", err)
	}
	sa, sb := seedSides(t)
	if _, err := Compare(sa, sb, Options{Strict: true}); err != nil {
		t.Errorf("seed sides under strict: %v, want no error", err)
	}
}

func TestCompare_guard(t *testing.T) {
	base := func() results.Run {
		return results.Run{ID: "r", Experiment: "x", Status: "ok",
			Spec:  json.RawMessage(`{"model":{"quant":"Q4_K_M"},"flags":{"ngl":99}}`),
			Model: results.Model{Files: []results.File{{Path: "m.gguf", SHA256: strings.Repeat("a", 64)}}},
			Rig: &rig.Rig{AcceleratorModelName: "NVIDIA GeForce RTX 4090", AcceleratorsPerNode: 1,
				AcceleratorDriverVersion: "575.51.03"},
			Metrics: []results.Metric{{Name: "tokSOut", Unit: "tok/s", Direction: "higher", Samples: []float64{1, 2, 3}}},
		}
	}
	check := func(name string, mod func(*results.Run), fields ...string) {
		t.Helper()
		ra, rb := base(), base()
		mod(&rb)
		rep, err := Compare(Side{"a", []results.Run{ra}}, Side{"b", []results.Run{rb}}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range rep.Mismatches {
			got = append(got, m.Field)
		}
		if !slices.Equal(got, fields) {
			t.Errorf("%s: mismatches %v, want %v", name, got, fields)
		}
	}
	check("same", func(r *results.Run) {})
	check("gpu", func(r *results.Run) { r.Rig.AcceleratorModelName = "NVIDIA GeForce RTX 3090" }, "gpu")
	check("gpu count", func(r *results.Run) { r.Rig.AcceleratorsPerNode = 2 }, "gpuCount")
	check("model hash", func(r *results.Run) { r.Model.Files[0].SHA256 = strings.Repeat("b", 64) }, "modelSHA256")
	check("spec quant", func(r *results.Run) {
		r.Spec = json.RawMessage(`{"model":{"quant":"Q8_0"},"flags":{"ngl":99}}`)
	}, "quant")
	check("record quant", func(r *results.Run) { r.Model.Quant = "Q8_0" }, "quant")
	check("flags only", func(r *results.Run) {
		r.Spec = json.RawMessage(`{"model":{"quant":"Q4_K_M"},"flags":{"ngl":50}}`)
	})
	// A rerun whose engine and model files came from the archive (or the
	// cache) is the same run: where the bytes came from is no difference,
	// in the guard or in the configuration diff (issue 26).
	check("from the archive", func(r *results.Run) {
		r.Engine.From = "archive"
		r.Model.Files[0].From = "archive"
	})
	ra, rb := base(), base()
	ra.Engine.From, ra.Model.Files[0].From = "upstream", "cache"
	rb.Engine.From, rb.Model.Files[0].From = "archive", "archive"
	if rep, err := Compare(Side{"a", []results.Run{ra}}, Side{"b", []results.Run{rb}}, Options{Strict: true}); err != nil || len(rep.Config) != 0 {
		t.Errorf("from the archive: %v, config diff %v; want comparable with no changes", err, rep.Config)
	}
	// What the engine said of the binary that ran: another flavour or
	// other CPU features is a difference; the devices and backends it
	// names are not (the rig and the backend field say those).
	prebuilt := func() *results.Build {
		return &results.Build{Flavour: "prebuilt", CPUFeatures: []string{"AVX2", "FMA"}, Backends: "CPU", CPU: "AMD EPYC"}
	}
	withBuild := func(b *results.Build) func(*results.Run) {
		return func(r *results.Run) { r.Engine.Build = b }
	}
	check("build recorded on one side", withBuild(prebuilt()), "build")
	mod := func(f func(*results.Build)) *results.Build { b := prebuilt(); f(b); return b }
	checkBuild := func(name string, b *results.Build, fields ...string) {
		t.Helper()
		ra, rb := base(), base()
		ra.Engine.Build, rb.Engine.Build = prebuilt(), b
		rep, err := Compare(Side{"a", []results.Run{ra}}, Side{"b", []results.Run{rb}}, Options{Strict: true})
		var got []string
		for _, m := range rep.Mismatches {
			got = append(got, m.Field)
		}
		if !slices.Equal(got, fields) || (err != nil) != (len(fields) > 0) {
			t.Errorf("%s: mismatches %v, strict error %v; want %v", name, got, err, fields)
		}
	}
	checkBuild("same build", prebuilt())
	checkBuild("same build, other device name", mod(func(b *results.Build) { b.CPU = "AMD EPYC 9654"; b.SystemInfo = "x" }))
	checkBuild("local build", mod(func(b *results.Build) { b.Flavour = "localBuild" }), "build")
	checkBuild("other CPU features", mod(func(b *results.Build) { b.CPUFeatures = []string{"AVX512"} }), "build")
	ra, rb = base(), base()
	ra.Engine.Build = prebuilt()
	rb.Engine.Build = &results.Build{Flavour: "localBuild", CPUFeatures: []string{"AVX512"}}
	_, err := Compare(Side{"a", []results.Run{ra}}, Side{"b", []results.Run{rb}}, Options{Strict: true})
	if want := "sides are not comparable: engine build flavour prebuilt (AVX2 FMA) → localBuild (AVX512)"; err == nil || err.Error() != want {
		t.Errorf("strict error %v, want %q", err, want)
	}
	// A GPU power limit: a capped GPU is slower by design (issue 32).
	capped := func(w float64) func(*results.Run) {
		return func(r *results.Run) {
			r.Machine = &hoststate.State{Energy: &hoststate.Energy{Domains: []hoststate.PowerDomain{
				{Name: "gpu0", Kind: "gpu", Method: hoststate.MethodCounter, PowerLimitW: 450, EnforcedPowerLimitW: 450},
				{Name: "gpu1", Kind: "gpu", Method: hoststate.MethodCounter, PowerLimitW: w, EnforcedPowerLimitW: w}}}}
		}
	}
	check("power limit recorded on one side", capped(300), "powerLimit")
	ra, rb = base(), base()
	capped(450)(&ra)
	capped(300)(&rb)
	_, err = Compare(Side{"a", []results.Run{ra}}, Side{"b", []results.Run{rb}}, Options{Strict: true})
	if want := "sides are not comparable: GPU power limit gpu0=450 W, gpu1=450 W → gpu0=450 W, gpu1=300 W"; err == nil || err.Error() != want {
		t.Errorf("strict error %v, want %q", err, want)
	}
	// Within one side: two GPUs pooled on B.
	ra, rb1, rb2 := base(), base(), base()
	rb2.Rig = &rig.Rig{AcceleratorModelName: "NVIDIA GeForce RTX 3090", AcceleratorsPerNode: 1, AcceleratorDriverVersion: "575.51.03"}
	rep, _ := Compare(Side{"a", []results.Run{ra}}, Side{"b", []results.Run{rb1, rb2}}, Options{})
	if len(rep.Mismatches) != 1 || len(rep.Mismatches[0].B) != 2 {
		t.Errorf("pooled GPUs: mismatches %+v, want gpu with two B values", rep.Mismatches)
	}
}

func TestConfigDiff(t *testing.T) {
	run := func(spec string) results.Run {
		return results.Run{ID: "r", Status: "ok", Spec: json.RawMessage(spec)}
	}
	// The documentation fields (description, notes, labels, tags) differ
	// too and must not be listed.
	a := run(`{"description":"baseline","labels":["a"],"flags":{"nkvo":1,"ub":32},"env":{},"extraArgs":["-no-mmad","0"],"model":{"files":["a.gguf"]},"ot":[{"re":"exps","dev":"CPU"}]}`)
	b := run(`{"description":"offload","notes":"n","tags":["x"],"flags":{"nkvo":0,"ub":32.0},"env":{"FOO":"1","A B":"x"},"extraArgs":["-no-mmad","1"],"model":{"files":["a.gguf"]},"ot":[{"re":"exps","dev":"SYCL0"}]}`)
	rep, err := Compare(Side{"a", []results.Run{a}}, Side{"b", []results.Run{b}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range rep.Config {
		got = append(got, c.String())
	}
	// An empty env on one side is no change: only the variables set are.
	want := []string{
		`env."A B": (absent) → "x"`,
		`env.FOO: (absent) → "1"`,
		`extraArgs: ["-no-mmad","0"] → ["-no-mmad","1"]`,
		`flags.nkvo: 1 → 0`,
		`ot[0].dev: "CPU" → "SYCL0"`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("config diff:\n got %q\nwant %q", got, want)
	}

	// Empty on one side and absent on the other, in every shape: nothing.
	c := run(`{"flags":{"nkvo":1},"env":{},"extraArgs":[],"passEnv":null}`)
	d := run(`{"flags":{"nkvo":1}}`)
	if rep, err := Compare(Side{"c", []results.Run{c}}, Side{"d", []results.Run{d}}, Options{}); err != nil || len(rep.Config) != 0 {
		t.Errorf("empty against absent: %v, %v; want no changes", rep.Config, err)
	}
}

func TestCompare_medianAndLowerIsBetter(t *testing.T) {
	mk := func(vals ...float64) results.Run {
		return results.Run{ID: "r", Status: "ok", Metrics: []results.Metric{
			{Name: "ttftMs", Unit: "ms", Samples: vals}, // no direction: inferred "lower"
		}}
	}
	a := mk(100, 101, 102, 103, 104, 105, 106)
	b := mk(90, 91, 92, 93, 94, 95, 96)
	rep, err := Compare(Side{"a", []results.Run{a}}, Side{"b", []results.Run{b}}, Options{Center: CenterMedian})
	if err != nil {
		t.Fatal(err)
	}
	row := rep.Tables[0].Rows[0]
	// n = 7: [x(1), x(7)] covers 1 - 2/128 = 0.984; [x(2), x(6)] only
	// 1 - 2·8/128 = 0.875, so the 95% interval is [min, max].
	if row.A.Center != 103 || row.A.Low != 100 || row.A.High != 106 || !near(row.A.Confidence, 0.984375, 1e-12) {
		t.Errorf("median summary %+v, want 103 in [100, 106] at 0.984375", row.A)
	}
	// 7 vs 7 repetitions of one run a side: however separated, untested.
	if !math.IsNaN(row.P) || row.Verdict != Untested || row.Direction != results.LowerIsBetter {
		t.Errorf("p %g verdict %q direction %q, want no test, untested, lower", row.P, row.Verdict, row.Direction)
	}
}

func TestCompare_holmAcrossPoints(t *testing.T) {
	// Three points and two metrics in paired rounds: the six p-values are
	// one family, corrected together by Holm (issue 25), not per metric.
	var a, b []results.Run
	for ub := 1; ub <= 3; ub++ {
		sw := map[string]any{"flags.ub": ub}
		for k := 1; k <= 4; k++ {
			f := 1 + 0.01*noise[k+ub]
			ms := func(scale float64) []results.Metric {
				return []results.Metric{
					{Name: "tokSOut", Direction: "higher", Samples: []float64{100 * scale * f}},
					{Name: "tokSPrompt", Direction: "higher", Samples: []float64{1000 * scale * f * (1 + 0.01*noise[k])}},
				}
			}
			a = append(a, results.Run{ID: fmt.Sprint("a", ub, k), Status: "ok", Swept: sw, Invocation: "i", Round: k, Metrics: ms(1)})
			b = append(b, results.Run{ID: fmt.Sprint("b", ub, k), Status: "ok", Swept: sw, Invocation: "i", Round: k, Metrics: ms(1 + 0.01*float64(ub)*noise[k])})
		}
	}
	rep, err := Compare(Side{"a", a}, Side{"b", b}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ps []float64
	for _, tb := range rep.Tables {
		for _, r := range tb.Rows {
			if r.Test != DecidePairedT {
				t.Fatalf("%s %s: test %q, want paired", tb.Metric, r.Point, r.Test)
			}
			ps = append(ps, r.P)
		}
	}
	adj := stats.Holm(ps)
	i := 0
	for _, tb := range rep.Tables {
		for _, r := range tb.Rows {
			if !near(r.PAdjusted, adj[i], 1e-12) {
				t.Errorf("%s %s: adjusted p %g, want %g (Holm over all %d rows)", tb.Metric, r.Point, r.PAdjusted, adj[i], len(ps))
			}
			i++
		}
	}
	if len(ps) != 6 || !slices.Contains(rep.Notes, describeFamily(6)) {
		t.Errorf("%d p-values, notes %q; want 6 and the family note", len(ps), rep.Notes)
	}
}

func TestCompare_options(t *testing.T) {
	if _, err := Compare(Side{}, Side{}, Options{Alpha: 2}); err == nil {
		t.Error("alpha 2 accepted")
	}
	if _, err := Compare(Side{}, Side{}, Options{Center: "mode"}); err == nil {
		t.Error("center mode accepted")
	}
	rep, err := Compare(Side{}, Side{}, Options{})
	if err != nil || len(rep.Tables) != 0 {
		t.Errorf("empty sides: %v, %v", rep, err)
	}
}

func TestLog(t *testing.T) {
	h := Log(historyRuns())
	if len(h.Entries) != 8 {
		t.Fatalf("%d entries, want 8", len(h.Entries))
	}
	for i := 1; i < len(h.Entries); i++ {
		if h.Entries[i].Start.Before(h.Entries[i-1].Start) {
			t.Errorf("entries out of order at %d", i)
		}
	}
	drifted := map[int][]string{}
	for i, e := range h.Entries {
		for _, c := range e.Drift {
			drifted[i] = append(drifted[i], c.Path)
		}
	}
	want := map[int][]string{3: {"lock.engine.commit"}, 5: {"rig.driver"}}
	if len(drifted) != len(want) || !slices.Equal(drifted[3], want[3]) || !slices.Equal(drifted[5], want[5]) {
		t.Errorf("drift %v, want %v", drifted, want)
	}
	if h.Entries[4].Status != "failed" || len(h.Entries[4].Metrics) != 0 {
		t.Errorf("entry 4 = %+v, want the failed run", h.Entries[4])
	}
	if h.Chart == nil || h.Chart.Metric != "tokSOut tg64" || len(h.Chart.Series) != 1 ||
		len(h.Chart.Series[0].Values) != 8 || !math.IsNaN(h.Chart.Series[0].Values[4]) {
		t.Errorf("chart %+v, want tokSOut tg64 with 8 values and a gap at the failed run", h.Chart)
	}
	if h.Entries[0].Commit != "0104b15" || h.Entries[0].Rig != "4× Intel Arc Pro B70" {
		t.Errorf("entry 0 commit %q rig %q", h.Entries[0].Commit, h.Entries[0].Rig)
	}
	// A lock digest that changes with nothing recorded to show for it.
	runs := historyRuns()[:2]
	runs[1].LockDigest = "sha256:9999"
	h = Log(runs)
	if d := h.Entries[1].Drift; len(d) != 1 || d[0].Path != "lockDigest" {
		t.Errorf("drift %v, want lockDigest", d)
	}
}

func TestCompare_singlePointsWithDifferentSweeps(t *testing.T) {
	a := results.Run{ID: "a", Status: "ok", Spec: json.RawMessage(`{"flags":{"ub":32}}`),
		Metrics: []results.Metric{{Name: "tokSOut", Samples: []float64{1, 2, 3}}}}
	b := results.Run{ID: "b", Status: "ok", Swept: map[string]any{"flags.ub": 64}, Spec: json.RawMessage(`{"flags":{"ub":64}}`),
		Metrics: []results.Metric{{Name: "tokSOut", Samples: []float64{1, 2, 3}}}}
	rep, err := Compare(Side{"a", []results.Run{a}}, Side{"b", []results.Run{b}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Tables) != 1 || rep.Tables[0].Rows[0].Point != "(no sweep) vs ub=64" {
		t.Errorf("tables %+v, want one row labelled (no sweep) vs ub=64", rep.Tables)
	}
	if len(rep.Config) != 1 || rep.Config[0].String() != "flags.ub: 32 → 64" {
		t.Errorf("config %v, want flags.ub: 32 → 64", rep.Config)
	}
}

func near(got, want, tol float64) bool {
	if math.IsNaN(want) {
		return math.IsNaN(got)
	}
	return math.Abs(got-want) <= tol*math.Max(1, math.Abs(want))
}

// TestLog_driftPerPoint: a run's drift is what changed since the previous
// run of its own point (two points of a sweep differ by design), and a
// run without the engine's report of its build (failed before the engine
// printed one) is no change of build, neither to it nor back from it; the
// next report is compared with the last one.
func TestLog_driftPerPoint(t *testing.T) {
	base := historyRuns()[1]
	mk := func(i int, model string, build *results.Build) results.Run {
		r := base
		r.ID = fmt.Sprintf("20260601T00000%dZ-000%d", i, i)
		r.Start = time.Date(2026, 6, 1, 0, 0, i, 0, time.UTC)
		r.Swept = map[string]any{"model": model}
		r.Model.Files = []results.File{{Path: model + ".gguf", SHA256: modelHash}}
		r.Engine.Build = build
		if build == nil {
			r.Status, r.Error, r.Metrics = results.StatusFailed, "the worker died", nil
		}
		return r
	}
	x, y := &results.Build{Flavour: "prebuilt"}, &results.Build{Flavour: "localBuild"}
	runs := []results.Run{
		mk(0, "a", x), mk(1, "b", x), // two points, differing models
		mk(2, "a", nil), mk(3, "b", x), // a fails without a build report
		mk(4, "a", x), mk(5, "b", x), // back: no change
		mk(6, "a", nil), mk(7, "a", y), // a real change, across a run without one
	}
	h := Log(runs)
	got := map[int][]string{}
	for i, e := range h.Entries {
		for _, c := range e.Drift {
			got[i] = append(got[i], c.String())
		}
	}
	want := map[int][]string{7: {`lock.engine.build.flavour: "prebuilt" → "localBuild"`}}
	if len(got) != len(want) || !slices.Equal(got[7], want[7]) {
		t.Errorf("drift %v, want %v", got, want)
	}
}

// TestCompare_seed000 is the case from the issue: seed 000's baseline and
// K/Q/V offload r3 as two recorded results.
func TestCompare_seed000(t *testing.T) {
	a, b := seedSides(t)
	rep, err := Compare(a, b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Config) != 1 || rep.Config[0].String() != "flags.nkvo: 1 → 0" {
		t.Errorf("config diff = %v, want exactly [flags.nkvo: 1 → 0]", rep.Config)
	}
	if len(rep.Tables) != 1 || len(rep.Tables[0].Rows) != 1 {
		t.Fatalf("tables = %+v, want one table with one row", rep.Tables)
	}
	row := rep.Tables[0].Rows[0]
	// Means of the seed samples (R: mean()): 14.2924 and 16.3836, so
	// +14.6315%; the seed's own summaries are 14.292387 and 16.383602.
	if !near(row.A.Center, 14.2924, 1e-9) || !near(row.B.Center, 16.3836, 1e-9) || !near(row.Delta, 14.6315524, 1e-6) {
		t.Errorf("centers %g → %g (%+.4f%%), want 14.2924 → 16.3836 (+14.6316%%)", row.A.Center, row.B.Center, row.Delta)
	}
	// One run a side: the repetitions share their minute's machine
	// state, so nothing is tested (issue 25).
	if !math.IsNaN(row.P) || row.Verdict != Untested || row.Why == "" {
		t.Errorf("row = p %g verdict %q why %q; want no test, untested, a reason", row.P, row.Verdict, row.Why)
	}
	text := reportText(t, rep)
	for _, want := range []string{
		"untested",
		"'rigor run minimax-m27-b70/baseline minimax-m27-b70/kvoffload --rounds 5' runs A and B interleaved in one invocation and gives a verdict",
		"the intervals of a side with one run are over the repetitions inside it",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the report's words lack %q:\n%s", want, text)
		}
	}
	if got := rep.Regressions(0); len(got) != 0 {
		t.Errorf("Regressions(0) = %v, want none", got)
	}
	// Reversed, it is still no significant regression: p = 0.1.
	rev, _ := Compare(b, a, Options{})
	if got := rev.Regressions(0); len(got) != 0 {
		t.Errorf("reversed: Regressions(0) = %v, want none (p=0.1 is not significant)", got)
	}
}

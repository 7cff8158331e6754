package hoststate

import (
	"context"
	"errors"
	"math"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeTools answers the vendor tools from fixtures: answers maps a
// command line ("nvidia-smi --query-gpu=…") to the fixtures it prints on
// successive calls (the last one repeats); a name not in tools is not on
// PATH.
type fakeTools struct {
	tools   []string
	answers map[string][]string
	calls   map[string]int
	errs    map[string]string // command line → the tool's error
}

func (f *fakeTools) look(name string) (string, error) {
	if slices.Contains(f.tools, name) {
		return "/usr/bin/" + name, nil
	}
	return "", exec.ErrNotFound
}

func (f *fakeTools) run(t *testing.T) func(context.Context, string, ...string) ([]byte, error) {
	return func(_ context.Context, name string, args ...string) ([]byte, error) {
		line := name + " " + strings.Join(args, " ")
		if f.calls == nil {
			f.calls = map[string]int{}
		}
		n := f.calls[line]
		f.calls[line]++
		if e, ok := f.errs[line]; ok {
			return []byte(e), errors.New("exit status 2")
		}
		fs, ok := f.answers[line]
		if !ok {
			return nil, errors.New("exit status 1: no fixture for " + line)
		}
		return fixture(t, fs[min(n, len(fs)-1)]), nil
	}
}

func meterWith(t *testing.T, f *fakeTools, sysRoot string) *powerMeter {
	t.Helper()
	if sysRoot == "" {
		sysRoot = t.TempDir()
	}
	return newPowerMeter(Options{Run: f.run(t), LookPath: f.look, SysRoot: sysRoot})
}

func domain(t *testing.T, e *Energy, name string) PowerDomain {
	t.Helper()
	for _, d := range e.Domains {
		if d.Name == name {
			return d
		}
	}
	t.Fatalf("no domain %s in %+v", name, e.Domains)
	return PowerDomain{}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6*max(1, math.Abs(b)) }

func TestPowerMeter_nvidiaTwoGPUsOneCapped(t *testing.T) {
	f := &fakeTools{tools: []string{"nvidia-smi"}, answers: map[string][]string{
		"nvidia-smi " + strings.Join(NvidiaPowerLimitArgs, " "): {"nvidia-smi/power-limits-4090x2-capped.csv"},
		"nvidia-smi " + strings.Join(NvidiaEnergyArgs, " "):     {"nvidia-smi/energy-4090x2-capped.csv", "nvidia-smi/energy-4090x2-capped-later.csv"},
	}}
	m := meterWith(t, f, "")
	ctx := context.Background()
	t0 := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	m.readLimits(ctx)
	m.tick(ctx, t0)
	m.tick(ctx, t0.Add(time.Second))
	e := m.finish(100 * time.Millisecond)
	g0, g1 := domain(t, e, "gpu0"), domain(t, e, "gpu1")
	if g0.Method != MethodCounter || g0.Source != "nvidia-smi" || !near(g0.Joules, 31.465) || g0.PowerLimitW != 450 || g0.EnforcedPowerLimitW != 450 {
		t.Errorf("gpu0: got %+v, want 31.465 J by counter, limits 450/450", g0)
	}
	if g1.Method != MethodCounter || !near(g1.Joules, 29.987) || g1.PowerLimitW != 300 || g1.EnforcedPowerLimitW != 300 {
		t.Errorf("gpu1: got %+v, want 29.987 J by counter, capped at 300", g1)
	}
	if g0.PeakW < 31.465 || g0.PeakW != 318.02 {
		t.Errorf("gpu0 peak: got %v, want the highest power sampled, 318.02", g0.PeakW)
	}
	if got := e.PowerLimits(); got != "gpu0=450 W, gpu1=300 W" {
		t.Errorf("PowerLimits: got %q", got)
	}
	// This temporary root has no powercap tree: RAPL is named unavailable.
	if p := domain(t, e, "package"); p.Method != MethodUnavailable || !strings.Contains(p.Why, "RAPL is not exposed") {
		t.Errorf("RAPL: got %+v", p)
	}
	if e.Samples != 2 || e.WallSeconds != 1 {
		t.Errorf("samples %d over %v s, want 2 over 1", e.Samples, e.WallSeconds)
	}
}

func TestPowerMeter_nvidiaOldDriverIntegrates(t *testing.T) {
	f := &fakeTools{tools: []string{"nvidia-smi"},
		answers: map[string][]string{
			"nvidia-smi " + strings.Join(NvidiaPowerArgs, " "): {"nvidia-smi/energy-t4-na.csv"},
		},
		errs: map[string]string{
			"nvidia-smi " + strings.Join(NvidiaEnergyArgs, " "): string(fixture(t, "nvidia-smi/energy-old-driver-error.txt")),
		}}
	// The T4's counter reads [N/A] and an old driver refuses the field:
	// both fall back on power, integrated.
	for _, tc := range []struct {
		name string
		f    *fakeTools
	}{
		{"old driver", f},
		{"[N/A] counter", &fakeTools{tools: []string{"nvidia-smi"}, answers: map[string][]string{
			"nvidia-smi " + strings.Join(NvidiaEnergyArgs, " "): {"nvidia-smi/energy-t4-na.csv"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := meterWith(t, tc.f, "")
			t0 := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
			for i := range 11 {
				m.tick(context.Background(), t0.Add(time.Duration(i)*100*time.Millisecond))
			}
			e := m.finish(100 * time.Millisecond)
			g := domain(t, e, "gpu0")
			if g.Method != MethodIntegrated || !near(g.Joules, 27.91) || !strings.Contains(g.Why, "integrated") {
				t.Errorf("got %+v, want 27.91 J integrated over 1 s", g)
			}
		})
	}
	if n := f.calls["nvidia-smi "+strings.Join(NvidiaEnergyArgs, " ")]; n != 1 {
		t.Errorf("the refused query was asked %d times, want once", n)
	}
}

func TestPowerMeter_xpuSMIFourB70s(t *testing.T) {
	answers := map[string][]string{
		"xpu-smi " + strings.Join(XPUSMIDiscoveryArgs, " "): {"xpu-smi/discovery-b70x4.json"},
	}
	for i := range 4 {
		answers["xpu-smi "+strings.Join(XPUSMIStatsArgs(i), " ")] = []string{"xpu-smi/stats-energy-b70-d" + strconv.Itoa(i) + ".json"}
		answers["xpu-smi "+strings.Join(XPUSMIConfigArgs(i), " ")] = []string{"xpu-smi/config-b70-d0.json"}
	}
	f := &fakeTools{tools: []string{"xpu-smi"}, answers: answers}
	m := meterWith(t, f, "")
	ctx := context.Background()
	m.readLimits(ctx)
	t0 := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	m.tick(ctx, t0)
	m.tick(ctx, t0.Add(time.Second))
	e := m.finish(100 * time.Millisecond)
	for i := range 4 {
		g := domain(t, e, "gpu"+strconv.Itoa(i))
		// The same fixture twice: the counter did not move.
		if g.Method != MethodCounter || g.Source != "xpu-smi" || g.Joules != 0 || g.PowerLimitW != 230 {
			t.Errorf("gpu%d: got %+v, want a counter and a 230 W limit", i, g)
		}
	}
	if n := f.calls["xpu-smi "+strings.Join(XPUSMIDiscoveryArgs, " ")]; n != 1 {
		t.Errorf("discovery ran %d times, want once", n)
	}
	r, err := ParseXPUSMIEnergy(fixture(t, "xpu-smi/stats-energy-b70-d2.json"))
	if err != nil || r.counterJ == nil || *r.counterJ != 50011.734 || *r.powerW != 138.9 {
		t.Errorf("stats d2: got %+v, %v", r, err)
	}
	// A Max 1550's tiles: power summed, no counter, so integrated.
	r, err = ParseXPUSMIEnergy(fixture(t, "xpu-smi/stats-max1550-tiles.json"))
	if err != nil || r.counterJ != nil || r.powerW == nil || !near(*r.powerW, 109.1) {
		t.Errorf("tiles: got %+v, %v", r, err)
	}
}

func TestPowerMeter_amdSMI(t *testing.T) {
	f := &fakeTools{tools: []string{"amd-smi"}, answers: map[string][]string{
		"amd-smi " + strings.Join(AmdSMILimitArgs, " "): {"amd-smi/static-limit-rocm63-r9700.json"},
		"amd-smi " + strings.Join(AmdSMIPowerArgs, " "): {"amd-smi/metric-power-energy-rocm63-r9700.json"},
	}}
	m := meterWith(t, f, "")
	ctx := context.Background()
	m.readLimits(ctx)
	m.tick(ctx, time.Unix(0, 0))
	e := m.finish(100 * time.Millisecond)
	g := domain(t, e, "gpu0")
	if g.Method != MethodCounter || g.Source != "amd-smi" || g.PowerLimitW != 300 || g.PeakW != 287 {
		t.Errorf("got %+v, want a counter, a 300 W cap and 287 W peak", g)
	}
	// ROCm 7's gpu_data form, without an energy counter: power only.
	rs, err := ParseAmdSMIPower(fixture(t, "amd-smi/metric-rocm7-gpu_data-warning.txt"))
	if err != nil || len(rs) != 2 || rs[0].counterJ != nil || *rs[0].powerW != 12 || rs[1].unavailable == "" {
		t.Errorf("ROCm 7: got %+v, %v", rs, err)
	}
}

// raplTree writes a powercap tree: package 0 with a core and a dram
// sub-zone.
func raplTree(t *testing.T, pkgUJ, dramUJ string) string {
	t.Helper()
	root := t.TempDir()
	z := filepath.Join(root, "class", "powercap")
	files := map[string]string{
		"intel-rapl:0/name":                  "package-0\n",
		"intel-rapl:0/energy_uj":             pkgUJ,
		"intel-rapl:0/max_energy_range_uj":   "262143328850\n",
		"intel-rapl:0:0/name":                "core\n",
		"intel-rapl:0:0/energy_uj":           "5\n",
		"intel-rapl:0:1/name":                "dram\n",
		"intel-rapl:0:1/energy_uj":           dramUJ,
		"intel-rapl:0:1/max_energy_range_uj": "65712999613\n",
	}
	for name, body := range files {
		write(t, filepath.Join(z, name), body)
	}
	return root
}

func TestPowerMeter_raplWraps(t *testing.T) {
	root := raplTree(t, "262143000000\n", "1000000\n")
	m := meterWith(t, &fakeTools{}, root)
	ctx := context.Background()
	t0 := time.Unix(0, 0)
	m.tick(ctx, t0)
	// The package counter wraps past max_energy_range_uj; DRAM does not.
	write(t, filepath.Join(root, "class/powercap/intel-rapl:0/energy_uj"), "1000000\n")
	write(t, filepath.Join(root, "class/powercap/intel-rapl:0:1/energy_uj"), "3500000\n")
	m.tick(ctx, t0.Add(2*time.Second))
	e := m.finish(100 * time.Millisecond)
	p, d := domain(t, e, "package-0"), domain(t, e, "dram-0")
	if p.Method != MethodCounter || p.Source != "rapl" || p.Joules != 1.329 || p.Kind != "cpu-package" {
		t.Errorf("package: got %+v, want 1.329 J (1.32885) across the wrap", p)
	}
	if d.Kind != "dram" || !near(d.Joules, 2.5) || !near(d.AvgW, 1.25) {
		t.Errorf("dram: got %+v, want 2.5 J, 1.25 W", d)
	}
	for _, x := range e.Domains {
		if strings.Contains(x.Name, "core") {
			t.Errorf("the core sub-zone is inside the package and must not count twice: %+v", x)
		}
	}
	te := m.timed(0, 0, "")
	if te == nil || te.Joules != 3.829 || !slices.Equal(te.Domains, []string{"dram-0 (counter)", "package-0 (counter)"}) || !strings.Contains(te.From, "whole run") {
		t.Errorf("timed: got %+v", te)
	}
}

func TestPowerMeter_boundedAndTimed(t *testing.T) {
	f := &fakeTools{tools: []string{"nvidia-smi"}, answers: map[string][]string{
		"nvidia-smi " + strings.Join(NvidiaEnergyArgs, " "): {"nvidia-smi/energy-t4-na.csv"}}}
	m := meterWith(t, f, "")
	m.maxPoints = 16
	t0 := time.Unix(0, 0)
	for i := range 1001 {
		m.tick(context.Background(), t0.Add(time.Duration(i)*10*time.Millisecond))
	}
	s := m.series["gpu0"]
	if len(s.points) >= 16 {
		t.Errorf("%d points kept, want fewer than 16", len(s.points))
	}
	e := m.finish(10 * time.Millisecond)
	if g := domain(t, e, "gpu0"); !near(g.Joules, 279.1) {
		t.Errorf("10 s at 27.91 W: got %v J", g.Joules)
	}
	// The last 4 s of a constant 27.91 W: 111.64 J, whatever was thinned.
	te := m.timed(0, 4, "the engine's repetitions")
	if te == nil || math.Abs(te.Joules-111.64) > 0.5 || te.Seconds != 4 || te.From != "the engine's repetitions" {
		t.Errorf("timed: got %+v, want about 111.64 J over 4 s", te)
	}
}

func TestSampler_energyRecorded(t *testing.T) {
	c := &clock{t: time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)}
	root := raplTree(t, "1000000\n", "0\n")
	s := StartWith(context.Background(), nil, Options{Root: t.TempDir(), SysRoot: root, Now: c.now,
		Interval: time.Hour, PowerInterval: time.Hour, LookPath: (&fakeTools{}).look})
	write(t, filepath.Join(root, "class/powercap/intel-rapl:0/energy_uj"), "31000000\n")
	c.add(3 * time.Second)
	st := s.Stop()
	if st.Energy == nil || !st.Energy.Measured() {
		t.Fatalf("no energy recorded: %+v", st.Energy)
	}
	if p := domain(t, st.Energy, "package-0"); !near(p.Joules, 30) || !near(p.AvgW, 10) {
		t.Errorf("package: got %+v, want 30 J at 10 W", p)
	}
	if te := s.TimedEnergy(time.Time{}, 1.5, "the engine's repetitions"); te == nil || !near(te.Joules, 15) || te.AvgW != 10 {
		t.Errorf("timed: got %+v, want 15 J over the last 1.5 s", te)
	}
	// The engine exited a second before rigor stopped (its workers'
	// teardown): the section ends there.
	if te := s.TimedEnergy(c.now().Add(-time.Second), 1.5, "the engine's repetitions"); te == nil || !near(te.Joules, 15) {
		t.Errorf("timed, ending 1 s before the last sample: got %+v", te)
	}
	if te := s.TimedEnergy(c.now().Add(-time.Second), 0, ""); te == nil || te.Seconds != 2 || !near(te.Joules, 20) || !strings.Contains(te.From, "whole run") {
		t.Errorf("whole run up to the engine's exit: got %+v, want 20 J over 2 s", te)
	}
	off := StartWith(context.Background(), nil, Options{Root: t.TempDir(), Now: c.now, Interval: time.Hour, PowerInterval: -1})
	if st := off.Stop(); st.Energy != nil {
		t.Errorf("power sampling off: got %+v", st.Energy)
	}
}

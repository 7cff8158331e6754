package hoststate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// machineRoot writes a small machine: 2 CPUs with cpufreq, one readable
// thermal zone and one that fails, meminfo, loadavg and /proc/stat.
func machineRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"sys/devices/system/cpu/online":                        "0-1\n",
		"sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": "performance\n",
		"sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq": "3400000\n",
		"sys/devices/system/cpu/cpu1/cpufreq/scaling_governor": "performance\n",
		"sys/devices/system/cpu/cpu1/cpufreq/scaling_cur_freq": "2800000\n",
		"sys/class/thermal/thermal_zone0/temp":                 "45000\n",
		"sys/class/thermal/thermal_zone0/type":                 "x86_pkg_temp\n",
		"sys/class/thermal/thermal_zone1/type":                 "acpitz\n", // no temp: left out
		"proc/loadavg":                                         "0.30 0.25 0.20 1/200 999\n",
		"proc/meminfo":                                         "MemAvailable:   8388608 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n",
		"proc/stat":                                            "cpu  1000 0 500 9000 0 0 0 0 0 0\n",
		"proc/123/stat":                                        "123 (llama-bench) R 1 1 1 0 -1 0 0 0 0 0 80 20 0 0 20 0 1 0 1 1 1\n",
	}
	for name, body := range files {
		write(t, filepath.Join(root, name), body)
	}
	return root
}

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestSampler runs a sampler over a machine that changes under it: the
// engine (pid 123) uses 4 s of CPU in 10 s while the machine as a whole
// uses 20 s, so other processes took 16 s, 1.6 of 2 cores.
func TestSampler(t *testing.T) {
	root := machineRoot(t)
	c := &clock{t: time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)}
	nvidia := string(fixture(t, "nvidia-smi/4090-3090.csv"))
	opts := Options{
		Root: root, Now: c.now, Interval: time.Hour, PowerInterval: -1, // power: energy_test.go
		LookPath: func(name string) (string, error) {
			if name == "nvidia-smi" {
				return "/usr/bin/nvidia-smi", nil
			}
			return "", errors.New("not found")
		},
		Run: func(_ context.Context, name string, args ...string) ([]byte, error) {
			if name != "nvidia-smi" || !reflect.DeepEqual(args, NvidiaSMIArgs) {
				t.Errorf("ran %s %q", name, args)
			}
			return []byte(nvidia), nil
		},
	}
	s := StartWith(context.Background(), func() []int { return []int{123} }, opts)
	// the run: load climbs, the engine and a hog use CPU, a GPU heats up
	c.add(10 * time.Second)
	write(t, filepath.Join(root, "proc/loadavg"), "3.10 1.20 0.50 3/200 999\n")
	write(t, filepath.Join(root, "proc/stat"), "cpu  2600 0 900 9400 0 0 0 0 0 0\n")
	write(t, filepath.Join(root, "proc/123/stat"), "123 (llama-bench) R 1 1 1 0 -1 0 0 0 0 0 380 120 0 0 20 0 1 0 1 1 1\n")
	write(t, filepath.Join(root, "sys/devices/system/cpu/cpu1/cpufreq/scaling_cur_freq"), "1200000\n")
	nvidia = strings.Replace(nvidia, "0, 41,", "0, 83,", 1)
	st := s.Stop()

	if st.Cores != 2 || st.WallSeconds != 10 || st.EngineCPUSeconds != 4 || st.OtherCPUSeconds != 16 || st.OtherCores == nil || *st.OtherCores != 1.6 {
		t.Errorf("accounting: got cores %d wall %v engine %v other %v (%v cores); want 2, 10, 4, 16, 1.6",
			st.Cores, st.WallSeconds, st.EngineCPUSeconds, st.OtherCPUSeconds, st.OtherCores)
	}
	b := st.Before
	if b == nil || b.Load1 != 0.3 || b.Load5 != 0.25 || b.Governor != "performance" || b.CPUMHzMin != 2800 || b.CPUMHzMax != 3400 ||
		b.MemAvailableMiB != 8192 || b.SwapUsedMiB != 0 || len(b.Thermal) != 1 || b.Thermal[0] != (Thermal{"thermal_zone0", "x86_pkg_temp", 45}) ||
		len(b.GPUs) != 2 || b.GPUs[0].TempC != 41 {
		t.Errorf("before: got %+v", b)
	}
	p := st.Peak
	if p == nil || p.Load1 != 3.1 || p.CPUMHzMin != 1200 || p.GPUs[0].TempC != 83 {
		t.Errorf("peak: got %+v; want load 3.1, lowest clock 1200, GPU 0 at 83 °C", p)
	}
	busy, why := st.Busy(DefaultBusyShare)
	if !busy || why != "other processes took 1.6 of 2 cores while the engine ran (load 3.1)" {
		t.Errorf("Busy: got %v %q", busy, why)
	}
	if again := s.Stop(); !reflect.DeepEqual(again, st) {
		t.Errorf("second Stop: got %+v, want the same state", again)
	}
}

// TestSampler_toolFails: a GPU tool that fails is a note, not an error,
// and the rest of the state is there.
func TestSampler_toolFails(t *testing.T) {
	root := machineRoot(t)
	opts := Options{
		Root: root, Interval: time.Hour,
		LookPath: func(name string) (string, error) { return "/usr/bin/" + name, nil },
		Run: func(_ context.Context, name string, args ...string) ([]byte, error) {
			switch name {
			case "xpu-smi":
				return fixture(t, "xpu-smi/error-level-zero.json"), nil
			case "amd-smi":
				return fixture(t, "amd-smi/metric-rocm6-r9700.json"), nil
			}
			return nil, errors.New("exit status 9: NVIDIA-SMI has failed")
		},
	}
	st := StartWith(context.Background(), nil, opts).Stop()
	want := []string{"nvidia-smi: exit status 9: NVIDIA-SMI has failed", "xpu-smi: xpu-smi discovery: Level Zero Initialization Error"}
	if !reflect.DeepEqual(st.Notes, want) {
		t.Errorf("notes: got %q, want %q", st.Notes, want)
	}
	if len(st.Before.GPUs) != 1 || st.Before.GPUs[0].Source != "amd-smi" {
		t.Errorf("GPUs: got %+v, want amd-smi's one (rocm-smi not asked when amd-smi is there)", st.Before.GPUs)
	}
}

// TestSampler_real samples this machine: no figure is checked but the
// shape (the machine is shared; its load is whatever it is).
func TestSampler_real(t *testing.T) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skip("no /proc")
	}
	st := Start(context.Background(), func() []int { return []int{os.Getpid()} }).Stop()
	if st.Cores < 1 || st.Before == nil || st.Peak == nil || st.OtherCores == nil {
		t.Errorf("got %+v", st)
	}
}

func TestCompare(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	quiet := &State{Cores: 2, OtherCores: f(0.05), Before: &Sample{Load1: 0.3}, Peak: &Sample{Load1: 0.3, Governor: "performance",
		Thermal: []Thermal{{Zone: "thermal_zone0", Celsius: 50}}, GPUs: []GPU{{Index: 0, Source: "nvidia-smi", TempC: 60, ClockMHz: 2500, PowerW: 300}}}}
	busy := &State{Cores: 2, OtherCores: f(1.7), Before: &Sample{Load1: 2}, Peak: &Sample{Load1: 9.8, Governor: "powersave",
		Thermal: []Thermal{{Zone: "thermal_zone0", Celsius: 75}}, GPUs: []GPU{{Index: 0, Source: "nvidia-smi", TempC: 84, ClockMHz: 1800, PowerW: 310}}}}
	got := Compare(quiet, busy)
	want := []string{
		"load 0.3 vs 9.8 on 2 cores",
		"other processes took 0.1 vs 1.7 cores while the engine ran",
		"CPU governor performance vs powersave",
		"hottest thermal zone 50 vs 75 °C",
		"GPU 0 temperature 60 vs 84 °C",
		"GPU 0 clock 2500 vs 1800 MHz",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if got := Compare(quiet, quiet); got != nil {
		t.Errorf("same state: got %q", got)
	}
	if got := Compare(quiet, nil); got != nil {
		t.Errorf("one side unrecorded: got %q", got)
	}
	// A saturated machine: other processes took nearly every core on both
	// sides, and the engine got a quarter of the CPU time on one side.
	sat := func(other, engine float64) *State {
		return &State{Cores: 2, OtherCores: f(other), WallSeconds: 10, EngineCPUSeconds: engine * 10, Peak: &Sample{Load1: 12}}
	}
	if got, want := Compare(sat(1.4, 0.53), sat(1.85, 0.13)), []string{"the engine got 0.53 vs 0.13 cores of CPU time while it ran"}; !reflect.DeepEqual(got, want) {
		t.Errorf("saturated: got %q, want %q", got, want)
	}
	if got := Compare(sat(1.4, 0.53), sat(1.5, 0.4)); got != nil {
		t.Errorf("saturated alike: got %q", got)
	}
	// a record without accounting is judged on the load before it
	if b, why := (&State{Cores: 2, Before: &Sample{Load1: 4}}).Busy(0.25); !b || why != "load 4.0 on 2 cores before the run" {
		t.Errorf("load only: got %v %q", b, why)
	}
}

func TestQuiet(t *testing.T) {
	root := machineRoot(t)
	c := &clock{t: time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)}
	busy := 1000
	hog := 0 // busy seconds ×100 added per window
	sleep := func(_ context.Context, d time.Duration) error {
		c.add(d)
		busy += hog
		write(t, filepath.Join(root, "proc/stat"), "cpu  "+strconv.Itoa(busy)+" 0 0 9000 0 0 0 0 0 0\n")
		return nil
	}
	opts := QuietOptions{Options: Options{Root: root, Now: c.now}, Wait: 10 * time.Second, Window: 2 * time.Second, sleep: sleep}
	if err := Quiet(context.Background(), opts); err != nil {
		t.Errorf("a still machine: got %v", err)
	}
	// a hog taking 1.5 of 2 cores: 3 busy seconds per 2-second window
	hog = 300
	start := c.now()
	err := Quiet(context.Background(), opts)
	var eb *ErrBusy
	if !errors.As(err, &eb) || eb.Cores != 2 || eb.OtherCores != 1.5 ||
		err.Error() != "machine busy: other processes took 1.5 of 2 cores (load 0.3) and did not settle within 10s" {
		t.Errorf("a hog: got %v", err)
	}
	if waited := c.now().Sub(start); waited != 10*time.Second {
		t.Errorf("waited %v, want the 10 s allowed", waited)
	}
	// it settles after two windows
	n := 0
	opts.sleep = func(ctx context.Context, d time.Duration) error {
		if n++; n > 2 {
			hog = 0
		}
		return sleep(ctx, d)
	}
	if err := Quiet(context.Background(), opts); err != nil {
		t.Errorf("a hog that stops: got %v", err)
	}
	if n != 3 {
		t.Errorf("windows measured: %d, want 3", n)
	}
}

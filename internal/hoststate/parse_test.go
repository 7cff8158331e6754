package hoststate

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseNvidiaSMI(t *testing.T) {
	got, err := ParseNvidiaSMI(fixture(t, "nvidia-smi/4090-3090.csv"))
	if err != nil {
		t.Fatal(err)
	}
	want := []GPU{
		{Index: 0, Source: "nvidia-smi", TempC: 41, ClockMHz: 2520, MemClockMHz: 10501, PowerW: 31.85, MemUsedMiB: 1234, UtilPct: 3},
		{Index: 1, Source: "nvidia-smi", TempC: 67, ClockMHz: 1695, MemClockMHz: 9751, PowerW: 287.4, MemUsedMiB: 22118, UtilPct: 98},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	got, err = ParseNvidiaSMI(fixture(t, "nvidia-smi/gb10-na.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []GPU{{Index: 0, Source: "nvidia-smi", TempC: 38, ClockMHz: 2405, PowerW: 11.2}}; !reflect.DeepEqual(got, want) {
		t.Errorf("[N/A] fields: got %+v, want %+v", got, want)
	}
	if _, err := ParseNvidiaSMI(fixture(t, "nvidia-smi/old-driver-error.txt")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("old driver's refusal: got %v, want an error naming line 1", err)
	}
	if _, err := ParseNvidiaSMI([]byte("0, hot, 1, 1, 1, 1, 1\n")); err == nil || !strings.Contains(err.Error(), `"hot"`) {
		t.Errorf("a word for a number: got %v", err)
	}
}

func TestParseXPUSMI(t *testing.T) {
	ids, err := ParseXPUSMIDiscovery(fixture(t, "xpu-smi/discovery-b70x2.json"))
	if err != nil || !reflect.DeepEqual(ids, []int{0, 1}) {
		t.Errorf("discovery: got %v, %v; want [0 1]", ids, err)
	}
	g, err := ParseXPUSMIStats(fixture(t, "xpu-smi/stats-b70-d1.json"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (GPU{Index: 1, Source: "xpu-smi", TempC: 71.5, ClockMHz: 2800, MemClockMHz: 2375, PowerW: 161.23, MemUsedMiB: 24120.5, UtilPct: 97}); g != want {
		t.Errorf("stats: got %+v, want %+v", g, want)
	}
	g, err = ParseXPUSMIStats(fixture(t, "xpu-smi/stats-max1550-tiles.json"))
	if err != nil {
		t.Fatal(err)
	}
	// two tiles: the hotter tile, the slower clock, power and memory summed
	if want := (GPU{Index: 0, Source: "xpu-smi", TempC: 29, ClockMHz: 1550, PowerW: 109.1, MemUsedMiB: 124}); g != want {
		t.Errorf("tiles: got %+v, want %+v", g, want)
	}
	// xpumd's REST form has the same shape with memory in bytes
	g, err = ParseXPUSMIStats([]byte(`{"device_id": 2, "device_level": [{"metrics_type": "XPUM_STATS_MEMORY_USED", "value": 8501719040},
		{"metrics_type": "XPUM_STATS_GPU_CORE_TEMPERATURE", "value": 37.0}]}`))
	if err != nil || g.MemUsedMiB != 8107.9 || g.TempC != 37 || g.Index != 2 {
		t.Errorf("bytes: got %+v, %v; want 8107.9 MiB at 37 °C, device 2", g, err)
	}
	for _, f := range []func([]byte) error{
		func(b []byte) error { _, err := ParseXPUSMIDiscovery(b); return err },
		func(b []byte) error { _, err := ParseXPUSMIStats(b); return err },
	} {
		if err := f(fixture(t, "xpu-smi/error-level-zero.json")); err == nil || !strings.Contains(err.Error(), "Level Zero Initialization Error") {
			t.Errorf("xpu-smi's error: got %v, want it quoted", err)
		}
	}
}

func TestParseRocmSMI(t *testing.T) {
	got, err := ParseRocmSMI(fixture(t, "rocm-smi/7900xtx-warning.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := []GPU{
		{Index: 0, Source: "rocm-smi", TempC: 68, ClockMHz: 2482, MemClockMHz: 1249, PowerW: 312, MemUsedMiB: 20480, UtilPct: 99},
		{Index: 1, Source: "rocm-smi", TempC: 35, MemClockMHz: 96, PowerW: 9, MemUsedMiB: 280},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if _, err := ParseRocmSMI([]byte(`{"system": {"Driver version": "6.16.13"}}`)); err == nil {
		t.Error("no card: got no error")
	}
}

func TestParseAmdSMI(t *testing.T) {
	check := func(file string, want []GPU) {
		t.Helper()
		got, err := ParseAmdSMI(fixture(t, file))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v", file, got, want)
		}
	}
	check("amd-smi/metric-rocm6-r9700.json", []GPU{{Index: 0, Source: "amd-smi", TempC: 79, ClockMHz: 2920, MemClockMHz: 1258, PowerW: 287, MemUsedMiB: 29871, UtilPct: 98}})
	check("amd-smi/metric-rocm7-gpu_data-warning.txt", []GPU{
		{Index: 0, Source: "amd-smi", TempC: 35, ClockMHz: 37, MemClockMHz: 96, PowerW: 12, MemUsedMiB: 287},
		{Index: 1, Source: "amd-smi", TempC: 58, ClockMHz: 2880, MemUsedMiB: 30112, UtilPct: 100},
	})
	check("amd-smi/metric-rocm60-strings.json", []GPU{{Index: 0, Source: "amd-smi", TempC: 72, ClockMHz: 2400, MemClockMHz: 1249, PowerW: 245, MemUsedMiB: 20480, UtilPct: 87}})
	if _, err := ParseAmdSMI([]byte(`{"error": "AMDSMI_STATUS_NO_PERM"}`)); err == nil || !strings.Contains(err.Error(), "AMDSMI_STATUS_NO_PERM") {
		t.Errorf("amd-smi's error: got %v", err)
	}
}

func TestParseProc(t *testing.T) {
	l1, l5, err := ParseLoadavg([]byte("19.13 8.87 3.51 15/212 4520\n"))
	if err != nil || l1 != 19.13 || l5 != 8.87 {
		t.Errorf("loadavg: got %v %v %v", l1, l5, err)
	}
	if _, _, err := ParseLoadavg([]byte("")); err == nil {
		t.Error("empty loadavg: no error")
	}
	avail, swap := ParseMeminfo([]byte("MemTotal:       32768000 kB\nMemAvailable:   23630880 kB\nSwapTotal:       2097148 kB\nSwapFree:        1048572 kB\n"))
	if avail != 23077 || swap != 1024 {
		t.Errorf("meminfo: got %v MiB available, %v MiB swap; want 23077, 1024", avail, swap)
	}
	// user nice system idle iowait irq softirq steal guest guest_nice
	busy, err := ParseProcStat([]byte("cpu  46860 0 14848 12062 277 0 134 91 500 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n"))
	if err != nil || busy != (46860+14848+134+91)/100.0 {
		t.Errorf("proc/stat: got %v, %v; want %v", busy, err, (46860+14848+134+91)/100.0)
	}
	// a name with spaces and a parenthesis; utime 250 stime 50 cutime 100 cstime 0
	cpu, err := ParsePidStat([]byte("4527 (node (main) x) R 4518 4518 10968 0 -1 4194304 102 0 0 0 250 50 100 0 20 0 1 0 37378 3133440 387\n"))
	if err != nil || cpu != 4 {
		t.Errorf("pid stat: got %v, %v; want 4 s", cpu, err)
	}
	lo, hi := ParseCPUInfoMHz([]byte("processor\t: 0\ncpu MHz\t\t: 2096.060\nprocessor\t: 1\ncpu MHz\t\t: 3400.5\n"))
	if lo != 2096.06 || hi != 3400.5 {
		t.Errorf("cpuinfo: got %v–%v", lo, hi)
	}
	if n := countCPUList("0-3,6,8-9"); n != 7 {
		t.Errorf("cpu list: got %d, want 7", n)
	}
}

// TestDecodeXPUSMIStats: `xpu-smi stats -j` is read once for the machine
// state and the energy meter alike (issue 23, D3): the same device, the
// tiles' figures kept apart, and the tool's own error refused by both.
func TestDecodeXPUSMIStats(t *testing.T) {
	d, err := decodeXPUSMIStats(fixture(t, "xpu-smi/stats-max1550-tiles.json"))
	if err != nil {
		t.Fatal(err)
	}
	g, _ := ParseXPUSMIStats(fixture(t, "xpu-smi/stats-max1550-tiles.json"))
	r, _ := ParseXPUSMIEnergy(fixture(t, "xpu-smi/stats-max1550-tiles.json"))
	if len(d.Tiles) != 2 || g.Index != d.ID || r.name != "gpu"+strconv.Itoa(d.ID) {
		t.Errorf("tiles %d, ids %d, %d, %s", len(d.Tiles), d.ID, g.Index, r.name)
	}
	for _, f := range []func([]byte) error{
		func(b []byte) error { _, err := ParseXPUSMIStats(b); return err },
		func(b []byte) error { _, err := ParseXPUSMIEnergy(b); return err },
	} {
		if err := f(fixture(t, "xpu-smi/error-level-zero.json")); err == nil || !strings.Contains(err.Error(), "xpu-smi stats: Level Zero Initialization Error") {
			t.Errorf("xpu-smi's error: got %v, want it quoted", err)
		}
		if err := f([]byte(`{"device_level": []}`)); err == nil || err.Error() != `parsing xpu-smi stats: device_id "" is not a number` {
			t.Errorf("device_id: got %v", err)
		}
	}
}

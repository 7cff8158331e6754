package hoststate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// NvidiaSMIArgs are the arguments [ParseNvidiaSMI] expects nvidia-smi to
// have been run with (its query mode: one CSV line per GPU).
var NvidiaSMIArgs = []string{
	"--query-gpu=index,temperature.gpu,clocks.sm,clocks.mem,power.draw,memory.used,utilization.gpu",
	"--format=csv,noheader,nounits",
}

// XPUSMIDiscoveryArgs lists the Intel GPUs; [XPUSMIStatsArgs] then asks
// for one device's statistics.
var XPUSMIDiscoveryArgs = []string{"discovery", "-j"}

// XPUSMIStatsArgs returns the arguments of `xpu-smi stats` for device id,
// whose JSON [ParseXPUSMIStats] reads.
func XPUSMIStatsArgs(id int) []string { return []string{"stats", "-d", strconv.Itoa(id), "-j"} }

// RocmSMIArgs are the arguments [ParseRocmSMI] expects rocm-smi to have
// been run with.
var RocmSMIArgs = []string{"--showtemp", "--showclocks", "--showpower", "--showmeminfo", "vram", "--showuse", "--json"}

// AmdSMIArgs are the arguments [ParseAmdSMI] expects amd-smi to have been
// run with.
var AmdSMIArgs = []string{"metric", "--json"}

// sampleGPUs asks each vendor tool on PATH: nvidia-smi; amd-smi, else
// rocm-smi; xpu-smi. A tool that fails or prints something unparseable is
// a note, not an error.
func sampleGPUs(ctx context.Context, opts Options) ([]GPU, []string) {
	look := lookPath(opts)
	run := opts.Run
	if run == nil {
		run = runCommand
	}
	call := func(name string, args ...string) ([]byte, error) {
		c, cancel := context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
		return run(c, name, args...)
	}
	var gpus []GPU
	var notes []string
	note := func(tool string, err error) {
		notes = append(notes, fmt.Sprintf("%s: %v", tool, err))
	}
	if _, err := look("nvidia-smi"); err == nil {
		out, err := call("nvidia-smi", NvidiaSMIArgs...)
		if err == nil {
			var g []GPU
			g, err = ParseNvidiaSMI(out)
			gpus = append(gpus, g...)
		}
		if err != nil {
			note("nvidia-smi", err)
		}
	}
	if _, err := look("amd-smi"); err == nil {
		out, err := call("amd-smi", AmdSMIArgs...)
		if err == nil {
			var g []GPU
			g, err = ParseAmdSMI(out)
			gpus = append(gpus, g...)
		}
		if err != nil {
			note("amd-smi", err)
		}
	} else if _, err := look("rocm-smi"); err == nil {
		out, err := call("rocm-smi", RocmSMIArgs...)
		if err == nil {
			var g []GPU
			g, err = ParseRocmSMI(out)
			gpus = append(gpus, g...)
		}
		if err != nil {
			note("rocm-smi", err)
		}
	}
	if _, err := look("xpu-smi"); err == nil {
		out, err := call("xpu-smi", XPUSMIDiscoveryArgs...)
		var ids []int
		if err == nil {
			ids, err = ParseXPUSMIDiscovery(out)
		}
		if err != nil {
			note("xpu-smi", err)
		}
		for _, id := range ids {
			out, err := call("xpu-smi", XPUSMIStatsArgs(id)...)
			if err == nil {
				var g GPU
				g, err = ParseXPUSMIStats(out)
				if err == nil {
					gpus = append(gpus, g)
				}
			}
			if err != nil {
				note("xpu-smi", err)
			}
		}
	}
	return gpus, notes
}

func runCommand(ctx context.Context, name string, args ...string) ([]byte, error) {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		line, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
		if line != "" {
			return out, fmt.Errorf("%w: %s", err, line)
		}
		return out, err
	}
	return out, nil
}

// ParseNvidiaSMI parses nvidia-smi run with [NvidiaSMIArgs]:
//
//	0, 41, 2520, 10501, 31.85, 1234, 3
//
// Fields the driver cannot answer ("[N/A]", "[Not Supported]") stay zero.
func ParseNvidiaSMI(out []byte) ([]GPU, error) {
	var gpus []GPU
	sc := bufio.NewScanner(bytes.NewReader(out))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) != 7 {
			return nil, fmt.Errorf("parsing nvidia-smi output: line %d: got %d fields, want 7 (index, temperature.gpu, clocks.sm, clocks.mem, power.draw, memory.used, utilization.gpu)", n, len(f))
		}
		v := make([]float64, 7)
		for i := range f {
			s := strings.TrimSpace(f[i])
			if strings.HasPrefix(s, "[") || s == "N/A" || s == "" {
				continue
			}
			x, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, fmt.Errorf("parsing nvidia-smi output: line %d: field %d %q is not a number", n, i+1, s)
			}
			v[i] = x
		}
		gpus = append(gpus, GPU{Index: int(v[0]), Source: "nvidia-smi", TempC: v[1], ClockMHz: v[2],
			MemClockMHz: v[3], PowerW: v[4], MemUsedMiB: v[5], UtilPct: v[6]})
	}
	return gpus, sc.Err()
}

// ParseXPUSMIDiscovery returns the device ids of `xpu-smi discovery -j`
// ({"device_list":[{"device_id":0,…},…]}).
func ParseXPUSMIDiscovery(out []byte) ([]int, error) {
	var d struct {
		DeviceList []struct {
			DeviceID json.Number `json:"device_id"`
		} `json:"device_list"`
		Error string `json:"error"`
	}
	if err := decodeJSON(out, &d); err != nil {
		return nil, fmt.Errorf("parsing xpu-smi discovery: %w", err)
	}
	if d.Error != "" && len(d.DeviceList) == 0 {
		return nil, fmt.Errorf("xpu-smi discovery: %s", d.Error)
	}
	var ids []int
	for _, x := range d.DeviceList {
		id, err := strconv.Atoi(x.DeviceID.String())
		if err != nil {
			return nil, fmt.Errorf("parsing xpu-smi discovery: device_id %q is not a number", x.DeviceID)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// ParseXPUSMIStats parses `xpu-smi stats -d ID -j`: {"device_id":0,
// "device_level":[{"metrics_type":"XPUM_STATS_GPU_CORE_TEMPERATURE",
// "value":45},…],"tile_level":[{"data_list":[…]}]}, memory used in MiB
// (in bytes in xpumd's REST form, which is accepted too). A figure missing at device level is
// taken from the tiles (the highest temperature and power, summed memory).
func ParseXPUSMIStats(out []byte) (GPU, error) {
	d, err := decodeXPUSMIStats(out)
	if err != nil {
		return GPU{}, err
	}
	g := GPU{Index: d.ID, Source: "xpu-smi"}
	set := func(ms []xpuMetric, tile bool) {
		for _, m := range ms {
			v, err := m.Value.Float64()
			if err != nil {
				continue
			}
			switch m.Type {
			case "XPUM_STATS_GPU_CORE_TEMPERATURE":
				g.TempC = max(g.TempC, v)
			case "XPUM_STATS_GPU_FREQUENCY":
				g.ClockMHz = minNonZero(g.ClockMHz, v)
			case "XPUM_STATS_MEMORY_FREQUENCY":
				g.MemClockMHz = v
			case "XPUM_STATS_POWER":
				if tile {
					g.PowerW += v
				} else {
					g.PowerW = v
				}
			case "XPUM_STATS_MEMORY_USED":
				// xpu-smi prints MiB; xpumd's REST form of the same
				// statistic is bytes. No GPU has 16 TiB.
				if v >= 1<<24 {
					v = round(v/(1<<20), 1)
				}
				if tile {
					g.MemUsedMiB += v
				} else {
					g.MemUsedMiB = v
				}
			case "XPUM_STATS_GPU_UTILIZATION":
				g.UtilPct = max(g.UtilPct, v)
			}
		}
	}
	set(d.Device, false)
	if g.TempC == 0 && g.PowerW == 0 && g.MemUsedMiB == 0 {
		for _, t := range d.Tiles {
			set(t, true)
		}
	}
	return g, nil
}

// xpuMetric is one figure of `xpu-smi stats -d N -j`.
type xpuMetric struct {
	Type  string      `json:"metrics_type"`
	Value json.Number `json:"value"`
}

// xpuStats is `xpu-smi stats -d N -j` decoded: the device's id, its
// device-level figures and each tile's.
type xpuStats struct {
	ID     int
	Device []xpuMetric
	Tiles  [][]xpuMetric
}

// decodeXPUSMIStats is the one reading of `xpu-smi stats -d N -j` that
// the machine state ([ParseXPUSMIStats]) and the energy meter
// ([ParseXPUSMIEnergy]) share: an error the tool reports in its JSON
// ("error") is an error, and so is a device_id that is not a number.
func decodeXPUSMIStats(out []byte) (xpuStats, error) {
	var d struct {
		DeviceID    json.Number `json:"device_id"`
		DeviceLevel []xpuMetric `json:"device_level"`
		TileLevel   []struct {
			DataList []xpuMetric `json:"data_list"`
		} `json:"tile_level"`
		Error string `json:"error"`
	}
	if err := decodeJSON(out, &d); err != nil {
		return xpuStats{}, fmt.Errorf("parsing xpu-smi stats: %w", err)
	}
	if d.Error != "" {
		return xpuStats{}, fmt.Errorf("xpu-smi stats: %s", d.Error)
	}
	id, err := strconv.Atoi(d.DeviceID.String())
	if err != nil {
		return xpuStats{}, fmt.Errorf("parsing xpu-smi stats: device_id %q is not a number", d.DeviceID)
	}
	s := xpuStats{ID: id, Device: d.DeviceLevel}
	for _, t := range d.TileLevel {
		s.Tiles = append(s.Tiles, t.DataList)
	}
	return s, nil
}

var (
	reCard = regexp.MustCompile(`^card([0-9]+)$`)
	reMHz  = regexp.MustCompile(`([0-9.]+)\s*Mhz`)
)

// ParseRocmSMI parses rocm-smi's JSON ([RocmSMIArgs]): an object keyed by
// card0, card1, …, every value a string ("Temperature (Sensor edge) (C)":
// "45.0", "sclk clock speed:": "(2482Mhz)", "Average Graphics Package
// Power (W)": "35.0", "VRAM Total Used Memory (B)": "…"). The junction
// temperature wins over the edge's; newer releases spell the power
// "Current Socket Graphics Package Power (W)". Keys match
// case-insensitively; warnings before the JSON are skipped.
func ParseRocmSMI(out []byte) ([]GPU, error) {
	var top map[string]map[string]any
	if err := decodeJSON(out, &top); err != nil {
		return nil, fmt.Errorf("parsing rocm-smi output: %w", err)
	}
	var gpus []GPU
	for k, card := range top {
		m := reCard.FindStringSubmatch(strings.ToLower(k))
		if m == nil {
			continue
		}
		idx, _ := strconv.Atoi(m[1])
		g := GPU{Index: idx, Source: "rocm-smi"}
		lc := map[string]string{}
		for k, v := range card {
			lc[strings.ToLower(k)] = fmt.Sprint(v)
		}
		num := func(keys ...string) float64 {
			for _, k := range keys {
				if v, err := strconv.ParseFloat(strings.TrimSpace(lc[k]), 64); err == nil {
					return v
				}
			}
			return 0
		}
		g.TempC = num("temperature (sensor junction) (c)", "temperature (sensor edge) (c)")
		if s := reMHz.FindStringSubmatch(lc["sclk clock speed:"]); s != nil {
			g.ClockMHz, _ = strconv.ParseFloat(s[1], 64)
		}
		if s := reMHz.FindStringSubmatch(lc["mclk clock speed:"]); s != nil {
			g.MemClockMHz, _ = strconv.ParseFloat(s[1], 64)
		}
		g.PowerW = num("average graphics package power (w)", "current socket graphics package power (w)")
		g.MemUsedMiB = round(num("vram total used memory (b)")/(1<<20), 0)
		g.UtilPct = num("gpu use (%)")
		gpus = append(gpus, g)
	}
	if len(gpus) == 0 {
		return nil, errors.New("parsing rocm-smi output: no card")
	}
	sort.Slice(gpus, func(i, j int) bool { return gpus[i].Index < gpus[j].Index })
	return gpus, nil
}

// ParseAmdSMI parses `amd-smi metric --json` ([AmdSMIArgs]): a list of
// GPUs (ROCm 6.x) or {"gpu_data":[…]} (ROCm 7.x), each with
// usage.gfx_activity, power.socket_power, clock.gfx_0.clk, clock.mem_0.clk,
// temperature.{hotspot,edge} and mem_usage.used_vram; a figure is
// {"value":N,"unit":"…"}, "N unit" in older releases, or "N/A".
func ParseAmdSMI(out []byte) ([]GPU, error) {
	var raw json.RawMessage
	if err := decodeJSON(out, &raw); err != nil {
		return nil, fmt.Errorf("parsing amd-smi output: %w", err)
	}
	var list []map[string]any
	if len(raw) > 0 && raw[0] == '[' {
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("parsing amd-smi output: %w", err)
		}
	} else {
		var obj map[string]any
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("parsing amd-smi output: %w", err)
		}
		switch d := obj["gpu_data"].(type) {
		case []any:
			for _, x := range d {
				if m, ok := x.(map[string]any); ok {
					list = append(list, m)
				}
			}
		default:
			if e, ok := obj["error"]; ok {
				return nil, fmt.Errorf("amd-smi reported an error: %v", e)
			}
			if _, ok := obj["gpu"]; !ok {
				return nil, errors.New("parsing amd-smi output: neither a list nor gpu_data")
			}
			list = []map[string]any{obj}
		}
	}
	var gpus []GPU
	for i, m := range list {
		g := GPU{Index: i, Source: "amd-smi"}
		if n, ok := m["gpu"].(float64); ok {
			g.Index = int(n)
		}
		g.UtilPct = amdValue(m, "usage", "gfx_activity")
		g.PowerW = amdValue(m, "power", "socket_power")
		if g.PowerW == 0 {
			g.PowerW = amdValue(m, "power", "average_socket_power")
		}
		g.ClockMHz = amdValue(m, "clock", "gfx_0", "clk")
		g.MemClockMHz = amdValue(m, "clock", "mem_0", "clk")
		g.TempC = amdValue(m, "temperature", "hotspot")
		if g.TempC == 0 {
			g.TempC = amdValue(m, "temperature", "edge")
		}
		g.MemUsedMiB = amdValue(m, "mem_usage", "used_vram")
		gpus = append(gpus, g)
	}
	return gpus, nil
}

// amdValue walks path in m and reads {"value":N}, "N unit", or a number.
func amdValue(m map[string]any, path ...string) float64 {
	var cur any = m
	for _, p := range path {
		o, ok := cur.(map[string]any)
		if !ok {
			return 0
		}
		cur = o[p]
	}
	if o, ok := cur.(map[string]any); ok {
		cur = o["value"]
	}
	switch v := cur.(type) {
	case float64:
		return v
	case string:
		f := strings.Fields(v)
		if len(f) > 0 {
			if n, err := strconv.ParseFloat(f[0], 64); err == nil {
				return n
			}
		}
	}
	return 0
}

// decodeJSON decodes the first JSON value in out that parses, skipping the
// warnings vendor tools print before it.
func decodeJSON(out []byte, v any) error {
	rest := out
	var first error
	for tries := 0; tries < 32; tries++ {
		i := bytes.IndexAny(rest, "{[")
		if i < 0 {
			break
		}
		dec := json.NewDecoder(bytes.NewReader(rest[i:]))
		dec.UseNumber()
		err := dec.Decode(v)
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
		rest = rest[i+1:]
	}
	if first != nil {
		return first
	}
	return errors.New("no JSON value found")
}

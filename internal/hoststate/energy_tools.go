package hoststate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The vendor tools' power and energy queries. Formats, from the tools'
// documentation and source:
//
//   - nvidia-smi (query mode, every driver since 2019; total_energy_consumption
//     is NVML's nvmlDeviceGetTotalEnergyConsumption, mJ since the driver
//     loaded, Volta and newer; an older driver refuses the whole query with
//     `Field "total_energy_consumption" is not a valid field to query.`);
//   - xpu-smi 1.2–1.3 (`stats -d N -j`: XPUM_STATS_ENERGY is the
//     accumulated counter in J, `config -d N -j`: pl_card_sustain, else
//     pl_package_sustain, W; 1.2 printed power_limit);
//   - amd-smi 24.x/25.x (ROCm 6.2–7): `metric --power --energy --json`
//     gives power.socket_power and energy.total_energy_consumption (J) per
//     GPU, `static --limit --json` limit.socket_power (W); the top level is
//     a list in ROCm 6 and {"gpu_data":[…]} in ROCm 7.
var (
	// NvidiaEnergyArgs asks for power, limits and the energy counter.
	NvidiaEnergyArgs = []string{
		"--query-gpu=index,power.draw,power.limit,enforced.power.limit,total_energy_consumption",
		"--format=csv,noheader,nounits",
	}
	// NvidiaPowerArgs is NvidiaEnergyArgs without the counter, for
	// drivers that do not know it.
	NvidiaPowerArgs = []string{
		"--query-gpu=index,power.draw,power.limit,enforced.power.limit",
		"--format=csv,noheader,nounits",
	}
	// NvidiaPowerLimitArgs asks for the power limits alone.
	NvidiaPowerLimitArgs = []string{
		"--query-gpu=index,power.limit,enforced.power.limit",
		"--format=csv,noheader,nounits",
	}
	// AmdSMIPowerArgs asks amd-smi for power and the energy counter.
	AmdSMIPowerArgs = []string{"metric", "--power", "--energy", "--json"}
	// AmdSMILimitArgs asks amd-smi for the power cap.
	AmdSMILimitArgs = []string{"static", "--limit", "--json"}
)

// XPUSMIConfigArgs returns the arguments of `xpu-smi config -d ID -j`,
// whose power limit [ParseXPUSMIPowerLimit] reads.
func XPUSMIConfigArgs(id int) []string { return []string{"config", "-d", strconv.Itoa(id), "-j"} }

// csvNumbers splits one nvidia-smi CSV line into numbers; fields the
// driver cannot answer ("[N/A]", "[Not Supported]") are nil.
func csvNumbers(line string, n int) ([]*float64, error) {
	f := strings.Split(line, ",")
	if len(f) != n {
		return nil, fmt.Errorf("got %d fields, want %d", len(f), n)
	}
	out := make([]*float64, n)
	for i := range f {
		s := strings.TrimSpace(f[i])
		if strings.HasPrefix(s, "[") || s == "N/A" || s == "" {
			continue
		}
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("field %d %q is not a number", i+1, s)
		}
		out[i] = &x
	}
	return out, nil
}

// ParseNvidiaEnergy parses nvidia-smi run with [NvidiaEnergyArgs] (5
// fields: index, power.draw W, power.limit W, enforced.power.limit W,
// total_energy_consumption mJ) or [NvidiaPowerArgs] (the first 4):
//
//	0, 287.40, 450.00, 450.00, 81234567
//
// A GPU without a counter ("[N/A]") has its power integrated.
func ParseNvidiaEnergy(out []byte) ([]reading, error) {
	var rs []reading
	sc := bufio.NewScanner(bytes.NewReader(out))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		fields := strings.Count(line, ",") + 1
		if fields != 4 && fields != 5 {
			return nil, fmt.Errorf("parsing nvidia-smi output: line %d: got %d fields, want 5 (index, power.draw, power.limit, enforced.power.limit, total_energy_consumption): %q", n, fields, line)
		}
		v, err := csvNumbers(line, fields)
		if err != nil {
			return nil, fmt.Errorf("parsing nvidia-smi output: line %d: %w", n, err)
		}
		if v[0] == nil {
			return nil, fmt.Errorf("parsing nvidia-smi output: line %d: no index", n)
		}
		r := reading{name: "gpu" + strconv.Itoa(int(*v[0])), kind: "gpu", source: "nvidia-smi", powerW: v[1]}
		if fields == 5 && v[4] != nil {
			j := *v[4] / 1000
			r.counterJ = &j
		}
		if r.powerW == nil && r.counterJ == nil {
			r.unavailable = "nvidia-smi reports neither power.draw nor total_energy_consumption for this GPU"
		}
		rs = append(rs, r)
	}
	return rs, sc.Err()
}

// ParseNvidiaPowerLimits parses nvidia-smi run with
// [NvidiaPowerLimitArgs]: the set and the enforced limit of each GPU by
// index, W.
func ParseNvidiaPowerLimits(out []byte) (map[int][2]float64, error) {
	ls := map[int][2]float64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		v, err := csvNumbers(line, 3)
		if err != nil {
			return nil, fmt.Errorf("parsing nvidia-smi power limits: line %d: %w", n, err)
		}
		if v[0] == nil {
			return nil, fmt.Errorf("parsing nvidia-smi power limits: line %d: no index", n)
		}
		var l [2]float64
		for i := range l {
			if v[i+1] != nil {
				l[i] = *v[i+1]
			}
		}
		ls[int(*v[0])] = l
	}
	return ls, sc.Err()
}

// ParseXPUSMIEnergy reads a GPU's energy counter (XPUM_STATS_ENERGY, J)
// and power (XPUM_STATS_POWER, W) from `xpu-smi stats -d N -j`, summing
// the tiles when the device level lacks them.
func ParseXPUSMIEnergy(out []byte) (reading, error) {
	d, err := decodeXPUSMIStats(out)
	if err != nil {
		return reading{}, err
	}
	sum := func(ms []xpuMetric, typ string) (float64, bool) {
		for _, m := range ms {
			if m.Type == typ {
				if v, err := m.Value.Float64(); err == nil {
					return v, true
				}
			}
		}
		return 0, false
	}
	get := func(typ string) *float64 {
		if v, ok := sum(d.Device, typ); ok {
			return &v
		}
		var tot float64
		found := false
		for _, t := range d.Tiles {
			if v, ok := sum(t, typ); ok {
				tot += v
				found = true
			}
		}
		if found {
			return &tot
		}
		return nil
	}
	r := reading{name: "gpu" + strconv.Itoa(d.ID), kind: "gpu", source: "xpu-smi",
		counterJ: get("XPUM_STATS_ENERGY"), powerW: get("XPUM_STATS_POWER")}
	if r.counterJ == nil && r.powerW == nil {
		r.unavailable = "xpu-smi stats reports neither XPUM_STATS_ENERGY nor XPUM_STATS_POWER for this GPU"
	}
	return r, nil
}

// ParseXPUSMIPowerLimit reads the sustained power limit (W) from
// `xpu-smi config -d N -j`: pl_card_sustain, else pl_package_sustain
// (1.3), else power_limit (1.2). 0 when it has none.
func ParseXPUSMIPowerLimit(out []byte) (float64, error) {
	var d map[string]any
	if err := decodeJSON(out, &d); err != nil {
		return 0, fmt.Errorf("parsing xpu-smi config: %w", err)
	}
	if e, ok := d["error"]; ok {
		return 0, fmt.Errorf("xpu-smi config: %v", e)
	}
	for _, k := range []string{"pl_card_sustain", "pl_package_sustain", "power_limit"} {
		switch v := d[k].(type) {
		case json.Number:
			if f, err := v.Float64(); err == nil && f > 0 {
				return f, nil
			}
		case float64:
			if v > 0 {
				return v, nil
			}
		}
	}
	return 0, nil
}

// amdList returns the GPUs of an amd-smi JSON answer: a list (ROCm 6) or
// {"gpu_data":[…]} (ROCm 7).
func amdList(out []byte) ([]map[string]any, error) {
	var raw json.RawMessage
	if err := decodeJSON(out, &raw); err != nil {
		return nil, err
	}
	var list []map[string]any
	if len(raw) > 0 && raw[0] == '[' {
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, err
		}
		return list, nil
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	if d, ok := obj["gpu_data"].([]any); ok {
		for _, x := range d {
			if m, ok := x.(map[string]any); ok {
				list = append(list, m)
			}
		}
		return list, nil
	}
	if e, ok := obj["error"]; ok {
		return nil, fmt.Errorf("amd-smi reported an error: %v", e)
	}
	return nil, errors.New("neither a list nor gpu_data")
}

// ParseAmdSMIPower reads each GPU's socket power (W) and energy counter
// (energy.total_energy_consumption, J) from `amd-smi metric --power
// --energy --json`.
func ParseAmdSMIPower(out []byte) ([]reading, error) {
	list, err := amdList(out)
	if err != nil {
		return nil, fmt.Errorf("parsing amd-smi metric: %w", err)
	}
	var rs []reading
	for i, m := range list {
		idx := i
		if n, ok := m["gpu"].(float64); ok {
			idx = int(n)
		}
		r := reading{name: "gpu" + strconv.Itoa(idx), kind: "gpu", source: "amd-smi"}
		if w := amdValue(m, "power", "socket_power"); w > 0 {
			r.powerW = &w
		}
		if j, ok := amdNumber(m, "energy", "total_energy_consumption"); ok {
			r.counterJ = &j
		}
		if r.powerW == nil && r.counterJ == nil {
			r.unavailable = "amd-smi reports neither power.socket_power nor energy.total_energy_consumption for this GPU"
		}
		rs = append(rs, r)
	}
	return rs, nil
}

// ParseAmdSMILimits reads each GPU's power cap (limit.socket_power, W)
// from `amd-smi static --limit --json`, by GPU index.
func ParseAmdSMILimits(out []byte) (map[int]float64, error) {
	list, err := amdList(out)
	if err != nil {
		return nil, fmt.Errorf("parsing amd-smi static: %w", err)
	}
	ls := map[int]float64{}
	for i, m := range list {
		idx := i
		if n, ok := m["gpu"].(float64); ok {
			idx = int(n)
		}
		if w := amdValue(m, "limit", "socket_power"); w > 0 {
			ls[idx] = w
		}
	}
	return ls, nil
}

// amdNumber is amdValue that tells a 0 from a missing figure.
func amdNumber(m map[string]any, path ...string) (float64, bool) {
	var cur any = m
	for _, p := range path {
		o, ok := cur.(map[string]any)
		if !ok {
			return 0, false
		}
		cur = o[p]
	}
	if o, ok := cur.(map[string]any); ok {
		cur = o["value"]
	}
	switch v := cur.(type) {
	case float64:
		return v, true
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	case string:
		if f := strings.Fields(v); len(f) > 0 {
			if n, err := strconv.ParseFloat(f[0], 64); err == nil {
				return n, true
			}
		}
	}
	return 0, false
}

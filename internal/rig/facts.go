package rig

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Facts returns the view of the rig that an experiment's #requires is
// unified with:
//
//	{"gpu": {"name": string, "vendor": string, "count": int,
//	         "vramGB": number, "driver": string,
//	         "powerLimitW": number | [...number]},
//	 "cpu": {"name": string, "cores": int},
//	 "ramGB": number, "os": string, "kernel": string, "arch": string}
//
// gpu.name is [Rig.AcceleratorModelName]; gpu.vramGB the smallest GPU's
// memory in GiB, an int when whole so that `vramGB: 32` unifies (CUE's int
// and float do not); gpu.driver [Rig.AcceleratorDriverVersion]; gpu.vendor
// the vendors joined with " + " when they differ. ramGB is MemTotal in GiB,
// below the installed size (a 16 GB machine reports about 15.6), so
// requirements on it want a margin.
//
// Keys whose value is unknown are left out, so that a requirement on them
// fails as incomplete rather than as a mismatch; gpu.count is always present
// (0 without GPUs). Summary fields left empty are derived from
// [Rig.Accelerators] first.
func (r *Rig) Facts() map[string]any {
	s := *r
	s.fillSummary()
	gpu := map[string]any{"count": s.AcceleratorsPerNode}
	if s.AcceleratorModelName != "" {
		gpu["name"] = s.AcceleratorModelName
	}
	if v := joinUnique(s.Accelerators, func(g GPU) string { return g.Vendor }); v != "" {
		gpu["vendor"] = v
	}
	if s.AcceleratorMemoryCapacityGB > 0 {
		gpu["vramGB"] = cueNumber(s.AcceleratorMemoryCapacityGB)
	}
	if s.AcceleratorDriverVersion != "" {
		gpu["driver"] = s.AcceleratorDriverVersion
	}
	if pl := powerLimitFact(s.Accelerators); pl != nil {
		gpu["powerLimitW"] = pl
	}
	f := map[string]any{"gpu": gpu}
	cpu := map[string]any{}
	if s.HostProcessorModelName != "" {
		cpu["name"] = s.HostProcessorModelName
	}
	if s.HostProcessorCoreCount > 0 {
		cpu["cores"] = s.HostProcessorCoreCount
	}
	if len(cpu) > 0 {
		f["cpu"] = cpu
	}
	if s.HostMemoryCapacityGB > 0 {
		f["ramGB"] = cueNumber(s.HostMemoryCapacityGB)
	}
	for k, v := range map[string]string{"os": s.OperatingSystem, "kernel": s.Kernel, "arch": s.Arch} {
		if v != "" {
			f[k] = v
		}
	}
	return f
}

// powerLimitFact is gpu.powerLimitW: the GPUs' effective power limit
// when every GPU reports the same one, else the list of them in GPU order
// (a rig with one GPU capped meets no single number); nil when none
// reports one.
func powerLimitFact(gpus []GPU) any {
	var ws []any
	same := true
	for _, g := range gpus {
		w := g.EffectivePowerLimitW()
		if w <= 0 {
			same = false
			continue
		}
		if len(ws) > 0 && cueNumber(w) != ws[0] {
			same = false
		}
		ws = append(ws, cueNumber(w))
	}
	switch {
	case len(ws) == 0:
		return nil
	case same:
		return ws[0]
	}
	return ws
}

// cueNumber returns a whole number as an int and anything else as a
// float64. CUE's int and float kinds do not unify (`32 & 32.0` is an
// error), and a user writes `vramGB: 32`, not `vramGB: 32.0`; bounds such
// as `>=31.5` accept either kind.
func cueNumber(f float64) any {
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int(f)
	}
	return f
}

// fillSummary derives the MLPerf summary fields that are still empty from
// the per-GPU list. It never overwrites a field that is set.
func (r *Rig) fillSummary() {
	if r.AcceleratorsPerNode == 0 {
		r.AcceleratorsPerNode = len(r.Accelerators)
	}
	if r.AcceleratorModelName == "" {
		r.AcceleratorModelName = joinUnique(r.Accelerators, func(g GPU) string { return g.Name })
	}
	if r.AcceleratorMemoryCapacityGB == 0 {
		for _, g := range r.Accelerators {
			if g.MemoryGB > 0 && (r.AcceleratorMemoryCapacityGB == 0 || g.MemoryGB < r.AcceleratorMemoryCapacityGB) {
				r.AcceleratorMemoryCapacityGB = g.MemoryGB
			}
		}
	}
	if r.AcceleratorDriverVersion == "" {
		r.AcceleratorDriverVersion = joinUnique(r.Accelerators, func(g GPU) string { return g.DriverVersion })
	}
}

// joinUnique joins the distinct non-empty values of field over gpus, in
// order of first appearance, with " + ".
func joinUnique(gpus []GPU, field func(GPU) string) string {
	var out []string
	seen := map[string]bool{}
	for _, g := range gpus {
		if v := field(g); v != "" && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return strings.Join(out, " + ")
}

// Summary describes the rig on one line for logs and diffs, e.g.
// "4× Intel Arc Pro B70 32 GB, AMD EPYC 9015, 16 GB, Ubuntu 24.04.4 LTS":
// the GPUs grouped by model, the CPU's short name, RAM rounded to whole GiB
// and the OS. Unknown parts are left out; a rig without GPUs starts with
// "no GPU".
func (r *Rig) Summary() string {
	var parts []string
	parts = append(parts, r.gpuSummary())
	if c := ShortCPUName(r.HostProcessorModelName); c != "" {
		parts = append(parts, c)
	}
	if r.HostMemoryCapacityGB > 0 {
		parts = append(parts, fmt.Sprintf("%.0f GB", math.Round(r.HostMemoryCapacityGB)))
	}
	if r.OperatingSystem != "" {
		parts = append(parts, r.OperatingSystem)
	}
	return strings.Join(parts, ", ")
}

func (r *Rig) gpuSummary() string {
	type group struct {
		label string
		mem   float64
		n     int
	}
	var groups []*group
	for _, g := range r.Accelerators {
		label := g.Name
		if label == "" && g.PCIID != "" {
			label = g.Vendor + " GPU " + g.PCIID
		}
		if label == "" {
			label = strings.TrimSpace(g.Vendor + " GPU")
		}
		var found *group
		for _, gr := range groups {
			if gr.label == label && gr.mem == g.MemoryGB {
				found = gr
				break
			}
		}
		if found == nil {
			found = &group{label: label, mem: g.MemoryGB}
			groups = append(groups, found)
		}
		found.n++
	}
	if len(groups) == 0 && r.AcceleratorsPerNode > 0 {
		name := r.AcceleratorModelName
		if name == "" {
			name = "GPU"
		}
		groups = append(groups, &group{label: name, mem: r.AcceleratorMemoryCapacityGB, n: r.AcceleratorsPerNode})
	}
	if len(groups) == 0 {
		return "no GPU"
	}
	out := make([]string, len(groups))
	for i, gr := range groups {
		out[i] = fmt.Sprintf("%d× %s", gr.n, gr.label)
		if gr.mem > 0 {
			out[i] += " " + strconv.FormatFloat(gr.mem, 'f', -1, 64) + " GB"
		}
	}
	return strings.Join(out, " + ")
}

var (
	cpuClockRE = regexp.MustCompile(`(?i)\s+(CPU\s+)?@\s*[0-9.]+\s*[GM]Hz.*$`)
	cpuCoresRE = regexp.MustCompile(`(?i)\s+[0-9]+-Core(\s+Processor)?$`)
	cpuGfxRE   = regexp.MustCompile(`(?i)\s+(with|w/)\s+Radeon.*$`)
)

// ShortCPUName shortens a /proc/cpuinfo model name for [Rig.Summary]:
// "AMD EPYC 9015 8-Core Processor" becomes "AMD EPYC 9015" and
// "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz" becomes "Intel Xeon Gold 6338".
// The full name stays in [Rig.HostProcessorModelName].
func ShortCPUName(s string) string {
	for _, mark := range []string{"(R)", "(r)", "(TM)", "(tm)", "®", "™"} {
		s = strings.ReplaceAll(s, mark, " ")
	}
	s = strings.Join(strings.Fields(s), " ")
	s = cpuClockRE.ReplaceAllString(s, "")
	s = cpuGfxRE.ReplaceAllString(s, "")
	s = cpuCoresRE.ReplaceAllString(s, "")
	s = strings.TrimSuffix(s, " Processor")
	s = strings.TrimSuffix(s, " CPU")
	return strings.TrimSpace(s)
}

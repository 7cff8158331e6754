package rig

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// NvidiaSMIArgs are the arguments [ParseNvidiaSMI] expects nvidia-smi to
// have been run with: one CSV line per GPU, no header, no units.
var NvidiaSMIArgs = []string{
	"--query-gpu=index,uuid,name,pci.bus_id,memory.total,driver_version,compute_cap",
	"--format=csv,noheader,nounits",
}

// ParseNvidiaSMI parses the output of nvidia-smi run with [NvidiaSMIArgs]:
//
//	0, GPU-3b5f…-9c1e, NVIDIA GeForce RTX 4090, 00000000:01:00.0, 24564, 570.86.15, 8.9
//
// Fields a driver cannot answer read "[N/A]" or "[Not Supported]" and are
// left empty. memory.total is MiB. Blank lines are skipped; a line with the
// wrong number of fields, or whose index or memory is not a number, is an
// error naming the line.
func ParseNvidiaSMI(out []byte) ([]GPU, error) {
	var gpus []GPU
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) != 7 {
			return nil, fmt.Errorf("parsing nvidia-smi output: line %d: got %d fields, want 7 (index, uuid, name, pci.bus_id, memory.total, driver_version, compute_cap)", n, len(f))
		}
		for i := range f {
			f[i] = clean(f[i])
		}
		g := GPU{Vendor: "nvidia", Source: "nvidia-smi"}
		if f[0] != "" {
			idx, err := strconv.Atoi(f[0])
			if err != nil || idx < 0 {
				return nil, fmt.Errorf("parsing nvidia-smi output: line %d: index %q is not a number", n, f[0])
			}
			g.Index = idx
		} else {
			g.Index = len(gpus)
		}
		g.UUID = f[1]
		g.setName(f[2])
		g.PCIBusID = normalizeBDF(f[3])
		if f[4] != "" {
			mib, err := strconv.ParseFloat(f[4], 64)
			if err != nil || mib < 0 {
				return nil, fmt.Errorf("parsing nvidia-smi output: line %d: memory.total %q is not a number of MiB", n, f[4])
			}
			g.MemoryGB = gib(mib * (1 << 20))
		}
		g.DriverVersion = f[5]
		g.Arch = smArch(f[6])
		gpus = append(gpus, g)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("parsing nvidia-smi output: %w", err)
	}
	return gpus, nil
}

// smArch turns a compute capability "8.9" into "sm_89"; anything else
// becomes "".
func smArch(cc string) string {
	major, minor, ok := strings.Cut(cc, ".")
	if !ok || !allDigits(major) || !allDigits(minor) {
		return ""
	}
	return "sm_" + major + minor
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

var nvidiaVersionRE = regexp.MustCompile(`^[0-9]+\.[0-9]+(\.[0-9]+)*$`)

// ParseNvidiaVersion returns the driver version from
// /proc/driver/nvidia/version, whose first line reads, for the proprietary
// and the open kernel modules:
//
//	NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15  Fri Jan 24 …
//	NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build  (…)  …
//
// It is an error when no NVRM line with a version is found.
func ParseNvidiaVersion(b []byte) (string, error) {
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "NVRM version:")
		if !ok {
			continue
		}
		for _, w := range strings.Fields(rest) {
			if nvidiaVersionRE.MatchString(w) {
				return w, nil
			}
		}
		return "", fmt.Errorf("parsing /proc/driver/nvidia/version: no version number in %q", strings.TrimSpace(line))
	}
	return "", fmt.Errorf("parsing /proc/driver/nvidia/version: no \"NVRM version:\" line")
}

// ParseNvidiaGPUInformation parses /proc/driver/nvidia/gpus/<bdf>/information,
// "Key: value" lines such as
//
//	Model: 		 NVIDIA GeForce RTX 4090
//	GPU UUID: 	 GPU-3b5f…
//	Bus Location: 	 0000:01:00.0
//	Device Minor: 	 0
//
// The file has no memory size. It is an error when there is no Model line.
func ParseNvidiaGPUInformation(b []byte) (GPU, error) {
	g := GPU{Vendor: "nvidia", Source: "procfs", Driver: "nvidia"}
	model := false
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = clean(v)
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "model":
			g.setName(v)
			model = v != ""
		case "gpu uuid":
			g.UUID = v
		case "bus location":
			g.PCIBusID = normalizeBDF(v)
		case "device minor":
			if n, err := strconv.Atoi(v); err == nil && n >= 0 {
				g.Index = n
			}
		}
	}
	if !model {
		return GPU{}, fmt.Errorf("parsing nvidia gpu information: no Model line")
	}
	return g, nil
}

package rig

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// CPUInfo is what [ParseCPUInfo] finds in /proc/cpuinfo.
type CPUInfo struct {
	// ModelName is the first processor's "model name", e.g. "AMD EPYC 9015
	// 8-Core Processor" (what llama-bench reports as cpu_info). Where the
	// architecture has no such line it falls back to "Processor", "cpu
	// model", "cpu" or "Model".
	ModelName string
	// LogicalCPUs counts the "processor" entries.
	LogicalCPUs int
}

// cpuNameKeys are the /proc/cpuinfo keys that carry a model name, best
// first: x86, old ARM, MIPS, POWER, Raspberry Pi.
var cpuNameKeys = []string{"model name", "processor name", "cpu model", "cpu", "model"}

// ParseCPUInfo parses /proc/cpuinfo. It is an error when the file has no
// "processor" entry.
func ParseCPUInfo(b []byte) (CPUInfo, error) {
	var info CPUInfo
	found := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k = strings.ToLower(strings.TrimSpace(k))
		v = strings.TrimSpace(v)
		if k == "processor" {
			if _, err := strconv.Atoi(v); err == nil {
				info.LogicalCPUs++
				continue
			}
			// Old ARM kernels: "Processor : ARMv7 Processor rev 4 (v7l)".
			k = "processor name"
		}
		if _, dup := found[k]; !dup && v != "" {
			found[k] = v
		}
	}
	if err := sc.Err(); err != nil {
		return CPUInfo{}, fmt.Errorf("parsing /proc/cpuinfo: %w", err)
	}
	if info.LogicalCPUs == 0 {
		return CPUInfo{}, fmt.Errorf("parsing /proc/cpuinfo: no processor entries")
	}
	for _, k := range cpuNameKeys {
		if v := found[k]; v != "" {
			info.ModelName = strings.Join(strings.Fields(v), " ")
			break
		}
	}
	return info, nil
}

// ParseMemInfo returns MemTotal from /proc/meminfo in bytes
// ("MemTotal:       16318412 kB"). It is an error when the line is missing
// or malformed.
func ParseMemInfo(b []byte) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.TrimSpace(k) != "MemTotal" {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 || len(f) > 2 {
			return 0, fmt.Errorf("parsing /proc/meminfo: MemTotal: malformed value %q", strings.TrimSpace(v))
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing /proc/meminfo: MemTotal: %q is not a number", f[0])
		}
		mult := uint64(1)
		if len(f) == 2 {
			switch strings.ToLower(f[1]) {
			case "kb":
				mult = 1024
			case "b":
			default:
				return 0, fmt.Errorf("parsing /proc/meminfo: MemTotal: unknown unit %q", f[1])
			}
		}
		if n > (1<<64-1)/mult {
			return 0, fmt.Errorf("parsing /proc/meminfo: MemTotal: %s %s overflows", f[0], f[1])
		}
		return n * mult, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("parsing /proc/meminfo: %w", err)
	}
	return 0, fmt.Errorf("parsing /proc/meminfo: no MemTotal line")
}

// ParseOSRelease parses os-release(5): KEY=value lines, values optionally in
// double or single quotes with backslash escapes; comments and malformed
// lines are skipped. Use PRETTY_NAME, then NAME and VERSION.
func ParseOSRelease(b []byte) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			continue
		}
		m[k] = unquoteShell(v)
	}
	return m
}

// unquoteShell undoes os-release's shell-style quoting of one value.
func unquoteShell(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		q := v[0]
		v = v[1 : len(v)-1]
		if q == '\'' {
			return v
		}
	}
	var sb strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) {
			i++
		}
		sb.WriteByte(v[i])
	}
	return sb.String()
}

// osName picks the display name from parsed os-release fields.
func osName(m map[string]string) string {
	if p := m["PRETTY_NAME"]; p != "" {
		return p
	}
	return strings.TrimSpace(m["NAME"] + " " + m["VERSION"])
}

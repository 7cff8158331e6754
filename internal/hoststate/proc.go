package hoststate

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// userHZ is the unit of the CPU times in /proc/stat and /proc/<pid>/stat:
// USER_HZ, 100 on every architecture Linux runs on today.
const userHZ = 100

// ParseLoadavg reads /proc/loadavg ("0.52 0.58 0.59 1/467 12345").
func ParseLoadavg(b []byte) (load1, load5 float64, err error) {
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, 0, fmt.Errorf("parsing /proc/loadavg: got %d fields, want at least 2", len(f))
	}
	if load1, err = strconv.ParseFloat(f[0], 64); err != nil {
		return 0, 0, fmt.Errorf("parsing /proc/loadavg: 1-minute load %q is not a number", f[0])
	}
	if load5, err = strconv.ParseFloat(f[1], 64); err != nil {
		return 0, 0, fmt.Errorf("parsing /proc/loadavg: 5-minute load %q is not a number", f[1])
	}
	return load1, load5, nil
}

// ParseMeminfo reads MemAvailable and SwapTotal − SwapFree from
// /proc/meminfo, in MiB.
func ParseMeminfo(b []byte) (availMiB, swapUsedMiB float64) {
	var swapTotal, swapFree float64
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		if len(f) > 1 && f[1] == "kB" {
			n /= 1024
		}
		switch k {
		case "MemAvailable":
			availMiB = n
		case "SwapTotal":
			swapTotal = n
		case "SwapFree":
			swapFree = n
		}
	}
	return round(availMiB, 0), round(max(swapTotal-swapFree, 0), 0)
}

// ParseProcStat returns the machine's busy CPU time in seconds from the
// first line of /proc/stat: user, nice, system, irq, softirq and steal
// (guest time is already inside user and nice; idle and iowait are not
// busy).
func ParseProcStat(b []byte) (float64, error) {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 5 || f[0] != "cpu" {
		return 0, fmt.Errorf("parsing /proc/stat: first line is not the cpu total")
	}
	var busy float64
	for i, v := range f[1:] {
		if i == 3 || i == 4 || i >= 8 { // idle, iowait, guest, guest_nice
			continue
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing /proc/stat: field %d %q is not a number", i+1, v)
		}
		busy += n
	}
	return busy / userHZ, nil
}

// ParsePidStat returns a process's CPU time in seconds from
// /proc/<pid>/stat: its utime and stime plus its waited-for children's
// cutime and cstime (fields 14 to 17), so that the time of a worker the
// process started and reaped counts too. The command name in parentheses
// may hold spaces and parentheses, so fields are counted after the last ')'.
func ParsePidStat(b []byte) (float64, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("parsing /proc/<pid>/stat: no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime is field 14, so f[11].
	if len(f) < 15 {
		return 0, fmt.Errorf("parsing /proc/<pid>/stat: got %d fields after the name, want at least 15", len(f))
	}
	var t float64
	for _, v := range f[11:15] {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing /proc/<pid>/stat: %q is not a number", v)
		}
		t += n
	}
	return t / userHZ, nil
}

func readBusySeconds(root string) (float64, bool) {
	b, err := os.ReadFile(join(root, "/proc/stat"))
	if err != nil {
		return 0, false
	}
	v, err := ParseProcStat(b)
	return v, err == nil
}

func readProcCPU(root string, pid int) (float64, bool) {
	b, err := os.ReadFile(join(root, "/proc/"+strconv.Itoa(pid)+"/stat"))
	if err != nil {
		return 0, false
	}
	v, err := ParsePidStat(b)
	return v, err == nil
}

// readCPUFreq reads the governors and current clocks of every CPU from
// cpufreq, falling back on /proc/cpuinfo's "cpu MHz" lines for the clocks
// (virtual machines have no cpufreq).
func readCPUFreq(root string) (governor string, mhzMin, mhzMax float64) {
	dirs, _ := filepath.Glob(join(root, "/sys/devices/system/cpu/cpu[0-9]*/cpufreq"))
	govs := map[string]bool{}
	for _, d := range dirs {
		if b, err := os.ReadFile(filepath.Join(d, "scaling_governor")); err == nil {
			if g := strings.TrimSpace(string(b)); g != "" {
				govs[g] = true
			}
		}
		if b, err := os.ReadFile(filepath.Join(d, "scaling_cur_freq")); err == nil {
			if khz, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64); err == nil && khz > 0 {
				mhzMin, mhzMax = minNonZero(mhzMin, khz/1000), max(mhzMax, khz/1000)
			}
		}
	}
	var gs []string
	for g := range govs {
		gs = append(gs, g)
	}
	sort.Strings(gs)
	governor = strings.Join(gs, ",")
	if mhzMax == 0 {
		if b, err := os.ReadFile(join(root, "/proc/cpuinfo")); err == nil {
			mhzMin, mhzMax = ParseCPUInfoMHz(b)
		}
	}
	return governor, round(mhzMin, 0), round(mhzMax, 0)
}

// ParseCPUInfoMHz returns the lowest and highest "cpu MHz" of
// /proc/cpuinfo (0, 0 when it has none, as on arm64).
func ParseCPUInfoMHz(b []byte) (lo, hi float64) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.TrimSpace(k) != "cpu MHz" {
			continue
		}
		if n, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && n > 0 {
			lo, hi = minNonZero(lo, n), max(hi, n)
		}
	}
	return lo, hi
}

// readThermal reads every thermal zone whose temp is readable
// (millidegrees Celsius); zones that fail to read (common in virtual
// machines and for some ACPI zones) are left out.
func readThermal(root string) []Thermal {
	dirs, _ := filepath.Glob(join(root, "/sys/class/thermal/thermal_zone[0-9]*"))
	var out []Thermal
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "temp"))
		if err != nil {
			continue
		}
		milli, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
		if err != nil || milli <= -273000 {
			continue
		}
		t := Thermal{Zone: filepath.Base(d), Celsius: round(milli/1000, 1)}
		if b, err := os.ReadFile(filepath.Join(d, "type")); err == nil {
			t.Type = strings.TrimSpace(string(b))
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return zoneNum(out[i].Zone) < zoneNum(out[j].Zone) })
	return out
}

func zoneNum(z string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(z, "thermal_zone"))
	return n
}

func sortStrings(s []string) { sort.Strings(s) }

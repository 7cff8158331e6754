package hoststate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Energy is what the GPUs and the CPU packages drew while the engine ran,
// as recorded in a result's "machine.energy": each domain's energy, average
// and peak power, its power limit, and how it was measured.
//
// Every domain says its method:
//
//   - "counter": the difference of an energy counter the hardware keeps
//     (nvidia-smi's total_energy_consumption, xpu-smi's
//     XPUM_STATS_ENERGY, amd-smi's energy.total_energy_consumption, RAPL's
//     energy_uj, its wrap-around at max_energy_range_uj included);
//   - "integrated": power samples integrated over time (trapezoids), for a
//     tool that reports power but no counter; it misses what happens
//     between samples;
//   - "unavailable": nothing could be read, and Why says why (RAPL not
//     exposed in a virtual machine, energy_uj readable by root only).
type Energy struct {
	// IntervalMs is the time between power samples.
	IntervalMs int `json:"intervalMs"`
	// Samples is how many times the sources were read.
	Samples int `json:"samples"`
	// WallSeconds is the window the samples cover.
	WallSeconds float64 `json:"wallSeconds"`
	// SamplerSeconds is the wall time spent reading the sources: the
	// sampler's own cost (the vendor tools it runs are rigor's children,
	// so their CPU time is counted as the engine's in the machine state).
	SamplerSeconds float64 `json:"samplerSeconds"`
	// Domains are the GPUs, CPU packages and DRAM, measured or not.
	Domains []PowerDomain `json:"domains,omitempty"`
	// Timed is the energy of the engine's timed section, set by the
	// runner from the engine's own timings ([Sampler.TimedEnergy]).
	Timed *TimedEnergy `json:"timed,omitempty"`
	// Notes says what failed while sampling (a tool that stopped
	// answering).
	Notes []string `json:"notes,omitempty"`
}

// Methods of a [PowerDomain].
const (
	MethodCounter     = "counter"
	MethodIntegrated  = "integrated"
	MethodUnavailable = "unavailable"
)

// PowerDomain is one GPU, CPU package or DRAM over the window.
type PowerDomain struct {
	// Name is "gpu0" (the vendor tool's index), "package-0", "dram-0".
	Name string `json:"name"`
	// Kind is "gpu", "cpu-package" or "dram".
	Kind string `json:"kind"`
	// Source is the tool or interface: nvidia-smi, xpu-smi, amd-smi,
	// rocm-smi, rapl.
	Source string `json:"source"`
	// Method is counter, integrated or unavailable.
	Method string `json:"method"`
	// Why says why a domain is unavailable, or what limits a method.
	Why string `json:"why,omitempty"`
	// Joules is the energy over the window.
	Joules float64 `json:"joules,omitempty"`
	// AvgW is Joules over the window; PeakW the highest power sampled
	// (for a counter, the highest average between two samples).
	AvgW  float64 `json:"avgW,omitempty"`
	PeakW float64 `json:"peakW,omitempty"`
	// PowerLimitW is the power limit set (nvidia-smi's power.limit,
	// xpu-smi's power_limit, amd-smi's limit.socket_power);
	// EnforcedPowerLimitW the one the driver enforces after every
	// limiter (nvidia-smi's enforced.power.limit). 0: not reported.
	PowerLimitW         float64 `json:"powerLimitW,omitempty"`
	EnforcedPowerLimitW float64 `json:"enforcedPowerLimitW,omitempty"`
}

// TimedEnergy is the energy of the engine's timed section.
type TimedEnergy struct {
	// Seconds is the length of the section; it ends when the engine
	// exited.
	Seconds float64 `json:"seconds"`
	// From says how the section was found: "the engine's repetitions
	// (tokens over tok/s)", or "the whole run" when the engine's timings
	// do not give it (model load included).
	From string `json:"from"`
	// Joules is the energy of the measured domains over the section, AvgW
	// Joules over Seconds.
	Joules float64 `json:"joules"`
	AvgW   float64 `json:"avgW"`
	// Domains names the domains Joules adds up, with their methods:
	// "gpu0 (counter)".
	Domains []string `json:"domains"`
}

// Measured reports whether any domain was measured.
func (e *Energy) Measured() bool {
	if e == nil {
		return false
	}
	for _, d := range e.Domains {
		if d.Method != MethodUnavailable {
			return true
		}
	}
	return false
}

// PowerLimits returns the GPUs' power limits as "gpu0=250 W, gpu1=450
// W" (the enforced limit when the tool reports one, else the one set), or
// "" when no GPU reported one: what the comparability guard compares.
func (e *Energy) PowerLimits() string {
	if e == nil {
		return ""
	}
	var parts []string
	for _, d := range e.Domains {
		if d.Kind != "gpu" {
			continue
		}
		w := d.EnforcedPowerLimitW
		if w == 0 {
			w = d.PowerLimitW
		}
		if w > 0 {
			parts = append(parts, d.Name+"="+strconv.FormatFloat(w, 'f', -1, 64)+" W")
		}
	}
	return strings.Join(parts, ", ")
}

// DefaultPowerInterval is the time between power samples.
const DefaultPowerInterval = 100 * time.Millisecond

// defaultMaxPoints bounds each domain's series: past it, every other point
// is dropped, so memory stays bounded however long the run.
const defaultMaxPoints = 2048

// point is a domain's cumulative energy at a time (seconds since the
// first sample).
type point struct{ t, j float64 }

// series is one domain's cumulative energy.
type series struct {
	dom      PowerDomain
	points   []point
	last     float64 // last raw counter (J) or power (W)
	lastT    float64
	have     bool
	cum      float64
	maxRange float64 // a counter's wrap-around, J (RAPL's max_energy_range_uj)
	stride   int     // keep every stride-th point (doubles when full)
	skipped  int
}

// reading is one domain's value at one sample.
type reading struct {
	name, kind, source string
	counterJ           *float64 // a cumulative counter, J
	powerW             *float64
	maxRangeJ          float64
	unavailable        string
}

// powerMeter reads every power source once per tick and keeps each
// domain's cumulative energy.
type powerMeter struct {
	opts      Options
	sysRoot   string
	maxPoints int
	t0        time.Time
	started   bool
	series    map[string]*series
	order     []string
	limits    map[string][2]float64 // gpu name → set, enforced
	notes     map[string]bool
	samples   int
	busy      time.Duration
	lastT     float64
	noNvidiaE bool // the driver does not know total_energy_consumption
	xpuIDs    []int
	xpuDone   bool
}

func newPowerMeter(opts Options) *powerMeter {
	m := &powerMeter{opts: opts, series: map[string]*series{}, limits: map[string][2]float64{}, notes: map[string]bool{}}
	m.sysRoot = opts.SysRoot
	if m.sysRoot == "" {
		m.sysRoot = join(opts.Root, "/sys")
	}
	m.maxPoints = opts.MaxPowerPoints
	if m.maxPoints <= 0 {
		m.maxPoints = defaultMaxPoints
	}
	return m
}

// readLimits asks each GPU tool for its power limits once, before the run.
func (m *powerMeter) readLimits(ctx context.Context) {
	look := lookPath(m.opts)
	if _, err := look("nvidia-smi"); err == nil {
		if out, err := m.call(ctx, "nvidia-smi", NvidiaPowerLimitArgs...); err == nil {
			if ls, err := ParseNvidiaPowerLimits(out); err == nil {
				for i, l := range ls {
					m.limits["gpu"+strconv.Itoa(i)] = l
				}
			} else {
				m.notes["nvidia-smi: "+err.Error()] = true
			}
		} else {
			m.notes["nvidia-smi power limits: "+err.Error()] = true
		}
	}
	if _, err := look("amd-smi"); err == nil {
		if out, err := m.call(ctx, "amd-smi", AmdSMILimitArgs...); err == nil {
			if ls, err := ParseAmdSMILimits(out); err == nil {
				for idx, w := range ls {
					m.limits["gpu"+strconv.Itoa(idx)] = [2]float64{w, 0}
				}
			} else {
				m.notes["amd-smi: "+err.Error()] = true
			}
		} else {
			m.notes["amd-smi power limits: "+err.Error()] = true
		}
	}
	if _, err := look("xpu-smi"); err == nil {
		for _, id := range m.xpuDevices(ctx) {
			out, err := m.call(ctx, "xpu-smi", XPUSMIConfigArgs(id)...)
			if err == nil {
				var w float64
				if w, err = ParseXPUSMIPowerLimit(out); err == nil && w > 0 {
					m.limits["gpu"+strconv.Itoa(id)] = [2]float64{w, 0}
				}
			}
			if err != nil {
				m.notes["xpu-smi power limit: "+err.Error()] = true
			}
		}
	}
}

func (m *powerMeter) call(ctx context.Context, name string, args ...string) ([]byte, error) {
	run := m.opts.Run
	if run == nil {
		run = runCommand
	}
	timeout := m.opts.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	c, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return run(c, name, args...)
}

func (m *powerMeter) xpuDevices(ctx context.Context) []int {
	if m.xpuDone {
		return m.xpuIDs
	}
	m.xpuDone = true
	out, err := m.call(ctx, "xpu-smi", XPUSMIDiscoveryArgs...)
	if err == nil {
		m.xpuIDs, err = ParseXPUSMIDiscovery(out)
	}
	if err != nil {
		m.notes["xpu-smi: "+err.Error()] = true
	}
	return m.xpuIDs
}

// tick reads every source once at now.
func (m *powerMeter) tick(ctx context.Context, now time.Time) {
	begin := time.Now()
	rs := m.read(ctx)
	m.busy += time.Since(begin)
	if !m.started {
		m.t0, m.started = now, true
	}
	t := now.Sub(m.t0).Seconds()
	m.lastT = t
	m.samples++
	for _, r := range rs {
		m.add(r, t)
	}
}

// read reads the GPU tools and RAPL.
func (m *powerMeter) read(ctx context.Context) []reading {
	var rs []reading
	look := lookPath(m.opts)
	if _, err := look("nvidia-smi"); err == nil {
		rs = append(rs, m.readNvidia(ctx)...)
	}
	if _, err := look("amd-smi"); err == nil {
		out, err := m.call(ctx, "amd-smi", AmdSMIPowerArgs...)
		var got []reading
		if err == nil {
			got, err = ParseAmdSMIPower(out)
		}
		if err != nil {
			m.notes["amd-smi: "+err.Error()] = true
		}
		rs = append(rs, got...)
	} else if _, err := look("rocm-smi"); err == nil {
		out, err := m.call(ctx, "rocm-smi", RocmSMIArgs...)
		var gs []GPU
		if err == nil {
			gs, err = ParseRocmSMI(out)
		}
		if err != nil {
			m.notes["rocm-smi: "+err.Error()] = true
		}
		for _, g := range gs {
			if g.PowerW > 0 {
				w := g.PowerW
				rs = append(rs, reading{name: "gpu" + strconv.Itoa(g.Index), kind: "gpu", source: "rocm-smi", powerW: &w})
			}
		}
	}
	if _, err := look("xpu-smi"); err == nil {
		for _, id := range m.xpuDevices(ctx) {
			out, err := m.call(ctx, "xpu-smi", XPUSMIStatsArgs(id)...)
			var r reading
			if err == nil {
				r, err = ParseXPUSMIEnergy(out)
			}
			if err != nil {
				m.notes["xpu-smi: "+err.Error()] = true
				continue
			}
			rs = append(rs, r)
		}
	}
	return append(rs, ReadRAPL(m.sysRoot)...)
}

func (m *powerMeter) readNvidia(ctx context.Context) []reading {
	if !m.noNvidiaE {
		out, err := m.call(ctx, "nvidia-smi", NvidiaEnergyArgs...)
		if err == nil {
			rs, perr := ParseNvidiaEnergy(out)
			if perr == nil {
				return rs
			}
			err = perr
		}
		// A driver that does not know total_energy_consumption refuses
		// the whole query: ask for power alone from then on.
		if !strings.Contains(err.Error()+string(out), "not a valid field") {
			m.notes["nvidia-smi: "+err.Error()] = true
			return nil
		}
		m.noNvidiaE = true
	}
	out, err := m.call(ctx, "nvidia-smi", NvidiaPowerArgs...)
	var rs []reading
	if err == nil {
		rs, err = ParseNvidiaEnergy(out)
	}
	if err != nil {
		m.notes["nvidia-smi: "+err.Error()] = true
	}
	return rs
}

// add folds one reading at t into its domain's series.
func (m *powerMeter) add(r reading, t float64) {
	s := m.series[r.name]
	if s == nil {
		s = &series{dom: PowerDomain{Name: r.name, Kind: r.kind, Source: r.source}, stride: 1}
		m.series[r.name] = s
		m.order = append(m.order, r.name)
	}
	switch {
	case r.counterJ != nil:
		v := *r.counterJ
		s.dom.Method = MethodCounter
		if r.maxRangeJ > 0 {
			s.maxRange = r.maxRangeJ
		}
		if s.have {
			d := v - s.last
			if d < 0 {
				if s.maxRange > 0 {
					d += s.maxRange // the counter wrapped
				} else {
					d = 0 // the counter was reset (a driver reload)
					m.notes[r.name+": its energy counter went back (reset); that interval counts as 0 J"] = true
				}
			}
			if dt := t - s.lastT; dt > 0 {
				s.dom.PeakW = max(s.dom.PeakW, d/dt)
			}
			s.cum += d
		}
		s.last, s.lastT, s.have = v, t, true
		if r.powerW != nil {
			s.dom.PeakW = max(s.dom.PeakW, *r.powerW)
		}
	case r.powerW != nil:
		w := *r.powerW
		if s.dom.Method == "" || s.dom.Method == MethodUnavailable {
			s.dom.Method = MethodIntegrated
		}
		if s.have {
			s.cum += (s.last + w) / 2 * (t - s.lastT)
		}
		s.last, s.lastT, s.have = w, t, true
		s.dom.PeakW = max(s.dom.PeakW, w)
	default:
		if s.dom.Method == "" {
			s.dom.Method = MethodUnavailable
			s.dom.Why = r.unavailable
		}
		return
	}
	s.skipped++
	if s.skipped < s.stride && len(s.points) > 0 {
		return
	}
	s.skipped = 0
	s.points = append(s.points, point{t, s.cum})
	if len(s.points) >= m.maxPoints {
		// Keep every other point, the first and last included: memory
		// stays bounded and the series keeps its span.
		kept := s.points[:0]
		for i, p := range s.points {
			if i%2 == 0 || i == len(s.points)-1 {
				kept = append(kept, p)
			}
		}
		s.points = kept
		s.stride *= 2
	}
}

// finish keeps the last value of every series as a point (a thinned
// series may have skipped it) and summarises the domains.
func (m *powerMeter) finish(interval time.Duration) *Energy {
	e := &Energy{IntervalMs: int(interval / time.Millisecond), Samples: m.samples,
		WallSeconds: round(m.lastT, 3), SamplerSeconds: round(m.busy.Seconds(), 3)}
	for _, name := range m.order {
		s := m.series[name]
		if s.have && (len(s.points) == 0 || s.points[len(s.points)-1].t != s.lastT) {
			s.points = append(s.points, point{s.lastT, s.cum})
		}
		d := s.dom
		if s.have {
			d.Joules = round(s.cum, 3)
			if m.lastT > 0 {
				d.AvgW = round(s.cum/m.lastT, 2)
			}
			d.PeakW = round(d.PeakW, 2)
			if d.Method == MethodIntegrated {
				d.Why = "power sampled every " + interval.String() + " and integrated; the tool has no energy counter"
			}
		}
		if l, ok := m.limits[name]; ok {
			d.PowerLimitW, d.EnforcedPowerLimitW = l[0], l[1]
		}
		e.Domains = append(e.Domains, d)
	}
	// A GPU whose limits were read but that gave no power at all.
	for name, l := range m.limits {
		if _, ok := m.series[name]; !ok {
			e.Domains = append(e.Domains, PowerDomain{Name: name, Kind: "gpu", Method: MethodUnavailable,
				Why: "its tool reported a power limit but no power or energy", PowerLimitW: l[0], EnforcedPowerLimitW: l[1]})
		}
	}
	sort.SliceStable(e.Domains, func(i, j int) bool { return domainOrder(e.Domains[i]) < domainOrder(e.Domains[j]) })
	for n := range m.notes {
		e.Notes = append(e.Notes, n)
	}
	sort.Strings(e.Notes)
	return e
}

func domainOrder(d PowerDomain) string {
	k := map[string]string{"gpu": "0", "cpu-package": "1", "dram": "2"}[d.Kind]
	if k == "" {
		k = "3"
	}
	n := strings.TrimLeft(d.Name, "abcdefghijklmnopqrstuvwxyz-")
	if len(n) < 4 {
		n = strings.Repeat("0", 4-len(n)) + n
	}
	return k + n + d.Name
}

// between returns the energy of s between times a and b (seconds since
// the first sample), interpolating linearly between points.
func (s *series) between(a, b float64) float64 {
	return s.at(b) - s.at(a)
}

func (s *series) at(t float64) float64 {
	ps := s.points
	if len(ps) == 0 {
		return 0
	}
	if t <= ps[0].t {
		return ps[0].j
	}
	if t >= ps[len(ps)-1].t {
		return ps[len(ps)-1].j
	}
	i := sort.Search(len(ps), func(i int) bool { return ps[i].t >= t })
	p, q := ps[i-1], ps[i]
	if q.t == p.t {
		return q.j
	}
	return p.j + (q.j-p.j)*(t-p.t)/(q.t-p.t)
}

// timed returns the energy of the seconds before end (seconds since the
// first sample; past the last sample or negative, the last sample).
func (m *powerMeter) timed(end, seconds float64, from string) *TimedEnergy {
	if end <= 0 || end > m.lastT {
		end = m.lastT
	}
	if seconds <= 0 || seconds > end {
		seconds, from = end, "the whole run (model load included): the engine's timings do not give its timed section"
	}
	if seconds <= 0 {
		return nil
	}
	te := &TimedEnergy{Seconds: round(seconds, 6), From: from, Domains: []string{}}
	for _, name := range m.order {
		s := m.series[name]
		if !s.have || s.dom.Method == MethodUnavailable {
			continue
		}
		te.Joules += s.between(end-seconds, end)
		te.Domains = append(te.Domains, name+" ("+s.dom.Method+")")
	}
	if len(te.Domains) == 0 {
		return nil
	}
	sort.Strings(te.Domains)
	te.AvgW = round(te.Joules/seconds, 2)
	te.Joules = round(te.Joules, 3)
	return te
}

// RAPL.

// ReadRAPL reads the package and DRAM energy counters of Linux's powercap
// RAPL interface under sysRoot (/sys): class/powercap/intel-rapl:N (name
// package-N) and its sub-zones (name dram; core, uncore and psys are left
// out, being inside the package or beside it). AMD's Zen CPUs expose the
// same tree. Without it (a virtual machine, another architecture) one
// unavailable reading says so; energy_uj that only root may read (since
// Linux 5.10) says that.
func ReadRAPL(sysRoot string) []reading {
	base := filepath.Join(sysRoot, "class", "powercap")
	zones, _ := filepath.Glob(filepath.Join(base, "intel-rapl:*"))
	if len(zones) == 0 {
		return []reading{{name: "package", kind: "cpu-package", source: "rapl",
			unavailable: "RAPL is not exposed: no /sys/class/powercap/intel-rapl:* (a virtual machine, or a CPU or kernel without it)"}}
	}
	sort.Strings(zones)
	var rs []reading
	for _, z := range zones {
		nb, err := os.ReadFile(filepath.Join(z, "name"))
		if err != nil {
			continue
		}
		name := strings.TrimSpace(string(nb))
		r := reading{source: "rapl"}
		switch {
		case strings.HasPrefix(name, "package-"):
			r.name, r.kind = name, "cpu-package"
		case name == "dram":
			pkg := strings.Split(strings.TrimPrefix(filepath.Base(z), "intel-rapl:"), ":")[0]
			r.name, r.kind = "dram-"+pkg, "dram"
		default:
			continue
		}
		b, err := os.ReadFile(filepath.Join(z, "energy_uj"))
		if err != nil {
			r.unavailable = "reading energy_uj: " + raplErr(err)
			rs = append(rs, r)
			continue
		}
		uj, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
		if err != nil {
			r.unavailable = fmt.Sprintf("energy_uj %q is not a number", strings.TrimSpace(string(b)))
			rs = append(rs, r)
			continue
		}
		j := uj / 1e6
		r.counterJ = &j
		if b, err := os.ReadFile(filepath.Join(z, "max_energy_range_uj")); err == nil {
			if mr, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64); err == nil {
				r.maxRangeJ = mr / 1e6
			}
		}
		rs = append(rs, r)
	}
	return rs
}

func raplErr(err error) string {
	if errors.Is(err, fs.ErrPermission) {
		return "permission denied (Linux 5.10 and later let only root read it; run rigor as root or make energy_uj readable)"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

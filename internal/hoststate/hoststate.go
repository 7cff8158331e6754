// Package hoststate records what the host did around a benchmark: its load,
// the CPU other processes took, clocks, thermals and GPUs, so that a record
// says whether it ran on a quiet box and a diff can say when two runs did
// not. (What the host is, its accelerators, CPU and toolchain, is package
// rig.)
//
// The steps:
//
//  1. [Start] takes a [Sample] (load average, CPU governor and clocks,
//     thermal zones, available memory and swap, each GPU's temperature,
//     clocks, power and memory from its vendor's tool) and reads the
//     machine's CPU time from /proc/stat.
//  2. While the engine runs, a goroutine samples again every
//     [Options.Interval] and keeps the worst of each figure, and reads the
//     engine processes' own CPU time from /proc/<pid>/stat.
//  3. [Sampler.Stop] reads /proc/stat again: the CPU time the machine
//     spent minus the engine's (and rigor's own) is what other processes
//     took while the engine ran, in cores ([State.OtherCores]).
//
// [State.Busy] judges a state, [Compare] names the figures in which two
// states differ ("load 0.3 vs 9.8 on 2 cores"). Nothing missing is an
// error: a file that cannot be read or a tool that is absent leaves its
// figure out and, for tools that fail, a note.
package hoststate

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// State is the machine's state before and during one run, as recorded in
// a result's "machine" field.
type State struct {
	// Cores is the number of CPUs the kernel runs (online CPUs).
	Cores int `json:"cores"`
	// Before is the machine just before the engine started.
	Before *Sample `json:"before,omitempty"`
	// Peak is the worst of each figure seen while the engine ran: the
	// highest load, temperatures, power, swap and GPU memory used, the
	// lowest available memory and clocks.
	Peak *Sample `json:"peak,omitempty"`
	// WallSeconds is how long the sampler ran.
	WallSeconds float64 `json:"wallSeconds,omitempty"`
	// EngineCPUSeconds is the CPU time of the engine's processes (and
	// rigor's own) while they ran, from /proc/<pid>/stat.
	EngineCPUSeconds float64 `json:"engineCpuSeconds,omitempty"`
	// OtherCPUSeconds is the CPU time every other process used meanwhile:
	// the machine's busy time from /proc/stat minus EngineCPUSeconds.
	OtherCPUSeconds float64 `json:"otherCpuSeconds,omitempty"`
	// OtherCores is OtherCPUSeconds over WallSeconds: how many cores other
	// processes took on average while the engine ran.
	OtherCores *float64 `json:"otherCores,omitempty"`
	// Notes says what could not be read (a GPU tool that failed).
	Notes []string `json:"notes,omitempty"`
	// Energy is what the GPUs, CPU packages and DRAM drew while the
	// engine ran, sampled every [Options.PowerInterval].
	Energy *Energy `json:"energy,omitempty"`
}

// Sample is the machine at one moment.
type Sample struct {
	At time.Time `json:"at"`
	// Load1 and Load5 are the 1- and 5-minute load averages.
	Load1 float64 `json:"load1"`
	Load5 float64 `json:"load5"`
	// Governor is the CPU frequency governor, or the distinct governors
	// joined by "," when CPUs differ; "" without cpufreq.
	Governor string `json:"governor,omitempty"`
	// CPUMHzMin and CPUMHzMax are the lowest and highest current clock
	// over the CPUs (cpufreq's scaling_cur_freq, else /proc/cpuinfo).
	CPUMHzMin float64 `json:"cpuMHzMin,omitempty"`
	CPUMHzMax float64 `json:"cpuMHzMax,omitempty"`
	// Thermal lists the thermal zones that could be read.
	Thermal []Thermal `json:"thermal,omitempty"`
	// MemAvailableMiB is MemAvailable of /proc/meminfo.
	MemAvailableMiB float64 `json:"memAvailableMiB,omitempty"`
	// SwapUsedMiB is SwapTotal minus SwapFree.
	SwapUsedMiB float64 `json:"swapUsedMiB"`
	// GPUs are the GPUs the vendor tools reported.
	GPUs []GPU `json:"gpus,omitempty"`
}

// Thermal is one thermal zone's temperature.
type Thermal struct {
	Zone    string  `json:"zone"`           // thermal_zone0
	Type    string  `json:"type,omitempty"` // x86_pkg_temp, acpitz
	Celsius float64 `json:"celsius"`
}

// GPU is one GPU's state as its vendor tool reports it. Zero means "not
// reported".
type GPU struct {
	Index       int     `json:"index"`
	Source      string  `json:"source"` // nvidia-smi, xpu-smi, rocm-smi, amd-smi
	TempC       float64 `json:"tempC,omitempty"`
	ClockMHz    float64 `json:"clockMHz,omitempty"`
	MemClockMHz float64 `json:"memClockMHz,omitempty"`
	PowerW      float64 `json:"powerW,omitempty"`
	MemUsedMiB  float64 `json:"memUsedMiB,omitempty"`
	UtilPct     float64 `json:"utilPct,omitempty"`
}

// Options configures [StartWith]. The zero value samples the real machine.
type Options struct {
	// Root is the file system root under which /proc and /sys are read;
	// "" means "/".
	Root string
	// Run runs a command and returns its standard output; nil uses
	// os/exec.
	Run func(ctx context.Context, name string, args ...string) ([]byte, error)
	// LookPath reports whether a command is installed; nil means
	// exec.LookPath.
	LookPath func(name string) (string, error)
	// Interval is the time between samples while the engine runs; 0 means
	// 5 s.
	Interval time.Duration
	// Timeout bounds each GPU tool; 0 means 5 s.
	Timeout time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// PowerInterval is the time between power samples; 0 means
	// [DefaultPowerInterval], a negative value turns power sampling off.
	PowerInterval time.Duration
	// SysRoot replaces /sys for the powercap (RAPL) tree; "" means Root's
	// /sys.
	SysRoot string
	// MaxPowerPoints bounds each power domain's series (0: 2048).
	MaxPowerPoints int
}

// Sampler samples the machine while a run goes on. Its methods are safe
// for one Start and one Stop from different goroutines.
type Sampler struct {
	opts   Options
	pids   func() []int
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	state    State
	start    time.Time
	busy0    float64         // machine busy seconds at Start
	haveCPU  bool            // /proc/stat was readable at Start
	cpu0     map[int]float64 // a process's CPU seconds when first seen
	cpuLast  map[int]float64 // and when last seen
	notes    map[string]bool
	stopOnce sync.Once

	power     *powerMeter // nil when power sampling is off
	powerDone chan struct{}
}

// Start samples the machine now and keeps sampling until [Sampler.Stop].
// pids returns the engine's processes (those of the run, whose CPU time is
// not "other"); it may return different ids over time and may be nil.
// Call Start before the engine's processes start: a process first seen
// after Start counts with its whole CPU time. rigor's own process counts
// as the engine's, with the vendor tools it runs (reaped children).
func Start(ctx context.Context, pids func() []int) *Sampler {
	return StartWith(ctx, pids, Options{})
}

// StartWith is [Start] with options.
func StartWith(ctx context.Context, pids func() []int, opts Options) *Sampler {
	if opts.Interval <= 0 {
		opts.Interval = 5 * time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Sampler{opts: opts, pids: pids, done: make(chan struct{}),
		cpu0: map[int]float64{}, cpuLast: map[int]float64{}, notes: map[string]bool{}}
	s.state.Cores = onlineCPUs(opts.Root)
	s.start = opts.Now()
	s.busy0, s.haveCPU = readBusySeconds(opts.Root)
	s.watchPIDs()
	before := s.sample(ctx)
	s.state.Before = before
	ctx, s.cancel = context.WithCancel(ctx)
	go s.loop(ctx)
	if opts.PowerInterval >= 0 {
		if s.opts.PowerInterval == 0 {
			s.opts.PowerInterval = DefaultPowerInterval
		}
		s.power = newPowerMeter(s.opts)
		s.power.readLimits(ctx)
		s.power.tick(ctx, s.opts.Now())
		s.powerDone = make(chan struct{})
		go s.powerLoop(ctx)
	}
	return s
}

// powerLoop reads the power sources every PowerInterval until Stop. The
// meter is this goroutine's until it ends.
func (s *Sampler) powerLoop(ctx context.Context) {
	defer close(s.powerDone)
	t := time.NewTicker(s.opts.PowerInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.power.tick(ctx, s.opts.Now())
		}
	}
}

// TimedEnergy returns the energy of the seconds before end, the engine's
// timed section (which ends as the engine exits, before rigor stops its
// workers); from says how the section was found. A section longer than
// the window up to end, or 0 seconds, is that whole window; a zero end is
// the last sample. nil before [Sampler.Stop], without power sampling, or
// when nothing was measured.
func (s *Sampler) TimedEnergy(end time.Time, seconds float64, from string) *TimedEnergy {
	if s.power == nil || s.state.Energy == nil || !s.power.started {
		return nil
	}
	var e float64
	if !end.IsZero() {
		e = end.Sub(s.power.t0).Seconds()
	}
	return s.power.timed(e, seconds, from)
}

func (s *Sampler) loop(ctx context.Context) {
	defer close(s.done)
	t := time.NewTicker(s.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.watchPIDs()
			x := s.sample(ctx)
			if ctx.Err() != nil {
				return
			}
			s.mu.Lock()
			s.state.Peak = worst(s.state.Peak, x)
			s.mu.Unlock()
		}
	}
}

// Stop ends the sampling and returns the state. It takes one last sample,
// so a run shorter than the interval has a Peak too. Calling Stop again
// returns the same state.
func (s *Sampler) Stop() *State {
	s.stopOnce.Do(func() {
		s.watchPIDs()
		s.cancel()
		<-s.done
		var energy *Energy
		if s.power != nil {
			<-s.powerDone
			s.power.tick(context.Background(), s.opts.Now())
			energy = s.power.finish(s.opts.PowerInterval)
		}
		last := s.sample(context.Background())
		busy1, ok := readBusySeconds(s.opts.Root)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.state.Peak = worst(s.state.Peak, last)
		s.state.Energy = energy
		wall := s.opts.Now().Sub(s.start).Seconds()
		if wall > 0 {
			s.state.WallSeconds = round(wall, 3)
		}
		var eng float64
		for pid, last := range s.cpuLast {
			eng += last - s.cpu0[pid]
		}
		s.state.EngineCPUSeconds = round(eng, 2)
		if ok && s.haveCPU && wall > 0 {
			// /proc/stat counts in clock ticks: over a short run the
			// difference may exceed what the cores could do; it is capped.
			other := min(max(busy1-s.busy0-eng, 0), float64(max(s.state.Cores, 1))*wall)
			s.state.OtherCPUSeconds = round(other, 2)
			oc := round(other/wall, 2)
			s.state.OtherCores = &oc
		}
		for n := range s.notes {
			s.state.Notes = append(s.state.Notes, n)
		}
		sortStrings(s.state.Notes)
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.state
	return &st
}

// watchPIDs reads the CPU time of the engine's processes and of rigor
// itself. A process first seen after Start began after it, so its whole
// CPU time counts; one seen at Start counts from there.
func (s *Sampler) watchPIDs() {
	ids := []int{os.Getpid()}
	if s.pids != nil {
		ids = append(ids, s.pids()...)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	first := len(s.cpuLast) == 0
	for _, pid := range ids {
		cpu, ok := readProcCPU(s.opts.Root, pid)
		if !ok {
			continue
		}
		if _, seen := s.cpuLast[pid]; !seen {
			if first || pid == os.Getpid() {
				s.cpu0[pid] = cpu
			} else {
				s.cpu0[pid] = 0
			}
		}
		s.cpuLast[pid] = cpu
	}
}

// sample reads everything once.
func (s *Sampler) sample(ctx context.Context) *Sample {
	x := sampleOnce(ctx, s.opts)
	s.mu.Lock()
	for _, n := range x.notes {
		s.notes[n] = true
	}
	s.mu.Unlock()
	return &x.Sample
}

// noted is a sample with what could not be read.
type noted struct {
	Sample
	notes []string
}

// sampleOnce samples the machine once: what [Start] records as Before.
func sampleOnce(ctx context.Context, opts Options) noted {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	x := noted{Sample: Sample{At: opts.Now().UTC()}}
	root := opts.Root
	if b, err := os.ReadFile(join(root, "/proc/loadavg")); err == nil {
		x.Load1, x.Load5, _ = ParseLoadavg(b)
	}
	x.Governor, x.CPUMHzMin, x.CPUMHzMax = readCPUFreq(root)
	x.Thermal = readThermal(root)
	if b, err := os.ReadFile(join(root, "/proc/meminfo")); err == nil {
		x.MemAvailableMiB, x.SwapUsedMiB = ParseMeminfo(b)
	}
	gpus, notes := sampleGPUs(ctx, opts)
	x.GPUs, x.notes = gpus, notes
	return x
}

// Snapshot samples the machine once, as [Start] does before a run.
func Snapshot(ctx context.Context, opts Options) *Sample {
	x := sampleOnce(ctx, opts)
	return &x.Sample
}

// worst merges x into the running worst figures.
func worst(w, x *Sample) *Sample {
	if x == nil {
		return w
	}
	if w == nil {
		c := *x
		c.Thermal = append([]Thermal(nil), x.Thermal...)
		c.GPUs = append([]GPU(nil), x.GPUs...)
		return &c
	}
	w.At = x.At
	w.Load1, w.Load5 = max(w.Load1, x.Load1), max(w.Load5, x.Load5)
	if x.Governor != "" && !strings.Contains(","+w.Governor+",", ","+x.Governor+",") {
		if w.Governor != "" {
			w.Governor += "," + x.Governor
		} else {
			w.Governor = x.Governor
		}
	}
	w.CPUMHzMin = minNonZero(w.CPUMHzMin, x.CPUMHzMin)
	w.CPUMHzMax = max(w.CPUMHzMax, x.CPUMHzMax)
	for _, t := range x.Thermal {
		found := false
		for i := range w.Thermal {
			if w.Thermal[i].Zone == t.Zone {
				w.Thermal[i].Celsius = max(w.Thermal[i].Celsius, t.Celsius)
				found = true
			}
		}
		if !found {
			w.Thermal = append(w.Thermal, t)
		}
	}
	w.MemAvailableMiB = minNonZero(w.MemAvailableMiB, x.MemAvailableMiB)
	w.SwapUsedMiB = max(w.SwapUsedMiB, x.SwapUsedMiB)
	for _, g := range x.GPUs {
		found := false
		for i := range w.GPUs {
			p := &w.GPUs[i]
			if p.Index == g.Index && p.Source == g.Source {
				p.TempC, p.PowerW = max(p.TempC, g.TempC), max(p.PowerW, g.PowerW)
				p.MemUsedMiB, p.UtilPct = max(p.MemUsedMiB, g.MemUsedMiB), max(p.UtilPct, g.UtilPct)
				p.ClockMHz, p.MemClockMHz = minNonZero(p.ClockMHz, g.ClockMHz), minNonZero(p.MemClockMHz, g.MemClockMHz)
				found = true
			}
		}
		if !found {
			w.GPUs = append(w.GPUs, g)
		}
	}
	return w
}

func minNonZero(a, b float64) float64 {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

func join(root, p string) string {
	if root == "" || root == "/" {
		return p
	}
	return strings.TrimSuffix(root, "/") + p
}

func onlineCPUs(root string) int {
	if b, err := os.ReadFile(join(root, "/sys/devices/system/cpu/online")); err == nil {
		if n := countCPUList(strings.TrimSpace(string(b))); n > 0 {
			return n
		}
	}
	if root == "" || root == "/" {
		return runtime.NumCPU()
	}
	return 0
}

// countCPUList counts a kernel CPU list such as "0-3,6,8-9".
func countCPUList(s string) int {
	n := 0
	for _, part := range strings.Split(s, ",") {
		lo, hi, rng := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0
		}
		if !rng {
			n++
			continue
		}
		b, err := strconv.Atoi(hi)
		if err != nil || b < a {
			return 0
		}
		n += b - a + 1
	}
	return n
}

func round(v float64, digits int) float64 {
	p := 1.0
	for range digits {
		p *= 10
	}
	return float64(int64(v*p+0.5)) / p
}

func lookPath(opts Options) func(string) (string, error) {
	if opts.LookPath != nil {
		return opts.LookPath
	}
	return exec.LookPath
}

package hoststate

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultBusyShare is the share of the cores that other processes may take
// before a machine counts as busy: a quarter, half a core on a 2-core box.
const DefaultBusyShare = 0.25

// Busy judges whether other processes took more than threshold (a share of
// the cores, 0.25 for a quarter) while the engine ran, and says why in
// figures ("other processes took 1.6 of 2 cores while the engine ran
// (load 3.1)"). Without CPU accounting (a state that was never stopped) it
// falls back on the 1-minute load before the run beyond the cores the
// engine may use.
func (st *State) Busy(threshold float64) (bool, string) {
	if st == nil || st.Cores <= 0 {
		return false, ""
	}
	limit := threshold * float64(st.Cores)
	load := ""
	if p := st.Peak; p != nil {
		load = " (load " + num(p.Load1) + ")"
	} else if b := st.Before; b != nil {
		load = " (load " + num(b.Load1) + ")"
	}
	if st.OtherCores != nil {
		if *st.OtherCores > limit {
			return true, fmt.Sprintf("other processes took %s of %d cores while the engine ran%s", num(*st.OtherCores), st.Cores, load)
		}
		return false, ""
	}
	if b := st.Before; b != nil && b.Load1 > limit {
		return true, fmt.Sprintf("load %s on %d cores before the run", num(b.Load1), st.Cores)
	}
	return false, ""
}

// Compare names the figures in which the machine states of two runs differ
// enough to matter for a comparison: load and other processes' CPU share
// ("load 0.3 vs 9.8 on 2 cores"), CPU governor, clocks (more than 10%),
// swap use, the hottest thermal zone (more than 10 °C) and each GPU's
// temperature (more than 10 °C), clocks and power (more than 10%). A nil
// state on either side gives nothing: there is nothing to compare.
func Compare(a, b *State) []string {
	if a == nil || b == nil {
		return nil
	}
	var out []string
	cores := max(a.Cores, b.Cores)
	if cores <= 0 {
		cores = 1
	}
	la, lb := peakOrBefore(a), peakOrBefore(b)
	busyA, _ := a.Busy(DefaultBusyShare)
	busyB, _ := b.Busy(DefaultBusyShare)
	coresSuffix := " on " + strconv.Itoa(cores) + " cores"
	if a.Cores != b.Cores {
		coresSuffix = fmt.Sprintf(" on %d vs %d cores", a.Cores, b.Cores)
	}
	if la != nil && lb != nil {
		d := la.Load1 - lb.Load1
		if busyA != busyB || abs(d) > max(1, DefaultBusyShare*float64(cores)) {
			out = append(out, "load "+num(la.Load1)+" vs "+num(lb.Load1)+coresSuffix)
		}
	}
	if a.OtherCores != nil && b.OtherCores != nil && (busyA != busyB || abs(*a.OtherCores-*b.OtherCores) > DefaultBusyShare*float64(cores)) {
		out = append(out, "other processes took "+num(*a.OtherCores)+" vs "+num(*b.OtherCores)+" cores while the engine ran")
	}
	// On a saturated machine other processes' share stays pinned near the
	// cores whatever else starts, and the CPU time the engine's processes
	// got per second is the figure that moves with the contention.
	if ea, eb := engineCores(a), engineCores(b); ea > 0 && eb > 0 && (busyA || busyB) && max(ea, eb) > 2*min(ea, eb) {
		out = append(out, "the engine got "+num2(ea)+" vs "+num2(eb)+" cores of CPU time while it ran")
	}
	if la == nil || lb == nil {
		return out
	}
	if la.Governor != lb.Governor && la.Governor != "" && lb.Governor != "" {
		out = append(out, "CPU governor "+la.Governor+" vs "+lb.Governor)
	}
	if differ(la.CPUMHzMin, lb.CPUMHzMin, 0.10) {
		out = append(out, "lowest CPU clock "+num0(la.CPUMHzMin)+" vs "+num0(lb.CPUMHzMin)+" MHz")
	}
	if (la.SwapUsedMiB > 64 || lb.SwapUsedMiB > 64) && differ(la.SwapUsedMiB, lb.SwapUsedMiB, 0.5) {
		out = append(out, "swap used "+num0(la.SwapUsedMiB)+" vs "+num0(lb.SwapUsedMiB)+" MiB")
	}
	if ta, tb := hottest(la), hottest(lb); ta > 0 && tb > 0 && abs(ta-tb) > 10 {
		out = append(out, "hottest thermal zone "+num0(ta)+" vs "+num0(tb)+" °C")
	}
	for _, ga := range la.GPUs {
		for _, gb := range lb.GPUs {
			if ga.Index != gb.Index || ga.Source != gb.Source {
				continue
			}
			name := "GPU " + strconv.Itoa(ga.Index)
			if ga.TempC > 0 && gb.TempC > 0 && abs(ga.TempC-gb.TempC) > 10 {
				out = append(out, name+" temperature "+num0(ga.TempC)+" vs "+num0(gb.TempC)+" °C")
			}
			if differ(ga.ClockMHz, gb.ClockMHz, 0.10) {
				out = append(out, name+" clock "+num0(ga.ClockMHz)+" vs "+num0(gb.ClockMHz)+" MHz")
			}
			if differ(ga.PowerW, gb.PowerW, 0.10) {
				out = append(out, name+" power "+num0(ga.PowerW)+" vs "+num0(gb.PowerW)+" W")
			}
		}
	}
	return out
}

// ErrBusy is returned by [Quiet] when the machine did not settle in time.
type ErrBusy struct {
	// Waited is how long Quiet waited.
	Waited time.Duration
	// OtherCores is the CPU the machine used in the last window, in cores
	// (rigor's own share excluded).
	OtherCores float64
	Cores      int
	Load1      float64
}

func (e *ErrBusy) Error() string {
	return fmt.Sprintf("machine busy: other processes took %s of %d cores (load %s) and did not settle within %s",
		num(e.OtherCores), e.Cores, num(e.Load1), e.Waited.Round(time.Second))
}

// QuietOptions configures [Quiet].
type QuietOptions struct {
	Options
	// Threshold is the share of the cores other processes may take;
	// 0 means [DefaultBusyShare].
	Threshold float64
	// Wait bounds how long Quiet waits for the machine to settle.
	Wait time.Duration
	// Window is how long each measurement of the CPU use lasts; 0 means
	// 2 s.
	Window time.Duration

	// sleep waits out a window; nil waits on a timer (tests replace it).
	sleep func(ctx context.Context, d time.Duration) error
}

// Quiet measures the CPU the machine uses over a window, again and again,
// until other processes take less than the threshold (nil) or Wait has
// passed (an *[ErrBusy] with the last figures). A machine whose /proc/stat
// cannot be read never counts as quiet. It returns ctx's error when ctx
// ends first.
func Quiet(ctx context.Context, opts QuietOptions) error {
	if opts.Threshold <= 0 {
		opts.Threshold = DefaultBusyShare
	}
	if opts.Window <= 0 {
		opts.Window = 2 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.sleep == nil {
		opts.sleep = func(ctx context.Context, d time.Duration) error {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
				return nil
			}
		}
	}
	start := opts.Now()
	for {
		s := StartWith(ctx, nil, Options{Root: opts.Root, Interval: time.Hour, LookPath: noTools, Now: opts.Now})
		if err := opts.sleep(ctx, opts.Window); err != nil {
			s.Stop()
			return err
		}
		st := s.Stop()
		busy, _ := st.Busy(opts.Threshold)
		if !busy && st.OtherCores != nil {
			return nil
		}
		waited := opts.Now().Sub(start)
		if waited+opts.Window > opts.Wait {
			e := &ErrBusy{Waited: waited, Cores: st.Cores}
			if st.OtherCores != nil {
				e.OtherCores = *st.OtherCores
			}
			if st.Peak != nil {
				e.Load1 = st.Peak.Load1
			}
			return e
		}
	}
}

// noTools makes a sampler skip the GPU tools (a quiet check needs the CPU
// only, and the tools' own CPU would count against it).
func noTools(string) (string, error) { return "", fmt.Errorf("not looked up") }

func peakOrBefore(st *State) *Sample {
	if st.Peak != nil {
		return st.Peak
	}
	return st.Before
}

func hottest(s *Sample) float64 {
	var t float64
	for _, z := range s.Thermal {
		t = max(t, z.Celsius)
	}
	return t
}

func differ(a, b, share float64) bool {
	if a <= 0 || b <= 0 {
		return false
	}
	return abs(a-b) > share*max(a, b)
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// engineCores is the CPU time the engine's processes (and rigor) got per
// second of the run, in cores; 0 when not measured.
func engineCores(st *State) float64 {
	if st.WallSeconds <= 0 || st.EngineCPUSeconds <= 0 {
		return 0
	}
	return st.EngineCPUSeconds / st.WallSeconds
}

// num2 formats a share of a core with two decimals.
func num2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// num formats a load or a core count with one decimal.
func num(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// num0 formats a clock, temperature or size without decimals.
func num0(v float64) string {
	return strings.TrimSuffix(strconv.FormatFloat(v, 'f', 0, 64), ".")
}

// String sums the state up in one line for a run's output: "2 cores, load
// 0.3 before and 3.1 at most, other processes 1.6 cores, governor
// performance, hottest zone 71 °C, GPU 0 83 °C 2520 MHz 287 W".
func (st *State) String() string {
	if st == nil {
		return "no machine state"
	}
	parts := []string{strconv.Itoa(st.Cores) + " cores"}
	if b, p := st.Before, st.Peak; b != nil && p != nil {
		parts = append(parts, "load "+num(b.Load1)+" before and "+num(p.Load1)+" at most")
	} else if b != nil {
		parts = append(parts, "load "+num(b.Load1))
	}
	if st.OtherCores != nil {
		parts = append(parts, "other processes "+num(*st.OtherCores)+" cores")
	}
	s := peakOrBefore(st)
	if s != nil {
		if s.Governor != "" {
			parts = append(parts, "governor "+s.Governor)
		}
		if t := hottest(s); t > 0 {
			parts = append(parts, "hottest zone "+num0(t)+" °C")
		}
		if s.SwapUsedMiB > 0 {
			parts = append(parts, "swap "+num0(s.SwapUsedMiB)+" MiB")
		}
		for _, g := range s.GPUs {
			var f []string
			if g.TempC > 0 {
				f = append(f, num0(g.TempC)+" °C")
			}
			if g.ClockMHz > 0 {
				f = append(f, num0(g.ClockMHz)+" MHz")
			}
			if g.PowerW > 0 {
				f = append(f, num0(g.PowerW)+" W")
			}
			if len(f) > 0 {
				parts = append(parts, "GPU "+strconv.Itoa(g.Index)+" "+strings.Join(f, " "))
			}
		}
	}
	return strings.Join(parts, ", ")
}

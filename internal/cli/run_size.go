package cli

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/run"
	"github.com/rigorbench/rigor/internal/spec"
)

// The size above which 'rigor run' asks before it starts (on a terminal)
// or wants --yes (off one): more runs than askRuns, or an estimated time
// over askETA. RIGOR_CONFIRM_RUNS and RIGOR_CONFIRM_ETA change them.
const (
	askRuns = 1000
	askETA  = 24 * time.Hour
)

// runSize is what an invocation of run starts, counted as the plan
// groups its points: runs (one record each), processes (a sweep the
// engine runs in one process is one), and the time it should take.
type runSize struct {
	rounds int
	// points and executions are per round.
	points, executions int
	// eta is the estimate in seconds (a float: a billion rounds of an
	// hour overflow a time.Duration): each execution's latest earlier ok
	// run, times the rounds. Executions that never ran are not in it.
	eta float64
	// unknown is the number of executions (per round) with no earlier
	// run to time.
	unknown int
}

func (s runSize) runs() float64      { return float64(s.points) * float64(s.rounds) }
func (s runSize) processes() float64 { return float64(s.executions) * float64(s.rounds) }

// sizeOf counts what a run of xs in rounds starts and estimates how long
// it takes from previous, the earlier records of its experiments.
func sizeOf(xs []*runExperiment, rounds int, previous []*results.Run) (runSize, error) {
	last := map[string]*results.Run{}
	for _, r := range previous {
		if r.Status != results.StatusOK || !r.End.After(r.Start) {
			continue
		}
		if l := last[r.Point]; l == nil || r.Start.After(l.Start) {
			last[r.Point] = r
		}
	}
	s := runSize{rounds: max(rounds, 1)}
	for _, ex := range xs {
		execs, err := run.Executions(ex.x, ex.points)
		if err != nil {
			return s, err
		}
		for _, points := range execs {
			s.executions++
			s.points += len(points)
			// A sweep in one process is one record per point, all of
			// the same process: the longest of them is its time.
			took, known := 0.0, false
			for _, p := range points {
				if r := last[p.ID]; r != nil {
					took, known = math.Max(took, r.End.Sub(r.Start).Seconds()), true
				}
			}
			if !known {
				s.unknown++
			}
			s.eta += took
		}
	}
	s.eta *= float64(s.rounds)
	return s, nil
}

// describe says what the run starts and how long it should take, with the
// counts the estimate was made from; the limit it is above, if any, is
// named beside its figure.
func (s runSize) describe(l askLimits) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", whole(s.runs()), pluralF(s.runs(), "run", "runs"))
	if s.rounds > 1 {
		fmt.Fprintf(&b, " (%d %s × %d rounds)", s.points, plural(s.points, "point", "points"), s.rounds)
	}
	fmt.Fprintf(&b, " in %s %s", whole(s.processes()), pluralF(s.processes(), "process", "processes"))
	if s.runs() > float64(l.runs) {
		fmt.Fprintf(&b, " (more than %d)", l.runs)
	}
	over := ""
	if s.eta > l.eta.Seconds() {
		over = " (over " + etaString(l.eta.Seconds()) + ")"
	}
	switch {
	case s.unknown == s.executions:
		b.WriteString(", ETA unknown (none of them ran before)")
	case s.unknown > 0:
		fmt.Fprintf(&b, ", ETA at least %s%s from the latest earlier run of each (%d of %d %s never ran and %s not counted)",
			etaString(s.eta), over, s.unknown, s.executions, plural(s.executions, "execution", "executions"), plural(s.unknown, "is", "are"))
	default:
		fmt.Fprintf(&b, ", ETA about %s%s from the latest earlier run of each", etaString(s.eta), over)
	}
	return b.String()
}

// whole writes a whole number of any size without an exponent.
func whole(n float64) string { return strconv.FormatFloat(n, 'f', 0, 64) }

func pluralF(n float64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// etaString writes an estimate in seconds as a duration up to two days,
// in hours above.
func etaString(secs float64) string {
	if secs < 1 {
		return (time.Duration(secs * float64(time.Second))).Round(time.Millisecond).String()
	}
	if secs < 48*3600 {
		d := (time.Duration(secs * float64(time.Second))).Round(time.Second).String()
		// 24h0m0s reads 24h, 2m0s 2m.
		if strings.HasSuffix(d, "m0s") {
			d = strings.TrimSuffix(d, "0s")
		}
		if strings.HasSuffix(d, "h0m") {
			d = strings.TrimSuffix(d, "0m")
		}
		return d
	}
	h := secs / 3600
	if h < 1e6 {
		return fmt.Sprintf("%.0f hours", h)
	}
	return fmt.Sprintf("%.3g million hours", h/1e6)
}

// askLimits are the thresholds above which run asks first.
type askLimits struct {
	runs int
	eta  time.Duration
}

// askLimits reads RIGOR_CONFIRM_RUNS (a number of runs) and
// RIGOR_CONFIRM_ETA (a Go duration or seconds); unset, askRuns and askETA.
func (c config) askLimits() (askLimits, error) {
	l := askLimits{runs: askRuns, eta: askETA}
	if v := strings.TrimSpace(c.Getenv("RIGOR_CONFIRM_RUNS")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return l, withHint(fmt.Errorf("RIGOR_CONFIRM_RUNS: %q is not a number of runs", v),
				"give the number of runs above which 'rigor run' asks first; unset, "+strconv.Itoa(askRuns))
		}
		l.runs = n
	}
	if v := strings.TrimSpace(c.Getenv("RIGOR_CONFIRM_ETA")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			if secs, serr := strconv.ParseFloat(v, 64); serr == nil {
				d, err = time.Duration(secs*float64(time.Second)), nil
			}
		}
		if err != nil || d < 0 {
			return l, withHint(fmt.Errorf("RIGOR_CONFIRM_ETA: %q is not a duration", v),
				"write it as a Go duration (12h, 90m) or a number of seconds; unset, "+askETA.String())
		}
		l.eta = d
	}
	return l, nil
}

// over reports whether s is above either limit.
func (l askLimits) over(s runSize) bool {
	return s.runs() > float64(l.runs) || s.eta > l.eta.Seconds()
}

// interactive reports whether rigor can ask the user: its input and its
// messages are a terminal.
func (e *env) interactive() bool {
	if e.isTerminal != nil {
		return e.isTerminal()
	}
	in, ok := e.stdin.(*os.File)
	if !ok || !term.IsTerminal(int(in.Fd())) {
		return false
	}
	_, ok = termFile(e.stderr)
	return ok
}

// confirmSize asks before a run above the limits starts: on a terminal
// the user answers, off one (a pipe, CI) it is refused unless --yes.
// Nothing has been built or started when it refuses.
func (c *runCmd) confirmSize(e *env, xs []*runExperiment, previous []*results.Run) error {
	if c.Yes {
		return nil
	}
	limits, err := e.cfg().askLimits()
	if err != nil {
		return err
	}
	s, err := sizeOf(xs, c.Rounds, previous)
	if err != nil {
		return err
	}
	if !limits.over(s) {
		return nil
	}
	if !e.interactive() {
		return withHint(fmt.Errorf("nothing was started: this run would start %s", s.describe(limits)),
			"pass --yes to start it anyway (scripts, CI), or start fewer: fewer --rounds, or one point ('rigor run \"X[ub=16]\"')",
			fmt.Sprintf("a run asks first above %d runs or an ETA of %s (RIGOR_CONFIRM_RUNS, RIGOR_CONFIRM_ETA)", limits.runs, etaString(limits.eta.Seconds())))
	}
	fmt.Fprintf(e.stderr, "rigor: this run starts %s.\nrigor: start it? [y/N] ", s.describe(limits))
	line, err := bufio.NewReader(e.stdin).ReadString('\n')
	answer := strings.ToLower(strings.TrimSpace(line))
	if answer == "y" || answer == "yes" {
		return nil
	}
	if err != nil && answer == "" {
		fmt.Fprintln(e.stderr)
	}
	return withHint(errors.New("not started: the answer was not yes"), "--yes starts it without asking")
}

// sizeNote is vet's line about an experiment whose run starts more than
// one execution: what 'rigor run ID' starts.
func sizeNote(x *spec.Experiment, limits askLimits) (string, error) {
	if len(x.Points) < 2 {
		return "", nil
	}
	execs, err := run.Executions(x, x.Points)
	if err != nil {
		return "", err
	}
	s := runSize{rounds: 1, points: len(x.Points), executions: len(execs), unknown: len(execs)}
	note := fmt.Sprintf("%s: 'rigor run %s' records %d runs", x.ID, x.ID, s.points)
	if len(execs) == 1 {
		note += fmt.Sprintf(" from one process (the engine runs the %d points itself)", s.points)
	} else {
		note += fmt.Sprintf(" from %d processes", len(execs))
	}
	note += "; --rounds K multiplies them by K"
	if limits.over(s) {
		note += fmt.Sprintf("; that is more than %d, so run asks first (--yes off a terminal)", limits.runs)
	}
	return note, nil
}

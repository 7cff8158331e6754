package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/rigorbench/rigor/internal/buildcache"
	"github.com/rigorbench/rigor/internal/run"
)

// heartbeat is how often a build or install that prints nothing new says
// it is still working, when stderr is not a terminal.
const heartbeat = 30 * time.Second

// prepareProgress reports an engine's preparation (a build, an install)
// on stderr so that it is never silent: each step's line, the build log's
// path when a build starts, whose build holds the lock when another
// process builds the same engine; then on a terminal a live bar with the
// phase, percentage and elapsed time, and elsewhere a line at each phase
// and a heartbeat with the elapsed time every 30 seconds.
//
// The bar is drawn here rather than by a progress library: it is one line
// from a percentage the build already computes, redrawn once a second and
// cut to the terminal's width (x/term), which is all a library would add
// here besides its dependencies.
type prepareProgress struct {
	w     io.Writer
	tty   bool
	width int
	label string // "llama.cpp 1a2b3c4d5e6f"
	start time.Time

	mu      sync.Mutex
	pct     int // -1 until a build reports one
	phase   string
	drawn   bool
	partial []byte
	stop    chan struct{}
	stopped chan struct{}
	running bool // the heartbeat runs (run was called)
}

func newPrepareProgress(w io.Writer, label string) *prepareProgress {
	p := &prepareProgress{w: w, label: label, start: time.Now(), pct: -1,
		stop: make(chan struct{}), stopped: make(chan struct{})}
	if f, ok := termFile(w); ok {
		p.tty = true
		if wd, _, err := term.GetSize(int(f.Fd())); err == nil {
			p.width = wd
		}
	}
	return p
}

// attach makes r report to p and returns ctx carrying the build cache's
// trace; start the heartbeat with run, end it with close.
func (p *prepareProgress) attach(ctx context.Context, r *run.Runner) context.Context {
	r.Progress = p.say
	r.BuildProgress = p.build
	r.BuildLog = p
	return buildcache.WithTrace(ctx, &buildcache.Trace{Waiting: p.waiting, Building: p.building})
}

// run redraws the bar every second on a terminal, and elsewhere prints a
// heartbeat when nothing was printed for a while, until close.
func (p *prepareProgress) run() {
	every := heartbeat
	if p.tty {
		every = time.Second
	}
	p.running = true
	go func() {
		defer close(p.stopped)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.tick()
			}
		}
	}()
}

// close stops the heartbeat and clears the bar.
func (p *prepareProgress) close() {
	select {
	case <-p.stop:
		return
	default:
	}
	close(p.stop)
	if p.running {
		<-p.stopped
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	p.tty, p.phase = false, ""
}

func (p *prepareProgress) elapsed() string {
	return time.Since(p.start).Round(time.Second).String()
}

// tick redraws the bar, or says the work goes on.
func (p *prepareProgress) tick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		p.draw()
		return
	}
	what := "preparing the engine"
	if p.phase != "" {
		what = p.phase
	}
	if p.pct >= 0 {
		fmt.Fprintf(p.w, "rigor: still %s %s: %d%%, %s elapsed\n", what, p.label, p.pct, p.elapsed())
	} else {
		fmt.Fprintf(p.w, "rigor: still %s %s, %s elapsed\n", what, p.label, p.elapsed())
	}
}

func (p *prepareProgress) clear() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.drawn = false
	}
}

// draw draws the bar on a terminal, once a build has begun.
func (p *prepareProgress) draw() {
	if !p.tty || p.phase == "" {
		return
	}
	const width = 24
	pct := max(p.pct, 0)
	n := pct * width / 100
	line := fmt.Sprintf("rigor: %s %s [%s%s] %3d%% %s", p.phase, p.label, strings.Repeat("#", n), strings.Repeat(" ", width-n), pct, p.elapsed())
	if p.width > 0 && len(line) >= p.width {
		line = line[:p.width-1]
	}
	fmt.Fprintf(p.w, "\r%s\x1b[K", line)
	p.drawn = true
}

// say prints a step's line above the bar.
func (p *prepareProgress) say(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	fmt.Fprintf(p.w, "rigor: %s\n", msg)
	p.draw()
}

func (p *prepareProgress) waiting(pid int, lock string) {
	if pid > 0 {
		p.say(fmt.Sprintf("waiting for another build of this engine, pid %d (lock %s)", pid, lock))
	} else {
		p.say(fmt.Sprintf("waiting for another build of this engine (lock %s)", lock))
	}
}

func (p *prepareProgress) building(key, log string) {
	p.say(fmt.Sprintf("build log: %s (build %.12s)", log, key))
	p.setPhase("fetching the source of")
}

// phases are a build's phases in order.
var phases = []string{"fetching the source of", "configuring", "compiling", "verifying"}

// setPhase moves to a later phase: a line of its own off a terminal.
func (p *prepareProgress) setPhase(phase string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if slices.Index(phases, phase) <= slices.Index(phases, p.phase) {
		return
	}
	p.phase = phase
	if p.tty {
		p.draw()
		return
	}
	fmt.Fprintf(p.w, "rigor: %s %s (%s elapsed)\n", phase, p.label, p.elapsed())
}

// build receives the build's percentage.
func (p *prepareProgress) build(pct int, line string) {
	p.mu.Lock()
	p.pct = pct
	p.mu.Unlock()
	if pct < 100 {
		p.setPhase("compiling")
	}
	p.mu.Lock()
	p.draw()
	p.mu.Unlock()
}

// Write receives the build's output, for its phases: the lines rigor's
// builder writes between cmake's.
func (p *prepareProgress) Write(b []byte) (int, error) {
	p.mu.Lock()
	p.partial = append(p.partial, b...)
	var lines []string
	for {
		i := bytes.IndexByte(p.partial, '\n')
		if i < 0 {
			break
		}
		lines = append(lines, string(p.partial[:i]))
		p.partial = p.partial[i+1:]
	}
	p.mu.Unlock()
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "rigor: checked out "):
			p.setPhase("configuring")
		case strings.HasPrefix(l, "rigor: build commit "):
			p.setPhase("verifying")
		}
	}
	return len(b), nil
}

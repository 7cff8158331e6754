// Package run executes a planned point: it starts the workers, waits until
// each accepts connections, runs the bench process with exactly the planned
// argv and a controlled environment, and stops every process it started on
// success, failure, timeout and interruption.
//
// Each process runs in its own process group, so that stopping it stops
// whatever it spawned too: no orphaned workers, ever.
package run

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/flock"
	"github.com/rigorbench/rigor/internal/logtail"
	"golang.org/x/sys/unix"
)

// Status values of an execution, beside the engine's own verdict.
const (
	ExitedNormally = "exited"
	TimedOut       = "timeout"
	Interrupted    = "interrupted"
	WorkerFailed   = "worker-failed"
	StartFailed    = "start-failed"
)

// Options control [Execute].
type Options struct {
	// Plan is what to run: workers first, the bench process last.
	Plan *engine.Plan
	// Env is the complete environment of every process, as KEY=VALUE
	// (see [Environment]); process-specific variables from the plan are
	// added to it.
	Env []string
	// Secrets are the values of the variables processes name in
	// SecretEnv; each process gets only the ones it names.
	Secrets map[string]string
	// Dir is the working directory for processes whose plan gives none.
	Dir string
	// LogDir receives each process's stdout and stderr
	// (<name>.stdout, <name>.stderr).
	LogDir string
	// Timeout bounds the bench process; 0 means no bound.
	Timeout time.Duration
	// ReadyTimeout bounds the wait for each worker.
	ReadyTimeout time.Duration
	// Grace is how long a process gets between SIGTERM and SIGKILL.
	Grace time.Duration
	// Progress, if set, is told what is happening.
	Progress func(msg string)
	// LockDir, when set, holds a lock per worker port (in rigor's cache):
	// from the check that the port is free until the worker is proved to
	// listen on it, so that two runs starting the same worker at once take
	// turns, and the second finds the port taken instead of both passing
	// the check.
	LockDir string
}

// Outcome is what happened to the processes.
type Outcome struct {
	// How is ExitedNormally, TimedOut, Interrupted, WorkerFailed or
	// StartFailed.
	How string
	// Err explains a How other than ExitedNormally.
	Err error
	// ExitCode of the bench process (-1 when it did not exit by itself),
	// Signaled when a signal ended it.
	ExitCode int
	Signaled bool
	Signal   string
	Stdout   []byte
	Stderr   []byte
	// Exits holds each process's exit code by name: 128+N for a process
	// a signal killed, as a shell reports it.
	Exits map[string]int
	// Signals names the signal that killed a process ("SIGABRT"), by name.
	Signals map[string]string
	// WorkerDeath describes the workers that died by themselves while the
	// bench ran, when the bench then ended by itself: "worker rpc-0 died
	// of SIGABRT (exit 134) during the run; its stderr ends: …".
	WorkerDeath string
	Start, End  time.Time
	// Logs lists the log files written, relative to LogDir.
	Logs []string
}

type proc struct {
	p      engine.Process
	cmd    *exec.Cmd
	done   chan struct{}
	err    error
	stdout *os.File
	stderr *os.File
	// guard kills the process group if rigor dies without stopping it.
	guard *guard
}

// Execute runs the plan. It returns an error only when nothing could be
// started (a bad plan, an unwritable log directory); every other failure is
// described by the Outcome.
func Execute(ctx context.Context, opts Options) (*Outcome, error) {
	if opts.Plan == nil || len(opts.Plan.Processes) == 0 {
		return nil, errors.New("empty plan")
	}
	if opts.Grace == 0 {
		opts.Grace = 5 * time.Second
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 60 * time.Second
	}
	if err := os.MkdirAll(opts.LogDir, 0o755); err != nil {
		return nil, err
	}
	progress := opts.Progress
	if progress == nil {
		progress = func(string) {}
	}
	out := &Outcome{Exits: map[string]int{}, Signals: map[string]string{}, ExitCode: -1, Start: time.Now().UTC()}
	var procs []*proc
	defer func() {
		stopAll(procs, opts.Grace)
		for _, p := range procs {
			p.stdout.Close()
			p.stderr.Close()
		}
	}()

	// fail ends the execution before the bench ran: the processes
	// already started are stopped and their real exits recorded (a
	// worker stopped because a later one was refused exited too).
	fail := func(how string, err error) (*Outcome, error) {
		out.How, out.Err = how, err
		if ctx.Err() != nil && how != StartFailed {
			out.How, out.Err = Interrupted, ctx.Err()
		}
		out.End = time.Now().UTC()
		out.Logs = logNames(procs)
		stopAll(procs, opts.Grace)
		collectExits(procs, out)
		return out, nil
	}
	var how string
	var err error
	if procs, how, err = startAll(ctx, opts, progress); how != "" {
		return fail(how, err)
	}
	bench := procs[len(procs)-1]
	progress("running " + bench.p.Name)
	var timeout <-chan time.Time
	if opts.Timeout > 0 {
		t := time.NewTimer(opts.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	workerDied := make(chan *proc, len(procs))
	for _, w := range procs[:len(procs)-1] {
		go func(w *proc) {
			<-w.done
			workerDied <- w
		}(w)
	}
	select {
	case <-bench.done:
		out.How = ExitedNormally
	case <-timeout:
		out.How, out.Err = TimedOut, fmt.Errorf("%s did not finish within %s", bench.p.Name, opts.Timeout)
		stop(bench, opts.Grace)
	case <-ctx.Done():
		out.How, out.Err = Interrupted, errors.New("interrupted")
		stop(bench, opts.Grace)
	case w := <-workerDied:
		// A worker that dies mid-run takes the run with it. It may also
		// have died because the bench did (a crashed client drops its
		// connections): give the bench a moment to end on its own, and
		// then its own output says what happened. Only a bench that has to
		// be stopped makes this a worker failure.
		select {
		case <-bench.done:
			out.How = ExitedNormally
		case <-time.After(opts.Grace):
			stop(bench, opts.Grace)
			out.How, out.Err = WorkerFailed, fmt.Errorf("worker %s %s during the run%s", w.p.Name, describeEnd(w), tailOf(w.stderr.Name()))
		}
	}
	<-bench.done
	// The workers that were dead when the bench ended died by themselves
	// (rigor has stopped none yet), whatever order Go reaped them in: a
	// worker that dies makes the bench fail after it, so its death leads
	// the run's error.
	var died []*proc
	if out.How == ExitedNormally {
		for _, w := range procs[:len(procs)-1] {
			if dead(w) {
				died = append(died, w)
			}
		}
	}
	out.End = time.Now().UTC()
	stopAll(procs, opts.Grace)
	collectExits(procs, out)
	var deaths []string
	for _, w := range died {
		deaths = append(deaths, fmt.Sprintf("worker %s %s during the run%s", w.p.Name, describeEnd(w), tailOf(w.stderr.Name())))
	}
	out.WorkerDeath = strings.Join(deaths, "; ")
	benchExit(bench, out)
	bench.stdout.Sync()
	bench.stderr.Sync()
	out.Stdout, _ = os.ReadFile(bench.stdout.Name())
	out.Stderr, _ = os.ReadFile(bench.stderr.Name())
	out.Logs = logNames(procs)
	return out, nil
}

// startAll starts the plan's processes in order, each worker after the
// one before accepts connections (its port locked and checked free
// first), the bench last. It returns the processes started and, when one
// could not be started or never became ready, how and why.
func startAll(ctx context.Context, opts Options, progress func(string)) ([]*proc, string, error) {
	var procs []*proc
	n := len(opts.Plan.Processes)
	for i, pp := range opts.Plan.Processes {
		var portLock *flock.Lock
		if pp.ReadyAddr != "" {
			if opts.LockDir != "" {
				l, err := lockPort(ctx, opts.LockDir, pp.ReadyAddr, progress)
				if err != nil {
					return procs, WorkerFailed, fmt.Errorf("worker %s: %w", pp.Name, err)
				}
				portLock = l
			}
			// A worker's port must be free: readiness must mean that our
			// worker listens, never a stranger that held the port already.
			if err := portFree(pp.Name, pp.ReadyAddr); err != nil {
				portLock.Unlock()
				return procs, WorkerFailed, err
			}
		}
		p, err := start(pp, opts)
		if err != nil {
			portLock.Unlock()
			if i == n-1 {
				return procs, StartFailed, err
			}
			return procs, WorkerFailed, err
		}
		procs = append(procs, p)
		if i == n-1 {
			break
		}
		if pp.ReadyAddr == "" {
			// A server that binds late (vllm serve) is waited for by the
			// bench process itself.
			progress("started " + pp.Name)
		} else {
			progress(fmt.Sprintf("started %s, waiting for %s", pp.Name, pp.ReadyAddr))
		}
		err = waitReady(ctx, p, opts.ReadyTimeout)
		portLock.Unlock()
		if err != nil {
			return procs, WorkerFailed, err
		}
	}
	return procs, "", nil
}

// benchExit records how the bench process ended: its exit code, or the
// signal that killed it (exit code 128+n, as a shell says it).
func benchExit(bench *proc, out *Outcome) {
	ps := bench.cmd.ProcessState
	if ps == nil {
		return
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		out.Signaled = true
		out.Signal = ws.Signal().String()
		out.ExitCode = 128 + int(ws.Signal())
	} else {
		out.ExitCode = ps.ExitCode()
	}
}

func logNames(procs []*proc) []string {
	var out []string
	for _, p := range procs {
		out = append(out, filepath.Base(p.stdout.Name()), filepath.Base(p.stderr.Name()))
	}
	return out
}

func collectExits(procs []*proc, out *Outcome) {
	for _, p := range procs {
		<-p.done
		if ps := p.cmd.ProcessState; ps != nil {
			out.Exits[p.p.Name] = ps.ExitCode()
			if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				out.Exits[p.p.Name] = 128 + int(ws.Signal())
				out.Signals[p.p.Name] = unix.SignalName(ws.Signal())
			}
		}
	}
}

func start(pp engine.Process, opts Options) (*proc, error) {
	if len(pp.Argv) == 0 {
		return nil, fmt.Errorf("%s: empty argv", pp.Name)
	}
	stdout, err := os.Create(filepath.Join(opts.LogDir, pp.Name+".stdout"))
	if err != nil {
		return nil, err
	}
	stderr, err := os.Create(filepath.Join(opts.LogDir, pp.Name+".stderr"))
	if err != nil {
		stdout.Close()
		return nil, err
	}
	cmd := exec.Command(pp.Argv[0], pp.Argv[1:]...)
	cmd.Env = mergeEnv(opts.Env, pp.Env)
	if len(pp.SecretEnv) > 0 {
		secrets := map[string]string{}
		for _, k := range pp.SecretEnv {
			if v, ok := opts.Secrets[k]; ok {
				secrets[k] = v
			}
		}
		cmd.Env = mergeEnv(cmd.Env, secrets)
	}
	// exec.Command looked the program up in rigor's own PATH; use the
	// controlled one instead, so the plan means the same thing everywhere.
	if !strings.Contains(pp.Argv[0], "/") {
		if p, err := lookPath(pp.Argv[0], cmd.Env); err == nil {
			cmd.Path = p
			cmd.Err = nil
		} else {
			stdout.Close()
			stderr.Close()
			return nil, fmt.Errorf("%s: %s not found on the run's PATH", pp.Name, pp.Argv[0])
		}
	}
	cmd.Dir = pp.Dir
	if cmd.Dir == "" {
		cmd.Dir = opts.Dir
	}
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	cmd.Stdin = nil
	// Pdeathsig kills the process when rigor dies, even by SIGKILL or the
	// OOM killer; the guard then kills whatever it spawned.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := startCmd(cmd); err != nil {
		stdout.Close()
		stderr.Close()
		return nil, fmt.Errorf("starting %s: %w", pp.Name, err)
	}
	p := &proc{p: pp, cmd: cmd, done: make(chan struct{}), stdout: stdout, stderr: stderr}
	p.guard = newGuard(cmd.Process.Pid)
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// lookPath finds a program on the PATH of env.
func lookPath(name string, env []string) (string, error) {
	path := ""
	for _, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			path = kv[5:]
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

func waitReady(ctx context.Context, p *proc, limit time.Duration) error {
	if p.p.ReadyAddr == "" {
		return nil
	}
	deadline := time.Now().Add(limit)
	for {
		conn, err := net.DialTimeout("tcp", p.p.ReadyAddr, time.Second)
		if err == nil {
			conn.Close()
			// A connection proves that something listens, not that it
			// is our worker: the socket must be held by its process
			// group.
			err := ownsPort(p.p.Name, p.p.ReadyAddr, p.cmd.Process.Pid)
			if !errors.Is(err, errNoListener) {
				return err
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("worker %s %s before accepting connections on %s%s", p.p.Name, describeEnd(p), p.p.ReadyAddr, tailOf(p.stderr.Name()))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("worker %s did not accept connections on %s within %s%s", p.p.Name, p.p.ReadyAddr, limit, tailOf(p.stderr.Name()))
		}
	}
}

// dead reports whether a process has ended, reaped or not: its done
// channel is closed, or the kernel shows it as a zombie or gone.
func dead(p *proc) bool {
	select {
	case <-p.done:
		return true
	default:
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return true
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && len(s) > i+2 {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}

// describeEnd says how a process that rigor did not stop ended, once it
// has: "died of SIGABRT (exit 134)", "was killed by SIGTERM from outside
// rigor (exit 143)", "exited with status 3".
func describeEnd(p *proc) string {
	<-p.done
	ps := p.cmd.ProcessState
	if ps == nil {
		return fmt.Sprintf("ended: %v", p.err)
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return engine.DescribeSignal(unix.SignalName(ws.Signal()), 128+int(ws.Signal()))
	}
	return fmt.Sprintf("exited with status %d", ps.ExitCode())
}

func tailOf(path string) string {
	t := logtail.Compact(logtail.Read(path), 3)
	if t == "" {
		return ""
	}
	return "; its stderr ends: " + t
}

// stop ends a process group: SIGTERM, then SIGKILL after the grace period.
func stop(p *proc, grace time.Duration) {
	if p == nil || p.cmd.Process == nil {
		return
	}
	defer p.guard.release()
	pgid := p.cmd.Process.Pid
	select {
	case <-p.done:
		// The leader is gone; children may remain in the group.
		syscall.Kill(-pgid, syscall.SIGKILL)
		return
	default:
	}
	syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
	}
	syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.done
}

func stopAll(procs []*proc, grace time.Duration) {
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func(p *proc) {
			defer wg.Done()
			stop(p, grace)
		}(p)
	}
	wg.Wait()
}

// mergeEnv adds extra variables to a KEY=VALUE list, replacing earlier
// values, and sorts the result.
func mergeEnv(base []string, extra map[string]string) []string {
	m := map[string]string{}
	for _, kv := range base {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	for k, v := range extra {
		m[k] = v
	}
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// BaseEnvNames are the variables every process gets from the caller: the
// minimum a program needs to find itself and its locale. Everything else
// must be declared (env) or passed by name (passEnv).
var BaseEnvNames = []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ"}

// Environment builds the controlled environment of a run: the base names
// from the caller, the passEnv names from the caller (recorded), and the
// declared variables. It returns the KEY=VALUE list and the variables taken
// from the caller through passEnv, for the record.
func Environment(getenv func(string) (string, bool), declared map[string]string, pass []string) (env []string, passed map[string]string) {
	m := map[string]string{}
	for _, k := range BaseEnvNames {
		if v, ok := getenv(k); ok {
			m[k] = v
		}
	}
	passed = map[string]string{}
	for _, k := range pass {
		if v, ok := getenv(k); ok {
			m[k] = v
			passed[k] = v
		}
	}
	for k, v := range declared {
		m[k] = v
	}
	for k, v := range m {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return env, passed
}

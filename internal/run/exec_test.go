package run

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/flock"
)

// The test binary doubles as the worker and bench programs, selected by
// RIGOR_RUN_TEST_ROLE.
func TestMain(m *testing.M) {
	switch os.Getenv("RIGOR_RUN_TEST_ROLE") {
	case "worker":
		worker()
	case "bench":
		bench()
	case "sleeper":
		time.Sleep(time.Hour)
		os.Exit(0)
	case "stranger":
		ln, err := net.Listen("tcp", "127.0.0.1:"+os.Args[len(os.Args)-1])
		if err != nil {
			os.Exit(1)
		}
		for {
			c, err := ln.Accept()
			if err != nil {
				os.Exit(1)
			}
			c.Close()
		}
	}
	os.Exit(m.Run())
}

// worker listens on the port in its argv, after starting a grandchild that
// would outlive it if rigor did not kill its process group.
func worker() {
	port := os.Args[len(os.Args)-1]
	if os.Getenv("NEVER_READY") == "1" {
		time.Sleep(time.Hour)
	}
	if os.Getenv("STRANGER_BINDS_FIRST") == "1" {
		// Another run's worker takes the port the moment ours starts
		// (a process of its own group, as another rigor's would be), so
		// ours cannot bind and lingers, as rpc-server does.
		st := exec.Command(os.Args[0], port)
		st.Env = append(os.Environ(), "RIGOR_RUN_TEST_ROLE=stranger")
		st.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		st.Start()
		os.WriteFile(filepath.Join(os.Getenv("PIDDIR"), "stranger"), []byte(strconv.Itoa(st.Process.Pid)), 0o644)
		for {
			if c, err := net.Dial("tcp", "127.0.0.1:"+port); err == nil {
				c.Close()
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		fmt.Fprintln(os.Stderr, "Failed to create server socket")
		time.Sleep(time.Hour)
	}
	if os.Getenv("DIE_EARLY") == "1" {
		fmt.Fprintln(os.Stderr, "worker: no devices found")
		os.Exit(3)
	}
	gc := exec.Command(os.Args[0])
	gc.Env = append(os.Environ(), "RIGOR_RUN_TEST_ROLE=sleeper")
	gc.Start()
	os.WriteFile(filepath.Join(os.Getenv("PIDDIR"), "worker-"+port+".pid"), []byte(strconv.Itoa(gc.Process.Pid)), 0o644)
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "Starting RPC server on 127.0.0.1:"+port+" API_KEY="+os.Getenv("API_KEY"))
	if d := os.Getenv("DIE_AFTER"); d != "" {
		go func() {
			t, _ := time.ParseDuration(d)
			time.Sleep(t)
			fmt.Fprintln(os.Stderr, "worker: device lost")
			os.Exit(4)
		}()
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			os.Exit(1)
		}
		c.Close()
	}
}

func bench() {
	fmt.Println(`[{"avg_ts": 1.5}]`)
	fmt.Fprintln(os.Stderr, "env API_KEY="+os.Getenv("API_KEY")+" SECRET_X="+os.Getenv("SECRET_X")+" LEAK="+os.Getenv("LEAK"))
	if d := os.Getenv("BENCH_SLEEP"); d != "" {
		s, _ := time.ParseDuration(d)
		gc := exec.Command(os.Args[0])
		gc.Env = append(os.Environ(), "RIGOR_RUN_TEST_ROLE=sleeper")
		gc.Start()
		os.WriteFile(filepath.Join(os.Getenv("PIDDIR"), "bench.pid"), []byte(strconv.Itoa(gc.Process.Pid)), 0o644)
		time.Sleep(s)
	}
	if os.Getenv("BENCH_ABORT") == "1" {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Second)
	}
	os.Exit(0)
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

type fixture struct {
	plan   *engine.Plan
	env    []string
	piddir string
}

func newFixture(t *testing.T, workers int, extra map[string]string) fixture {
	self, _ := os.Executable()
	piddir := t.TempDir()
	f := fixture{plan: &engine.Plan{Point: "t/x"}, piddir: piddir}
	env := map[string]string{"PIDDIR": piddir, "PATH": os.Getenv("PATH")}
	for k, v := range extra {
		env[k] = v
	}
	for i := 0; i < workers; i++ {
		port := strconv.Itoa(freePort(t))
		f.plan.Processes = append(f.plan.Processes, engine.Process{
			Role: "rpc-server", Name: fmt.Sprintf("rpc-%d", i), Argv: []string{self, "-p", port},
			Env: map[string]string{"RIGOR_RUN_TEST_ROLE": "worker"}, ReadyAddr: "127.0.0.1:" + port,
		})
	}
	f.plan.Processes = append(f.plan.Processes, engine.Process{
		Role: "bench", Name: "bench", Argv: []string{self}, Env: map[string]string{"RIGOR_RUN_TEST_ROLE": "bench"},
	})
	for k, v := range env {
		f.env = append(f.env, k+"="+v)
	}
	return f
}

// survivors returns the pids recorded by children that are still alive. A
// killed process takes a moment to go, so it looks again for up to a
// second before reporting.
func (f fixture) survivors(t *testing.T) []string {
	t.Helper()
	var alive []string
	for i := 0; i < 20; i++ {
		if alive = f.alive(); len(alive) == 0 {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return alive
}

func (f fixture) alive() []string {
	var alive []string
	files, _ := filepath.Glob(filepath.Join(f.piddir, "*.pid"))
	for _, file := range files {
		b, _ := os.ReadFile(file)
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		// Reap a zombie if it is ours; then probe.
		if pid > 0 && syscall.Kill(pid, 0) == nil {
			if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !strings.Contains(string(st), ") Z ") {
				alive = append(alive, filepath.Base(file))
			}
		}
	}
	return alive
}

func TestExecute_ok(t *testing.T) {
	f := newFixture(t, 2, nil)
	out, err := Execute(context.Background(), Options{Plan: f.plan, Env: f.env, LogDir: t.TempDir(), Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if out.How != ExitedNormally || out.ExitCode != 0 {
		t.Fatalf("how=%s exit=%d err=%v", out.How, out.ExitCode, out.Err)
	}
	if !strings.Contains(string(out.Stdout), `"avg_ts": 1.5`) {
		t.Errorf("stdout = %q", out.Stdout)
	}
	if len(out.Logs) != 6 {
		t.Errorf("logs = %v, want stdout and stderr of 3 processes", out.Logs)
	}
	if s := f.survivors(t); len(s) > 0 {
		t.Errorf("processes left behind: %v", s)
	}
}

func TestExecute_timeoutKillsEverything(t *testing.T) {
	f := newFixture(t, 1, map[string]string{"BENCH_SLEEP": "1h"})
	out, err := Execute(context.Background(), Options{Plan: f.plan, Env: f.env, LogDir: t.TempDir(), Timeout: 2 * time.Second, Grace: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if out.How != TimedOut {
		t.Fatalf("how = %s, want %s", out.How, TimedOut)
	}
	if s := f.survivors(t); len(s) > 0 {
		t.Errorf("processes left behind: %v", s)
	}
}

func TestExecute_interrupt(t *testing.T) {
	f := newFixture(t, 2, map[string]string{"BENCH_SLEEP": "1h"})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Cancel once the bench has started its child.
		for i := 0; i < 200; i++ {
			if _, err := os.Stat(filepath.Join(f.piddir, "bench.pid")); err == nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		cancel()
	}()
	out, err := Execute(ctx, Options{Plan: f.plan, Env: f.env, LogDir: t.TempDir(), Grace: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if out.How != Interrupted {
		t.Fatalf("how = %s, want %s", out.How, Interrupted)
	}
	if s := f.survivors(t); len(s) > 0 {
		t.Errorf("processes left behind: %v", s)
	}
}

func TestExecute_workerNeverReady(t *testing.T) {
	f := newFixture(t, 2, nil)
	f.plan.Processes[1].Env["NEVER_READY"] = "1"
	out, err := Execute(context.Background(), Options{Plan: f.plan, Env: f.env, LogDir: t.TempDir(), ReadyTimeout: time.Second, Grace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if out.How != WorkerFailed || !strings.Contains(out.Err.Error(), "rpc-1 did not accept connections") {
		t.Fatalf("how=%s err=%v", out.How, out.Err)
	}
	if s := f.survivors(t); len(s) > 0 {
		t.Errorf("processes left behind: %v", s)
	}
}

func TestExecute_workerDiesEarly(t *testing.T) {
	f := newFixture(t, 1, nil)
	f.plan.Processes[0].Env["DIE_EARLY"] = "1"
	out, _ := Execute(context.Background(), Options{Plan: f.plan, Env: f.env, LogDir: t.TempDir(), ReadyTimeout: 10 * time.Second})
	if out.How != WorkerFailed || !strings.Contains(out.Err.Error(), "exited with status 3 before accepting connections") || !strings.Contains(out.Err.Error(), "no devices found") {
		t.Fatalf("how=%s err=%v", out.How, out.Err)
	}
}

func TestExecute_signal(t *testing.T) {
	f := newFixture(t, 0, map[string]string{"BENCH_ABORT": "1"})
	out, _ := Execute(context.Background(), Options{Plan: f.plan, Env: f.env, LogDir: t.TempDir()})
	if !out.Signaled || out.ExitCode != 137 || out.Signal != "killed" {
		t.Fatalf("signaled=%v exit=%d signal=%q", out.Signaled, out.ExitCode, out.Signal)
	}
}

func TestExecute_controlledEnvironment(t *testing.T) {
	t.Setenv("LEAK", "should-not-pass")
	t.Setenv("SECRET_X", "from-caller")
	env, passed := Environment(os.LookupEnv, map[string]string{"RIGOR_RUN_TEST_ROLE": "x"}, []string{"SECRET_X", "UNSET_VAR"})
	if passed["SECRET_X"] != "from-caller" || len(passed) != 1 {
		t.Errorf("passed = %v", passed)
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "LEAK=") {
			t.Errorf("LEAK reached the environment: %v", env)
		}
	}
	f := newFixture(t, 0, nil)
	f.env = append(env, "PIDDIR="+f.piddir)
	out, _ := Execute(context.Background(), Options{Plan: f.plan, Env: f.env, LogDir: t.TempDir()})
	if got := string(out.Stderr); !strings.Contains(got, "SECRET_X=from-caller LEAK=\n") {
		t.Errorf("bench saw %q", got)
	}
}

// A secret reaches the process that names it in SecretEnv, and no other.
func TestExecute_secretEnv(t *testing.T) {
	f := newFixture(t, 1, nil)
	f.plan.Processes[1].SecretEnv = []string{"API_KEY"}
	logs := t.TempDir()
	out, err := Execute(context.Background(), Options{Plan: f.plan, Env: f.env, LogDir: logs,
		Secrets: map[string]string{"API_KEY": "k-123", "OTHER": "o"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out.Stderr); !strings.Contains(got, "env API_KEY=k-123 ") {
		t.Errorf("the bench, which names API_KEY, saw %q", got)
	}
	worker, _ := os.ReadFile(filepath.Join(logs, "rpc-0.stderr"))
	if !strings.Contains(string(worker), "Starting RPC server") || strings.Contains(string(worker), "k-123") {
		t.Errorf("the worker, which names no secret, printed %q", worker)
	}
}

func TestExecute_notOnPath(t *testing.T) {
	plan := &engine.Plan{Processes: []engine.Process{{Role: "bench", Name: "bench", Argv: []string{"no-such-engine-binary"}}}}
	out, err := Execute(context.Background(), Options{Plan: plan, Env: []string{"PATH=/nonexistent"}, LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if out.How != StartFailed || !strings.Contains(out.Err.Error(), "not found on the run's PATH") {
		t.Fatalf("how=%s err=%v", out.How, out.Err)
	}
}

// A worker that dies while the bench runs fails the run, and the bench is
// stopped; a worker that dies because the bench ended is not blamed.
func TestExecute_workerDiesMidRun(t *testing.T) {
	f := newFixture(t, 2, map[string]string{"BENCH_SLEEP": "1h"})
	f.plan.Processes[1].Env["DIE_AFTER"] = "1s"
	out, err := Execute(context.Background(), Options{Plan: f.plan, Env: f.env, LogDir: t.TempDir(), Grace: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if out.How != WorkerFailed || !strings.Contains(out.Err.Error(), "worker rpc-1 exited with status 4 during the run") || !strings.Contains(out.Err.Error(), "device lost") {
		t.Fatalf("how=%s err=%v", out.How, out.Err)
	}
	if s := f.survivors(t); len(s) > 0 {
		t.Errorf("processes left behind: %v", s)
	}
}

// A worker whose port another process takes after the free-port check
// (another run starting the same worker at the same moment) is not ready:
// the connection reaches the stranger, and the run stops naming it
// instead of measuring someone else's worker.
func TestExecute_readinessProvesOurWorker(t *testing.T) {
	f := newFixture(t, 1, nil)
	f.plan.Processes[0].Env["STRANGER_BINDS_FIRST"] = "1"
	t.Cleanup(func() {
		b, _ := os.ReadFile(filepath.Join(f.piddir, "stranger"))
		if pid, _ := strconv.Atoi(string(b)); pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	out, err := Execute(context.Background(), Options{Plan: f.plan, Env: f.env, LogDir: t.TempDir(), ReadyTimeout: 20 * time.Second, Grace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var foreign *NotOurWorkerError
	if out.How != WorkerFailed || !errors.As(out.Err, &foreign) {
		t.Fatalf("how=%s err=%v, want %s with a NotOurWorkerError", out.How, out.Err, WorkerFailed)
	}
	b, _ := os.ReadFile(filepath.Join(f.piddir, "stranger"))
	if want, _ := strconv.Atoi(string(b)); foreign.PID != want {
		t.Errorf("the error names pid %d, want the stranger %d: %v", foreign.PID, want, out.Err)
	}
	if _, ran := out.Exits["bench"]; ran {
		t.Errorf("the bench ran against the stranger's worker: exits %v", out.Exits)
	}
	if s := f.survivors(t); len(s) > 0 {
		t.Errorf("processes left behind: %v", s)
	}
}

// A worker started and then stopped because a later worker was refused
// (its port held by another process) is recorded with its real exit.
func TestExecute_refusedWorkerRecordsEarlierExits(t *testing.T) {
	f := newFixture(t, 2, nil)
	ln, err := net.Listen("tcp", f.plan.Processes[1].ReadyAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	out, err := Execute(context.Background(), Options{Plan: f.plan, Env: f.env, LogDir: t.TempDir(), Grace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var inUse *PortInUseError
	if out.How != WorkerFailed || !errors.As(out.Err, &inUse) || inUse.Worker != "rpc-1" {
		t.Fatalf("how=%s err=%v, want rpc-1's port in use", out.How, out.Err)
	}
	if code, ok := out.Exits["rpc-0"]; !ok || code != 128+int(syscall.SIGTERM) {
		t.Errorf("rpc-0's exit = %d (recorded: %v), want %d (stopped by rigor's SIGTERM)", code, ok, 128+int(syscall.SIGTERM))
	}
	if s := f.survivors(t); len(s) > 0 {
		t.Errorf("processes left behind: %v", s)
	}
}

// Worker start is serialized per port with a lock: a run that finds
// another rigor starting a worker on its port waits, says so, and then
// finds the port taken instead of both passing the free-port check.
func TestExecute_workerStartLocked(t *testing.T) {
	f := newFixture(t, 1, nil)
	locks := t.TempDir()
	addr := f.plan.Processes[0].ReadyAddr
	_, port, _ := net.SplitHostPort(addr)
	other, err := flock.Acquire(context.Background(), filepath.Join(locks, "port-"+port+".lock"), flock.Options{Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	said := make(chan string, 10)
	type result struct {
		out *Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := Execute(context.Background(), Options{Plan: f.plan, Env: f.env, LogDir: t.TempDir(), LockDir: locks, Grace: 200 * time.Millisecond,
			Progress: func(msg string) { said <- msg }})
		done <- result{out, err}
	}()
	var msg string
	select {
	case msg = <-said:
	case r := <-done:
		t.Fatalf("Execute ended while another rigor held the port's lock: how=%s err=%v", r.out.How, r.out.Err)
	}
	if !strings.Contains(msg, "waiting for another rigor (pid "+strconv.Itoa(os.Getpid())+"), which is starting a worker on port "+port) {
		other.Unlock()
		<-done
		t.Fatalf("first progress = %q, want it to wait for the lock's holder", msg)
	}
	// The other rigor's worker now listens, and it releases the lock.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	other.Unlock()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	var inUse *PortInUseError
	if r.out.How != WorkerFailed || !errors.As(r.out.Err, &inUse) || inUse.PID != os.Getpid() {
		t.Fatalf("how=%s err=%v, want the port in use by pid %d", r.out.How, r.out.Err, os.Getpid())
	}
}

package run

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
)

// Processes die with rigor. Two mechanisms, because either alone leaves
// something behind when rigor is killed with SIGKILL (or by the OOM
// killer), which no handler can catch:
//
//   - Pdeathsig (Linux) kills each process rigor started the moment rigor
//     dies. The kernel ties it to the thread that forked, not the process:
//     if that thread exits, the child is killed early. Go may retire a
//     thread when a goroutine that locked it exits, so every process is
//     started from one goroutine locked to its thread for good
//     ([startCmd]).
//   - A guard per process group: a small shell, in its own process group
//     so that a terminal's signals do not reach it, reads a pipe whose
//     only writer is rigor. When rigor dies the pipe closes and the guard
//     kills the whole group, grandchildren included (a vLLM worker, a
//     shell's children), which Pdeathsig does not reach. When rigor stops
//     a process itself it dismisses the guard first.

var spawn = make(chan func())

func init() {
	go func() {
		// Never unlocked: this thread lives as long as rigor, so the
		// parent-death signal of the processes it forks fires only when
		// rigor dies.
		runtime.LockOSThread()
		for f := range spawn {
			f()
		}
	}()
}

// startCmd starts cmd from the spawning thread.
func startCmd(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	spawn <- func() { done <- cmd.Start() }
	return <-done
}

// guardScript waits for EOF on its standard input (rigor's end of the pipe
// closing), then stops $1 (a process group "-PGID", or a process "PID"):
// SIGTERM, and SIGKILL a second later.
const guardScript = `trap '' INT TERM HUP QUIT
while read -r _; do :; done
kill -TERM "$1" 2>/dev/null || exit 0
sleep 1
kill -KILL "$1" 2>/dev/null
exit 0`

// guard is a running guard of one process group.
type guard struct {
	cmd *exec.Cmd
	w   *os.File
}

// newGuard starts a guard of the process group pgid. It returns nil when
// no guard can be started (no /bin/sh): Pdeathsig still covers the
// process itself.
func newGuard(pgid int) *guard { return guardOf("-" + strconv.Itoa(pgid)) }

// guardOf starts a guard of target: "-PGID" or "PID".
func guardOf(target string) *guard {
	r, w, err := os.Pipe()
	if err != nil {
		return nil
	}
	cmd := exec.Command("/bin/sh", "-c", guardScript, "rigor-guard", target)
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = startCmd(cmd)
	r.Close()
	if err != nil {
		w.Close()
		return nil
	}
	return &guard{cmd: cmd, w: w}
}

// release dismisses the guard: rigor stops the group itself.
func (g *guard) release() {
	if g == nil {
		return
	}
	g.cmd.Process.Kill()
	g.w.Close()
	g.cmd.Wait()
}

// StartTied starts cmd so that it dies with this process, as the engine's
// processes do: the parent-death signal sig from the spawning thread, and
// a guard that sends SIGTERM, then SIGKILL, to cmd's process when this
// process dies, even by SIGKILL. It is for a child that is itself a rigor
// (the Slurm task's `rigor run`), which stops its own engine when it gets
// SIGTERM and whose own guards take the engine down if it is killed. Call
// release once cmd has been waited for.
func StartTied(cmd *exec.Cmd, sig syscall.Signal) (release func(), err error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = sig
	if err := startCmd(cmd); err != nil {
		return nil, err
	}
	g := guardOf(strconv.Itoa(cmd.Process.Pid))
	return g.release, nil
}

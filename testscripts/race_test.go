package testscripts

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Under `go test -race` (make test) the rigor, fake-vllm and cue commands
// of the scripts are the race-instrumented test binary itself. Two of the
// race detector's defaults cost the scripts time or hide a race:
//
//   - atexit_sleep_ms (default 1000): a race-built process that exits 0
//     sleeps a second first, to let other goroutines run into a race.
//     About 330 commands of the scripts exit 0, and every serve run's
//     load generator: six minutes of sleeping, about three of the
//     package's five at -parallel 2 (diff_rounds took 15.7 s, now 3.6 s).
//     A race is reported when it happens, not at exit; only goroutines
//     still running when rigor exits lose their last second.
//   - log_path (default stderr): a report goes to the process's stderr and
//     its exit status becomes 66. A script that expects rigor to fail
//     (`! exec rigor …`) or runs it in the background would pass with a
//     race. Each script's reports go to files of its own instead, and
//     raceLogs fails the test for any of them. (The processes rigor starts
//     itself get no GORACE: see raceNoSleep.)
//
// GORACE set by the user comes after these settings, so it wins. Without
// -race, GORACE is ignored.

// raceLogs returns the directory that receives the race reports of the
// scripts t runs, one subdirectory per script, and fails t after the
// scripts have run if any report was written.
func raceLogs(t *testing.T) string {
	dir := t.TempDir()
	t.Cleanup(func() {
		files, _ := filepath.Glob(filepath.Join(dir, "*", "race.*"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil || len(b) == 0 {
				continue
			}
			script := strings.TrimPrefix(filepath.Base(filepath.Dir(f)), "script-")
			t.Errorf("%s: the race detector reported in a process the script ran (%s):\n%s", script, filepath.Base(f), b)
		}
	})
	return dir
}

// raceEnv returns the value of GORACE for the script whose work directory
// is named script: no sleep at exit, reports into dir/script/race.PID.
func raceEnv(dir, script string) string {
	v := "atexit_sleep_ms=0"
	logs := filepath.Join(dir, script)
	// GORACE's options are separated by spaces: a path with one cannot be
	// given, and reports then stay on stderr.
	if dir != "" && !strings.ContainsAny(logs, " \t\n") && os.MkdirAll(logs, 0o755) == nil {
		v += " log_path=" + filepath.Join(logs, "race")
	}
	if u := os.Getenv("GORACE"); u != "" {
		v += " " + u
	}
	return v
}

// raceNoSleep runs first in the rigor and fake-vllm commands of the test
// binary. A process the scripts start has GORACE from setup, but
// one that rigor starts itself gets a run's controlled environment
// (internal/run.Environment), without GORACE: the load generator of every
// serve run (rigor loadgen) and the vLLM stand-in. Under -race it would
// sleep a second at exit, so it executes itself again with
// atexit_sleep_ms=0: the same pid, process group and arguments, so rigor's
// supervision of it sees no difference. Its race reports stay on its
// stderr, which rigor keeps in the run's log, and make it exit 66.
func raceNoSleep() {
	if !raceEnabled || os.Getenv("GORACE") != "" {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	// testscript finds the command by the base name of argv[0]; exe has
	// the command's name (a copy of the test binary named rigor, …).
	argv := append([]string{exe}, os.Args[1:]...)
	syscall.Exec(exe, argv, append(os.Environ(), "GORACE=atexit_sleep_ms=0"))
	// Exec returns only if it failed: go on, with the sleep.
}

package slurm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/run"
)

// The test binary doubles as the node task (`rigor jobs task`) and as the
// `rigor run` it starts, selected by RIGOR_SLURM_TEST_ROLE.
func TestMain(m *testing.M) {
	switch os.Getenv("RIGOR_SLURM_TEST_ROLE") {
	case "task":
		var b Batch
		if err := json.Unmarshal([]byte(os.Getenv("RIGOR_SLURM_TEST_BATCH")), &b); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		t := &NodeTask{Batch: &b, Log: os.Stderr, Environ: append(os.Environ(), "RIGOR_SLURM_TEST_ROLE=run")}
		if err := t.Run(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case "run":
		os.WriteFile(os.Getenv("RIGOR_SLURM_TEST_PIDFILE"), []byte(strconv.Itoa(os.Getpid())), 0o644)
		time.Sleep(time.Hour)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// alive reports whether pid is a live process (not gone, not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || len(s) <= i+2 || (s[i+2] != 'Z' && s[i+2] != 'X')
}

// TestNodeTask_killed: kill -9 of `rigor jobs task` takes its `rigor run`
// with it (parent-death signal and pipe guard, as run gives its engine),
// and the clone it left is removed by the next task's cleanup.
func TestNodeTask_killed(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	module := filepath.Join(dir, "module")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", module}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	os.MkdirAll(module, 0o755)
	git("init", "-q")
	os.WriteFile(filepath.Join(module, "f"), []byte("x\n"), 0o644)
	git("add", "f")
	git("commit", "-qm", "one")
	// The task fetches the module from the remote, at the commit the
	// submission pushed to refs/rigor/submit/<batch>.
	remote := filepath.Join(dir, "remote.git")
	git("init", "-q", "--bare", remote)
	git("push", "-q", remote, "HEAD:refs/rigor/submit/b")
	self, _ := os.Executable()
	b := Batch{ID: "b", Module: "/nonexistent", Remote: remote, Commit: git("rev-parse", "HEAD"), Rigor: self, Tasks: []Task{{Point: "x/y"}}}
	bj, _ := json.Marshal(b)
	tmp := filepath.Join(dir, "tmp")
	os.MkdirAll(tmp, 0o755)
	pidfile := filepath.Join(dir, "run.pid")
	task := exec.Command(self)
	task.Env = append(os.Environ(), "RIGOR_SLURM_TEST_ROLE=task", "RIGOR_SLURM_TEST_BATCH="+string(bj),
		"RIGOR_SLURM_TEST_PIDFILE="+pidfile, "TMPDIR="+tmp)
	var log bytes.Buffer
	task.Stderr = &log
	if err := task.Start(); err != nil {
		t.Fatal(err)
	}
	var runPID int
	for i := 0; i < 600 && runPID == 0; i++ {
		if b, err := os.ReadFile(pidfile); err == nil {
			runPID, _ = strconv.Atoi(string(b))
		}
		if runPID == 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if runPID == 0 {
		task.Process.Kill()
		task.Wait()
		t.Fatalf("the task never started its run; its log:\n%s", log.String())
	}
	t.Cleanup(func() { syscall.Kill(runPID, syscall.SIGKILL) })
	task.Process.Signal(syscall.SIGKILL)
	task.Wait()
	// The run goes within the guard's grace; look for up to a minute on a
	// loaded machine.
	for i := 0; i < 600 && alive(runPID); i++ {
		time.Sleep(100 * time.Millisecond)
	}
	if alive(runPID) {
		t.Errorf("the task's rigor run (pid %d) outlived the task killed with SIGKILL", runPID)
	}
	left, _ := filepath.Glob(filepath.Join(tmp, run.JobScratchPrefix+"*"))
	if len(left) != 1 {
		t.Fatalf("scratch clones after the kill: %v, want the killed task's one", left)
	}
	removed, _, err := run.CleanJobScratch(tmp)
	if err != nil || len(removed) != 1 || removed[0] != left[0] {
		t.Errorf("CleanJobScratch removed %v (%v), want %v", removed, err, left)
	}
	if _, err := os.Stat(left[0]); !os.IsNotExist(err) {
		t.Errorf("%s is still there", left[0])
	}
}

// A live task's clone is claimed: cleanup leaves it alone.
func TestCleanJobScratch_keepsClaimed(t *testing.T) {
	tmp := t.TempDir()
	live, _ := os.MkdirTemp(tmp, run.JobScratchPrefix)
	release, err := run.ClaimScratch(live)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	dead, _ := os.MkdirTemp(tmp, run.JobScratchPrefix)
	if r, err := run.ClaimScratch(dead); err == nil {
		r()
	}
	removed, _, err := run.CleanJobScratch(tmp)
	if err != nil || len(removed) != 1 || removed[0] != dead {
		t.Errorf("removed %v (%v), want only %s", removed, err, dead)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the claimed clone was removed: %v", err)
	}
}

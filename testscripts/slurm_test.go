package testscripts

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	// [slurm]: a Slurm cluster answers (scripts/ci-slurm.sh start). Under
	// CI=true a cluster that is not up fails the script instead of
	// skipping it: .ci/run starts one.
	scriptConds["slurm"] = slurmUp
}

// slurmUp asks the cluster once per test process: sinfo waits up to 10 s
// for a controller that is not running, and every Slurm script asks.
var slurmUp = sync.OnceValues(func() (bool, error) {
	up := false
	if _, err := exec.LookPath("sinfo"); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "sinfo", "-h", "-o", "%T").Output()
		s := string(out)
		up = err == nil && (strings.Contains(s, "idle") || strings.Contains(s, "mix") || strings.Contains(s, "alloc"))
	}
	if !up && os.Getenv("CI") == "true" {
		return false, fmt.Errorf("CI=true but no Slurm cluster answers: .ci/run starts one with scripts/ci-slurm.sh start")
	}
	return up, nil
})

func init() {
	// slurm-cancel-on-exit: when the script ends, pass or fail, cancel
	// every job the module in $WORK submitted and wait until Slurm has
	// ended them, so that no job outlives its test.
	scriptCmds["slurm-cancel-on-exit"] = func(ts *testscript.TestScript, neg bool, args []string) {
		dir := ts.MkAbs(".rigor/slurm")
		ts.Defer(func() {
			files, _ := filepath.Glob(filepath.Join(dir, "*", "batch.json"))
			var ids []string
			for _, f := range files {
				var b struct {
					JobID string `json:"jobId"`
				}
				if data, err := os.ReadFile(f); err == nil && json.Unmarshal(data, &b) == nil && b.JobID != "" {
					ids = append(ids, b.JobID)
				}
			}
			if len(ids) == 0 {
				return
			}
			exec.Command("scancel", ids...).Run()
			deadline := time.Now().Add(60 * time.Second)
			for time.Now().Before(deadline) {
				out, _ := exec.Command("squeue", append([]string{"-h", "-o", "%i", "-j"}, strings.Join(ids, ","))...).Output()
				if strings.TrimSpace(string(out)) == "" {
					return
				}
				time.Sleep(300 * time.Millisecond)
			}
		})
	}
}

func init() {
	// slurm-private VAR: set VAR to a new directory under the cluster's
	// private directory, which node n2 of scripts/ci-slurm.sh cannot see
	// (its slurmd has an empty tmpfs over it): what a script keeps there
	// stands for storage that only this host and n1 have. The directory
	// is removed when the script ends.
	scriptCmds["slurm-private"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: slurm-private VAR")
		}
		dir, err := slurmStateDir()
		if err != nil {
			ts.Fatalf("%v", err)
		}
		priv, err := os.MkdirTemp(filepath.Join(dir, "private"), "script-")
		if err != nil {
			ts.Fatalf("the cluster's private directory: %v (scripts/ci-slurm.sh start makes it)", err)
		}
		ts.Defer(func() { os.RemoveAll(priv) })
		ts.Setenv(args[0], priv)
	}
	// slurm-node kill|restart NODE: kill -9 a node's slurmd, or start it
	// again and wait until Slurm has it back (scripts/ci-slurm.sh). A
	// killed node is started again when the script ends, pass or fail.
	scriptCmds["slurm-node"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 || (args[0] != "kill" && args[0] != "restart") {
			ts.Fatalf("usage: slurm-node kill|restart NODE")
		}
		dir, err := slurmStateDir()
		if err != nil {
			ts.Fatalf("%v", err)
		}
		script := filepath.Join(ts.Getenv("REPO"), "scripts", "ci-slurm.sh")
		run := func(verb string) error {
			cmd := exec.Command(script, verb, args[1])
			cmd.Env = append(os.Environ(), "RIGOR_SLURM_DIR="+dir)
			out, err := cmd.CombinedOutput()
			if err != nil {
				return fmt.Errorf("ci-slurm.sh %s %s: %v: %s", verb, args[1], err, out)
			}
			return nil
		}
		if args[0] == "kill" {
			ts.Defer(func() { run("restart") })
		}
		if err := run(args[0]); err != nil {
			ts.Fatalf("%v", err)
		}
	}
}

// slurmStateDir is the state directory of the scripts/ci-slurm.sh cluster
// that answers, read from its configuration (the directory of
// SlurmctldPidFile), so that no path is assumed here.
func slurmStateDir() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "scontrol", "show", "config").Output()
	if err != nil {
		return "", fmt.Errorf("scontrol show config: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if ok && strings.TrimSpace(k) == "SlurmctldPidFile" {
			return filepath.Dir(strings.TrimSpace(v)), nil
		}
	}
	return "", fmt.Errorf("scontrol show config names no SlurmctldPidFile")
}

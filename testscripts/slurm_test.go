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

package slurm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rigorbench/rigor/internal/gitrepo"
	"github.com/rigorbench/rigor/internal/logtail"
	"github.com/rigorbench/rigor/internal/redact"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/rig"
	"github.com/rigorbench/rigor/internal/run"
)

// ErrRunFailed is returned by [NodeTask.Run] when the task's run was
// recorded and published but did not succeed.
var ErrRunFailed = errors.New("the run did not succeed (recorded)")

// NodeTask is one task of a batch on its Slurm node (`rigor jobs task`):
// clone the module at the submitted commit, run the point there, publish
// the record to the results branch. Everything it needs from the
// environment is a field, read by the caller.
type NodeTask struct {
	Batch *Batch
	Index int
	// Version is rigor's version, for the records the task writes itself.
	Version string
	// Log receives the task's progress and the run's stderr.
	Log io.Writer
	// Node is SLURMD_NODENAME, JobID SLURM_JOB_ID, ArrayJobID
	// SLURM_ARRAY_JOB_ID, JobGPUs SLURM_JOB_GPUS, Partition
	// SLURM_JOB_PARTITION.
	Node, JobID, ArrayJobID, JobGPUs, Partition string
	// Cache and RigFile are rigor's cache and RIGOR_RIG_FILE, for
	// detecting the node's rig; Environ the environment the run inherits.
	Cache, RigFile string
	Environ        []string
	// Output is the file Log writes to when it is one (the job's
	// --output), nil otherwise: the task removes it once its record is
	// published ok, unless the batch keeps outputs, and only when it is
	// the batch's output of this task ([Batch.OutputOf]).
	Output os.FileInfo
	// Now is the time outputs' ages are measured from (time.Now when zero).
	Now time.Time

	signalled func() bool
}

// Run runs the task. A run that was recorded but did not succeed is
// [ErrRunFailed].
func (c *NodeTask) Run(ctx context.Context) error {
	b := c.Batch
	if c.Index < 0 || c.Index >= len(b.Tasks) {
		return fmt.Errorf("task %d: the batch has tasks 0 to %d", c.Index, len(b.Tasks)-1)
	}
	t := b.Tasks[c.Index]
	if b.JobID == "" {
		// The batch in the job's script was written before Slurm named
		// the job.
		b.JobID = firstNonEmpty(c.ArrayJobID, c.JobID)
	}
	jobID := b.JobIDOf(c.Index)
	// rigor run records SIGTERM (scancel, the time limit) as an
	// interrupted run; this process stays to publish it.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	c.signalled = func() bool { return len(sig) > 0 }
	fmt.Fprintf(c.Log, "rigor: job %s on %s: %s (round %d) at %s\n", jobID, dash(c.Node), t.Point, t.Round, gitrepo.ShortHash(b.Commit))

	// Node-local scratch: the clone, and the job's rig beside it (not in
	// the clone, which must stay clean).
	// Clones left by tasks that were killed (kill -9, the OOM killer)
	// before removing theirs go first; a live task's clone is claimed.
	if dirs, _, err := run.CleanJobScratch(os.TempDir()); len(dirs) > 0 || err != nil {
		fmt.Fprintf(c.Log, "rigor: removed %d scratch %s left by killed tasks\n", len(dirs), plural(len(dirs), "clone", "clones"))
		if err != nil {
			fmt.Fprintf(c.Log, "rigor: warning: %v\n", err)
		}
	}
	// Outputs of jobs that did not succeed are kept for the user to read,
	// OutputKept long.
	if n, err := RemoveOldOutputs(NodeDir, firstTime(c.Now, time.Now()).Add(-OutputKept)); n > 0 || err != nil {
		fmt.Fprintf(c.Log, "rigor: removed %d job %s older than %s from %s\n", n, plural(n, "output", "outputs"), OutputKeptFor, NodeDir)
		if err != nil {
			fmt.Fprintf(c.Log, "rigor: warning: %v\n", err)
		}
	}
	tmp, err := os.MkdirTemp("", run.JobScratchPrefix)
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if release, err := run.ClaimScratch(tmp); err == nil {
		defer release()
	}
	// The module comes from the remote, at the commit the submission
	// pushed: the node needs no storage of the submitting side.
	work := filepath.Join(tmp, "module")
	for _, step := range []struct {
		what string
		args []string
	}{
		{"", []string{"init", "--quiet", work}},
		{"fetching the module from the remote (the node needs read access to " + redact.String(b.Remote) + ")",
			[]string{"-C", work, "fetch", "--quiet", "--no-tags", b.Remote, "+" + b.SubmitRef() + ":refs/rigor/submit"}},
		{"checking out " + gitrepo.ShortHash(b.Commit), []string{"-C", work, "checkout", "--quiet", "--detach", b.Commit}},
	} {
		out, err := exec.CommandContext(ctx, "git", step.args...).CombinedOutput()
		if err != nil && step.what == "" {
			return fmt.Errorf("git init: %v: %s", err, strings.TrimSpace(string(out)))
		}
		if err != nil {
			return c.fail(ctx, work, fmt.Sprintf("%s: %v: %s", step.what, err, redact.String(strings.TrimSpace(string(out)))), "")
		}
	}

	var stdout, stderr bytes.Buffer
	args := append([]string{"-C", work, "run", t.Point, "--no-commit", "--json"}, b.RunArgs...)
	cmd := exec.CommandContext(ctx, b.Rigor, args...)
	cmd.Env = c.Environ
	if f, note := c.allocatedRig(ctx, tmp); f != "" {
		cmd.Env = append(slices.Clone(c.Environ), rig.RigFileEnv+"="+f)
		fmt.Fprintf(c.Log, "rigor: %s\n", note)
	}
	cmd.Stdout = &stdout
	cmd.Stderr = io.MultiWriter(c.Log, &stderr)
	// The run dies with the task, even when the task is killed with
	// SIGKILL: SIGTERM lets it stop its engine (whose own guards act if
	// it is killed in turn).
	release, runErr := run.StartTied(cmd, syscall.SIGTERM)
	if runErr == nil {
		runErr = cmd.Wait()
		release()
	}
	var runs []*results.Run
	if err := json.Unmarshal(stdout.Bytes(), &runs); err != nil || len(runs) == 0 {
		// No record: rigor run refused (the node's rig does not meet
		// #requires, a lock problem) or died. Record that.
		why := lastError(stderr.String())
		if why == "" {
			why = fmt.Sprintf("rigor run exited without a record (%v)", runErr)
		}
		return c.fail(ctx, work, why, logtail.Lines(stderr.Bytes(), 20))
	}
	state := ""
	if c.signalled() {
		state = c.stopState(ctx)
	}
	if state == "NODE_FAIL" {
		return c.nodeLost()
	}
	c.rewrite(results.Open(work), runs, func(rec *results.Run) {
		b.Stamp(rec, c.Index, c.JobID, c.Node, c.Partition)
		annotateStop(rec, state)
	})
	if err := c.publish(ctx, work, runs); err != nil {
		return err
	}
	c.removeOutput(b.OutputOf(c.Index))
	return nil
}

// removeOutput removes the task's own output file (path), its record
// published ok: the record holds what a user reads of a run that
// succeeded. It goes only when it is the file this task writes to (the
// same inode), and the batch does not keep outputs.
func (c *NodeTask) removeOutput(path string) {
	if c.Batch.KeepOutput || c.Output == nil {
		return
	}
	if fi, err := os.Stat(path); err != nil || !os.SameFile(fi, c.Output) {
		return
	}
	if err := os.Remove(path); err != nil {
		fmt.Fprintf(c.Log, "rigor: warning: the record is published but this output is kept: %v\n", err)
	}
}

// allocatedRig narrows the node's rig to the GPUs Slurm gave the job
// (SLURM_JOB_GPUS, the GRES indices), so that #requires' gpu.count is
// checked against the job's GPUs rather than the node's: a 1-GPU job on an
// 8-GPU node. It writes that rig into dir and returns its path and a note,
// or "" when there is nothing to narrow (no GPUs allocated, or no more
// detected than allocated). GPUs are matched by index; when the indices do
// not match the detected ones, the first N are kept.
func (c *NodeTask) allocatedRig(ctx context.Context, dir string) (string, string) {
	var want []int
	for _, f := range strings.Split(c.JobGPUs, ",") {
		if i, err := strconv.Atoi(strings.TrimSpace(f)); err == nil {
			want = append(want, i)
		}
	}
	if len(want) == 0 {
		return "", ""
	}
	r, err := rig.Detect(ctx, rig.DetectOptions{RigFile: c.RigFile, Cache: c.Cache})
	if err != nil || len(r.Accelerators) <= len(want) {
		return "", ""
	}
	var kept []rig.GPU
	for _, g := range r.Accelerators {
		if slices.Contains(want, g.Index) {
			kept = append(kept, g)
		}
	}
	if len(kept) != len(want) {
		kept = r.Accelerators[:len(want)]
	}
	n := *r
	n.Accelerators = kept
	// The summary is derived again from the GPUs kept.
	n.AcceleratorsPerNode, n.AcceleratorModelName, n.AcceleratorMemoryCapacityGB, n.AcceleratorDriverVersion = 0, "", 0, ""
	data, err := json.Marshal(&n)
	if err != nil {
		return "", ""
	}
	path := filepath.Join(dir, "rig.json")
	if os.WriteFile(path, data, 0o644) != nil {
		return "", ""
	}
	return path, fmt.Sprintf("the job has %d of the node's %d GPUs (SLURM_JOB_GPUS=%s): #requires is checked against those", len(kept), len(r.Accelerators), c.JobGPUs)
}

// stopState asks Slurm why this job got a signal: TIMEOUT (its time
// limit), CANCELLED (scancel), NODE_FAIL (Slurm lost the node, and kills
// what is left of the job when the node comes back), or "" when Slurm
// does not say.
func (c *NodeTask) stopState(ctx context.Context) string {
	if c.JobID == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	jobs, err := (&Client{Timeout: 5 * time.Second}).Jobs(ctx, []string{c.JobID})
	if err != nil || len(jobs) == 0 {
		return ""
	}
	// While its processes are being signalled the job may show as
	// COMPLETING; the reason still tells a time limit.
	switch j := jobs[0]; {
	case j.State == "NODE_FAIL" || j.Reason == "NodeDown":
		return "NODE_FAIL"
	case j.State == "TIMEOUT" || j.Reason == "TimeLimit":
		return "TIMEOUT"
	case j.State == "CANCELLED" || j.State == "COMPLETING":
		return "CANCELLED"
	}
	return ""
}

// annotateStop says in a record rigor run wrote after Slurm signalled the
// job why Slurm stopped the run (state, from [NodeTask.stopState]): its
// time limit (status timeout) or scancel (status interrupted).
func annotateStop(rec *results.Run, state string) {
	// Slurm signals every process of the job, the engine too: a bench
	// killed by that signal is a run Slurm stopped, not a failure of the
	// engine.
	if rec.Status == results.StatusOK {
		return
	}
	switch state {
	case "TIMEOUT":
		rec.Status = results.StatusTimeout
		rec.Error = timeLimitError(rec.Error)
	case "CANCELLED":
		rec.Status = results.StatusInterrupted
		rec.Error = stoppedError("cancelled in slurm (scancel)", rec.Error)
	}
}

// rewrite applies edit to the records rigor run wrote for this job (its
// own, not yet published) and to runs.
func (c *NodeTask) rewrite(store *results.Store, runs []*results.Run, edit func(*results.Run)) {
	for _, r := range runs {
		path := store.RecordPath(r.Experiment, r.ID)
		rec, err := results.Load(path)
		if err != nil {
			fmt.Fprintf(c.Log, "rigor: warning: %v\n", err)
			continue
		}
		edit(rec)
		data, err := results.Encode(rec)
		if err != nil {
			fmt.Fprintf(c.Log, "rigor: warning: %v\n", err)
			continue
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			fmt.Fprintf(c.Log, "rigor: warning: %v\n", err)
			continue
		}
		if err := os.Rename(tmp, path); err != nil {
			fmt.Fprintf(c.Log, "rigor: warning: %v\n", err)
			continue
		}
		edit(r)
	}
}

// timeLimitError is a record's error when Slurm's time limit stopped the
// run: rigor run saw a SIGTERM and said the user interrupted it, which is
// not what happened.
func timeLimitError(runErr string) string {
	return stoppedError("slurm's time limit (--time) was reached", runErr)
}

// stoppedError is a record's error when Slurm stopped the run (why):
// rigor run saw a SIGTERM and said the user interrupted it, which is not
// what happened.
func stoppedError(why, runErr string) string {
	return joinNonEmpty(why, strings.Replace(runErr, "interrupted by the user", "the run was stopped", 1))
}

func joinNonEmpty(a, b string) string {
	if b == "" {
		return a
	}
	return a + ": " + b
}

// nodeLost is a job whose node Slurm lost (NODE_FAIL) and which is being
// killed now that the node is back: Slurm has ended the job, and rigor jobs
// records it from Slurm's account. Publishing a record here too would make
// two records of one job.
func (c *NodeTask) nodeLost() error {
	fmt.Fprintf(c.Log, "rigor: slurm ended job %s when it lost node %s (NODE_FAIL): 'rigor jobs' records it from Slurm's account; this run is not published\n", c.Batch.JobIDOf(c.Index), dash(c.Node))
	return errors.New("slurm lost the job's node (NODE_FAIL)")
}

// fail records the task as a failed run with why and the log tail, and
// publishes it.
func (c *NodeTask) fail(ctx context.Context, work, why, logTail string) error {
	b := c.Batch
	t := b.Tasks[c.Index]
	now := time.Now().UTC()
	status := results.StatusFailed
	if c.signalled != nil && c.signalled() {
		// scancel or the time limit stopped the job before rigor run
		// recorded anything (while cloning, building, installing).
		switch c.stopState(ctx) {
		case "NODE_FAIL":
			return c.nodeLost()
		case "TIMEOUT":
			status, why = results.StatusTimeout, "slurm's time limit (--time) was reached before the run: "+why
		default:
			status, why = results.StatusInterrupted, "cancelled in slurm before the run: "+why
		}
	}
	run := &results.Run{
		RigorVersion: c.Version, ID: results.NewRunID(now), Experiment: b.Experiment, Point: t.Point,
		Start: now, End: now, Status: status, Error: why, LogTail: logTail,
		Labels: []string{"slurm"},
		Notes:  fmt.Sprintf("slurm batch %s, job %s on %s, round %d", b.ID, b.JobIDOf(c.Index), dash(c.Node), t.Round),
	}
	b.Stamp(run, c.Index, c.JobID, c.Node, c.Partition)
	if _, err := os.Stat(filepath.Join(work, ".git")); err != nil {
		// Not even a clone: record it beside the batch only.
		r := &TaskResult{Index: c.Index, JobID: b.JobIDOf(c.Index), Node: c.Node, Status: run.Status, Error: why}
		b.SetResult(r)
		return errors.New(why)
	}
	if _, err := results.Open(work).Write(run, nil); err != nil {
		return fmt.Errorf("recording the failure (%s): %w", why, err)
	}
	return c.publish(ctx, work, []*results.Run{run})
}

// publish pushes the runs' records to the batch's results branch and
// writes the task's result beside the batch.
func (c *NodeTask) publish(ctx context.Context, work string, runs []*results.Run) error {
	b := c.Batch
	store := results.Open(work)
	var paths []string
	for _, r := range runs {
		for _, p := range []string{store.RecordPath(r.Experiment, r.ID), store.RawDir(r.Experiment, r.ID)} {
			if _, err := os.Stat(p); err == nil {
				rel, _ := filepath.Rel(work, p)
				paths = append(paths, filepath.ToSlash(rel))
			}
		}
	}
	first := runs[0]
	t := b.Tasks[c.Index]
	msg := fmt.Sprintf("rigor run %s: %s\n\nrun %s, slurm job %s (batch %s, round %d)", t.Point, first.Status, first.ID, b.JobIDOf(c.Index), b.ID, t.Round)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	commit, err := gitrepo.Publish(pctx, work, gitrepo.PublishOptions{
		Remote: b.Remote, Branch: b.Branch, Base: b.Commit, Paths: paths, Message: msg, Author: b.Author,
	})
	r := &TaskResult{Index: c.Index, JobID: b.JobIDOf(c.Index), Node: c.Node,
		Status: first.Status, RunID: first.ID, Record: paths[0], Pushed: commit, Error: first.Error}
	if err != nil {
		r.Error = "publishing the record: " + err.Error()
		r.Status = results.StatusFailed
		b.SetResult(r)
		return fmt.Errorf("publishing the record of %s: %w", t.Point, err)
	}
	if err := b.SetResult(r); err != nil {
		return err
	}
	fmt.Fprintf(c.Log, "rigor: %s: %s → %s on %s (%s)\n", t.Point, first.Status, paths[0], b.Branch, gitrepo.ShortHash(commit))
	if first.Status != results.StatusOK {
		return ErrRunFailed
	}
	return nil
}

// lastError returns the messages of the last "rigor: error:" lines of a
// rigor run's stderr.
func lastError(s string) string {
	var errs []string
	for _, l := range strings.Split(s, "\n") {
		if m, ok := strings.CutPrefix(l, "rigor: error: "); ok {
			errs = append(errs, m)
		}
	}
	return strings.Join(errs, "; ")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

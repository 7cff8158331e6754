package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/rigorbench/rigor/internal/gitrepo"
	"github.com/rigorbench/rigor/internal/gitsrc"
	"github.com/rigorbench/rigor/internal/logtail"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/rig"
	"github.com/rigorbench/rigor/internal/slurm"
	"github.com/rigorbench/rigor/internal/spec"
)

type jobsCmd struct {
	List   jobsListCmd   `cmd:"" default:"withargs" help:"List the Slurm jobs submitted from this module with their state and record."`
	Cancel jobsCancelCmd `cmd:"" help:"Cancel Slurm jobs submitted from this module (scancel)."`
	Task   jobsTaskCmd   `cmd:"" hidden:"" help:"Run one task of a batch on a Slurm node (the batch script runs this)."`
}

func (jobsCmd) Help() string {
	return `Lists the jobs 'rigor run ID --slurm' submitted from this module: for each
point and round its Slurm job, state and reason, and the record it produced.
A job that ended before recording a run (cancelled, timed out, killed, its
node lost) is recorded here, from Slurm's account and the job's output tail,
as a run that did not succeed: no job goes missing from the results.

Interrupting rigor never cancels jobs; 'rigor jobs cancel' does.

Examples:
  rigor jobs
  rigor jobs --wait
  rigor jobs 20261201T152000Z-3f9a --json
  rigor jobs cancel 20261201T152000Z-3f9a
  rigor jobs cancel 1234_2`
}

type jobsListCmd struct {
	Batches []string `arg:"" optional:"" name:"batch" help:"Batch ids or Slurm job ids (default: every batch of this module)."`
	Wait    bool     `help:"Wait until every job has ended, then list them; exit 2 when a run did not succeed."`
	Tail    int      `default:"5" help:"Lines of output shown for a job that ended without recording a run."`
	JSON    bool     `help:"Print the jobs as JSON."`
}

func (jobsListCmd) Help() string {
	return `Lists every job of the batches submitted from this module, with its Slurm
state and reason and the record it produced.

Examples:
  rigor jobs list
  rigor jobs list --wait --tail 20
  rigor jobs list 20261201T152000Z-3f9a --json`
}

// jobRow is one task of a batch as rigor jobs shows it, and its JSON form.
type jobRow struct {
	Batch  string `json:"batch"`
	Job    string `json:"job"`
	Point  string `json:"point"`
	Round  int    `json:"round"`
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	Node   string `json:"node,omitempty"`
	// Status and Run name the record the job produced (or rigor jobs
	// wrote for it); Record is its path relative to the module.
	Status string `json:"status,omitempty"`
	Run    string `json:"run,omitempty"`
	Record string `json:"record,omitempty"`
	// Synced reports whether the record is in this checkout yet.
	Synced bool   `json:"synced"`
	Error  string `json:"error,omitempty"`
	Tail   string `json:"tail,omitempty"`
}

func (c *jobsListCmd) Run(e *env) error {
	root, err := spec.FindRoot(e.wd)
	if err != nil {
		return err
	}
	batches, err := selectBatches(e, root, c.Batches)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	interactive := term.IsTerminal(int(os.Stderr.Fd()))
	var rows []jobRow
	for {
		rows, err = refreshJobs(ctx, e, root, batches, c.Tail)
		if err != nil && ctx.Err() != nil {
			return stoppedWaiting(e, interactive)
		}
		if err != nil {
			return err
		}
		running := 0
		for _, r := range rows {
			if !slurm.TerminalState(r.State) {
				running++
			}
		}
		if !c.Wait || running == 0 {
			break
		}
		if interactive {
			fmt.Fprintf(e.stderr, "\rrigor: waiting for %d of %d jobs ", running, len(rows))
		}
		select {
		case <-ctx.Done():
			return stoppedWaiting(e, interactive)
		case <-time.After(time.Second + time.Duration(rand.IntN(200))*time.Millisecond):
		}
	}
	if interactive && c.Wait {
		fmt.Fprint(e.stderr, "\r\033[K")
	}
	if c.JSON {
		if rows == nil {
			rows = []jobRow{}
		}
		if err := e.printJSON(rows); err != nil {
			return err
		}
	} else if len(rows) == 0 {
		fmt.Fprintf(e.stderr, "rigor: no Slurm jobs submitted from this module ('rigor run ID --slurm' submits some)\n")
		return nil
	} else {
		tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "JOB\tPOINT\tROUND\tSTATE\tREASON\tRECORD")
		for _, r := range rows {
			rec := "-"
			if r.Run != "" {
				rec = r.Run + " " + r.Status
				if !r.Synced {
					rec += " (not synced)"
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", r.Job, r.Point, r.Round, r.State, dash(r.Reason), rec)
		}
		tw.Flush()
		// The output tail of each job that ended without its own record.
		// Why each run that did not succeed failed, and the output tail of
		// each job that ended without its own record.
		for _, r := range rows {
			if r.Status == "" || r.Status == results.StatusOK {
				continue
			}
			fmt.Fprintf(e.stdout, "\n%s (%s): %s, recorded %s: %s\n", r.Job, r.Point, r.State, r.Status, r.Error)
			if r.Tail != "" {
				for _, l := range strings.Split(r.Tail, "\n") {
					fmt.Fprintf(e.stdout, "  | %s\n", l)
				}
			}
		}
	}
	if c.Wait {
		failed := 0
		for _, r := range rows {
			if r.Status != results.StatusOK {
				failed++
			}
		}
		if failed > 0 {
			return &runFailedError{failed: failed, total: len(rows)}
		}
	}
	return nil
}

// stoppedWaiting reports a wait interrupted by Ctrl-C: the jobs are
// Slurm's, and they go on.
func stoppedWaiting(e *env, interactive bool) error {
	if interactive {
		fmt.Fprint(e.stderr, "\r\033[K")
	}
	fmt.Fprintf(e.stderr, "rigor: stopped waiting; the jobs go on ('rigor jobs cancel BATCH' cancels them)\n")
	return quietError{code: ExitInterrupted}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// selectBatches returns the batches args name (batch ids or Slurm job ids),
// every batch of the module without args.
func selectBatches(e *env, root string, args []string) ([]*slurm.Batch, error) {
	all, errs := slurm.Batches(root)
	e.warn(errs)
	if len(args) == 0 {
		return all, nil
	}
	var out []*slurm.Batch
	for _, a := range args {
		b := findBatch(all, a)
		if b == nil {
			return nil, withHint(fmt.Errorf("%q is neither a batch nor a Slurm job submitted from this module", a), "'rigor jobs' lists them")
		}
		out = append(out, b)
	}
	return out, nil
}

func findBatch(all []*slurm.Batch, a string) *slurm.Batch {
	jobID, _, _ := strings.Cut(a, "_")
	for _, b := range all {
		if b.ID == a || (b.JobID != "" && b.JobID == jobID) {
			return b
		}
	}
	return nil
}

// refreshJobs reads the state of every task of the batches from Slurm and
// from what the jobs wrote, and records the tasks whose job ended without
// recording a run.
func refreshJobs(ctx context.Context, e *env, root string, batches []*slurm.Batch, tail int) ([]jobRow, error) {
	store := results.Open(root)
	client := &slurm.Client{}
	var rows []jobRow
	for _, b := range batches {
		res := make([]*slurm.TaskResult, len(b.Tasks))
		settled := true
		for i := range b.Tasks {
			r, err := b.Result(i)
			if err != nil {
				e.warn([]error{err})
			}
			res[i] = r
			if r == nil || r.SlurmState == "" {
				settled = false
			}
		}
		jobs := map[int]slurm.Job{}
		if !settled {
			js, err := client.Jobs(ctx, []string{b.JobID})
			if err != nil {
				return nil, explainSlurm(err, nil)
			}
			for _, j := range js {
				if len(b.Tasks) == 1 && j.ArrayTask == "" {
					jobs[0] = j
				}
				for _, t := range j.Tasks() {
					jobs[t] = j
				}
			}
		}
		for i, t := range b.Tasks {
			row := jobRow{Batch: b.ID, Job: b.JobIDOf(i), Point: t.Point, Round: t.Round}
			r := res[i]
			j, known := jobs[i]
			switch {
			case known:
				row.State, row.Reason, row.Node = j.State, j.Reason, j.Nodes
			case r != nil && r.SlurmState != "":
				row.State = r.SlurmState
			default:
				// Slurm has forgotten the job (or never ran it) and no
				// accounting remembers it.
				row.State = "UNKNOWN"
			}
			if slurm.TerminalState(row.State) {
				if r == nil {
					var err error
					r, err = recordLostJob(ctx, e, store, b, i, j, row.State, tail)
					if err != nil {
						return nil, err
					}
				} else if r.SlurmState == "" {
					r.SlurmState = row.State
					if err := b.SetResult(r); err != nil {
						e.warn([]error{err})
					}
				}
			}
			if r != nil {
				row.Status, row.Run, row.Record, row.Error, row.Node = r.Status, r.RunID, r.Record, r.Error, firstNonEmpty(row.Node, r.Node)
				if r.Record != "" {
					_, err := os.Stat(filepath.Join(root, filepath.FromSlash(r.Record)))
					row.Synced = err == nil
				}
				if r.Pushed == "" && r.Status != results.StatusOK {
					row.Tail = b.Tail(i, tail)
				}
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// slurmStatus maps a final Slurm state to a record status.
func slurmStatus(state string) string {
	switch state {
	case "COMPLETED":
		// The job ended well but published nothing: still not a result.
		return results.StatusFailed
	case "CANCELLED", "PREEMPTED", "DEADLINE":
		return results.StatusInterrupted
	case "TIMEOUT":
		return results.StatusTimeout
	case "NODE_FAIL", "BOOT_FAIL", "OUT_OF_MEMORY":
		return results.StatusCrashed
	}
	return results.StatusFailed
}

// recordLostJob records task i of b, whose job ended (state) without a
// record of its own, in this module's results, and commits it.
func recordLostJob(ctx context.Context, e *env, store *results.Store, b *slurm.Batch, i int, j slurm.Job, state string, tail int) (*slurm.TaskResult, error) {
	t := b.Tasks[i]
	now := time.Now().UTC()
	msg := fmt.Sprintf("slurm job %s ended %s before recording a run", b.JobIDOf(i), state)
	if j.ID != "" {
		msg = fmt.Sprintf("slurm job %s ended %s (exit %d:%d", b.JobIDOf(i), state, j.ExitCode, j.Signal)
		if j.Reason != "" {
			msg += ", " + j.Reason
		}
		msg += ") before recording a run"
	}
	if state == "UNKNOWN" {
		msg = fmt.Sprintf("slurm no longer knows job %s and it recorded no run", b.JobIDOf(i))
	}
	run := &results.Run{
		RigorVersion: Version, ID: results.NewRunID(now), Experiment: b.Experiment, Point: t.Point,
		Start: b.Submitted, End: now, Status: slurmStatus(state), Error: msg,
		LogTail: b.Tail(i, max(tail, 20)),
		Labels:  []string{"slurm"},
		Notes:   fmt.Sprintf("recorded by rigor jobs from Slurm's account: batch %s, job %s, round %d", b.ID, b.JobIDOf(i), t.Round),
	}
	path, err := store.Write(run, nil)
	if err != nil {
		return nil, fmt.Errorf("recording job %s: %w", b.JobIDOf(i), err)
	}
	rel, _ := filepath.Rel(store.Root, path)
	r := &slurm.TaskResult{Index: i, JobID: b.JobIDOf(i), Node: j.Nodes, Status: run.Status, RunID: run.ID,
		Record: filepath.ToSlash(rel), SlurmState: state, Error: msg}
	if err := b.SetResult(r); err != nil {
		return nil, err
	}
	fmt.Fprintf(e.stderr, "rigor: %s (%s): %s → %s\n", b.JobIDOf(i), t.Point, msg, filepath.ToSlash(relTo(path, e.wd)))
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if _, err := store.Commit(cctx, []string{path}, fmt.Sprintf("rigor jobs: %s: %s\n\nrun %s", t.Point, run.Status, run.ID)); err != nil && !errors.Is(err, gitrepo.ErrNotRepository) {
		fmt.Fprintf(e.stderr, "rigor: warning: the record is kept at %s but was not committed: %v\n", rel, err)
	}
	return r, nil
}

type jobsCancelCmd struct {
	Jobs []string `arg:"" name:"batch" help:"Batch ids, Slurm job ids or array tasks (1234_2) submitted from this module."`
}

func (jobsCancelCmd) Help() string {
	return `Cancels jobs with scancel: a whole batch, a Slurm job or one array task.
Only jobs submitted from this module can be named.

Examples:
  rigor jobs cancel 20261201T152000Z-3f9a
  rigor jobs cancel 1234_2`
}

func (c *jobsCancelCmd) Run(e *env) error {
	root, err := spec.FindRoot(e.wd)
	if err != nil {
		return err
	}
	all, errs := slurm.Batches(root)
	e.warn(errs)
	var ids []string
	for _, a := range c.Jobs {
		b := findBatch(all, a)
		if b == nil {
			return withHint(fmt.Errorf("%q is neither a batch nor a Slurm job submitted from this module: nothing was cancelled", a), "'rigor jobs' lists them")
		}
		id := a
		if a == b.ID {
			id = b.JobID
		}
		ids = append(ids, id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := (&slurm.Client{}).Cancel(ctx, ids); err != nil {
		return explainSlurm(err, nil)
	}
	fmt.Fprintf(e.stderr, "rigor: cancelled %s; a running job records its run as interrupted, 'rigor jobs' records the others\n", strings.Join(ids, ", "))
	return nil
}

// jobsTaskCmd is the job on its node: clone the module at the submitted
// commit, run the point there, publish the record to the results branch.
type jobsTaskCmd struct {
	Dir   string `arg:"" help:"The batch's directory."`
	Index int    `arg:"" help:"The task's index ($SLURM_ARRAY_TASK_ID)."`

	signalled func() bool
}

func (c *jobsTaskCmd) Run(e *env) error {
	b, err := slurm.LoadBatch(c.Dir)
	if err != nil {
		return err
	}
	if c.Index < 0 || c.Index >= len(b.Tasks) {
		return fmt.Errorf("task %d: the batch has tasks 0 to %d", c.Index, len(b.Tasks)-1)
	}
	t := b.Tasks[c.Index]
	jobID := b.JobIDOf(c.Index)
	node := os.Getenv("SLURMD_NODENAME")
	// rigor run records SIGTERM (scancel, the time limit) as an
	// interrupted run; this process stays to publish it.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	c.signalled = func() bool { return len(sig) > 0 }
	ctx := context.Background()
	fmt.Fprintf(e.stderr, "rigor: job %s on %s: %s (round %d) at %s\n", jobID, dash(node), t.Point, t.Round, shortHash(b.Commit))

	// Node-local scratch: the clone, and the job's rig beside it (not in
	// the clone, which must stay clean).
	tmp, err := os.MkdirTemp("", "rigor-job-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	work := filepath.Join(tmp, "module")
	clone := exec.CommandContext(ctx, "git", "clone", "--quiet", "--no-checkout", b.Module, work)
	if out, err := clone.CombinedOutput(); err != nil {
		return c.fail(ctx, e, b, work, fmt.Sprintf("cloning the module: %v: %s", err, strings.TrimSpace(string(out))), "")
	}
	checkout := exec.CommandContext(ctx, "git", "-C", work, "checkout", "--quiet", "--detach", b.Commit)
	if out, err := checkout.CombinedOutput(); err != nil {
		return c.fail(ctx, e, b, work, fmt.Sprintf("checking out %s: %v: %s", shortHash(b.Commit), err, strings.TrimSpace(string(out))), "")
	}

	var stdout, stderr bytes.Buffer
	args := append([]string{"-C", work, "run", t.Point, "--no-commit", "--json"}, b.RunArgs...)
	run := exec.CommandContext(ctx, b.Rigor, args...)
	if f, note := allocatedRig(ctx, tmp); f != "" {
		run.Env = append(os.Environ(), rig.RigFileEnv+"="+f)
		fmt.Fprintf(e.stderr, "rigor: %s\n", note)
	}
	run.Stdout = &stdout
	run.Stderr = io.MultiWriter(e.stderr, &stderr)
	runErr := run.Run()
	var runs []*results.Run
	if err := json.Unmarshal(stdout.Bytes(), &runs); err != nil || len(runs) == 0 {
		// No record: rigor run refused (the node's rig does not meet
		// #requires, a lock problem) or died. Record that.
		why := lastError(stderr.String())
		if why == "" {
			why = fmt.Sprintf("rigor run exited without a record (%v)", runErr)
		}
		return c.fail(ctx, e, b, work, why, logtail.Lines(stderr.Bytes(), 20))
	}
	if c.signalled() {
		c.annotateStop(ctx, e, results.Open(work), runs)
	}
	return c.publish(ctx, e, b, work, runs)
}

// allocatedRig narrows the node's rig to the GPUs Slurm gave the job
// (SLURM_JOB_GPUS, the GRES indices), so that #requires' gpu.count is
// checked against the job's GPUs rather than the node's: a 1-GPU job on an
// 8-GPU node. It writes that rig into dir and returns its path and a note,
// or "" when there is nothing to narrow (no GPUs allocated, or no more
// detected than allocated). GPUs are matched by index; when the indices do
// not match the detected ones, the first N are kept.
func allocatedRig(ctx context.Context, dir string) (string, string) {
	var want []int
	for _, f := range strings.Split(os.Getenv("SLURM_JOB_GPUS"), ",") {
		if i, err := strconv.Atoi(strings.TrimSpace(f)); err == nil {
			want = append(want, i)
		}
	}
	if len(want) == 0 {
		return "", ""
	}
	r, err := rig.Detect(ctx, rig.DetectOptions{RigFile: os.Getenv(rig.RigFileEnv), Cache: gitsrc.CacheDir()})
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
	return path, fmt.Sprintf("the job has %d of the node's %d GPUs (SLURM_JOB_GPUS=%s): #requires is checked against those", len(kept), len(r.Accelerators), os.Getenv("SLURM_JOB_GPUS"))
}

// stopState asks Slurm why this job got a signal: TIMEOUT (its time
// limit), CANCELLED (scancel), or "" when Slurm does not say.
func stopState(ctx context.Context) string {
	id := os.Getenv("SLURM_JOB_ID")
	if id == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	jobs, err := (&slurm.Client{Timeout: 5 * time.Second}).Jobs(ctx, []string{id})
	if err != nil || len(jobs) == 0 {
		return ""
	}
	// While its processes are being signalled the job may show as
	// COMPLETING; the reason still tells a time limit.
	switch j := jobs[0]; {
	case j.State == "TIMEOUT" || j.Reason == "TimeLimit":
		return "TIMEOUT"
	case j.State == "CANCELLED" || j.State == "COMPLETING":
		return "CANCELLED"
	}
	return ""
}

// annotateStop says in the records rigor run wrote after Slurm signalled
// the job why Slurm stopped the run: its time limit (status timeout) or
// scancel (status interrupted). The records are this job's own and not yet
// published.
func (c *jobsTaskCmd) annotateStop(ctx context.Context, e *env, store *results.Store, runs []*results.Run) {
	state := stopState(ctx)
	for _, r := range runs {
		// Slurm signals every process of the job, the engine too: a
		// bench killed by that signal is a run Slurm stopped, not a
		// failure of the engine.
		if r.Status == results.StatusOK {
			continue
		}
		path := store.RecordPath(r.Experiment, r.ID)
		rec, err := results.Load(path)
		if err != nil {
			continue
		}
		switch state {
		case "TIMEOUT":
			rec.Status = results.StatusTimeout
			rec.Error = joinNonEmpty("slurm's time limit (--time) was reached", rec.Error)
		case "CANCELLED":
			rec.Status = results.StatusInterrupted
			rec.Error = joinNonEmpty("cancelled in slurm (scancel)", rec.Error)
		default:
			continue
		}
		data, err := results.Encode(rec)
		if err != nil {
			continue
		}
		tmp := path + ".tmp"
		if os.WriteFile(tmp, data, 0o644) == nil && os.Rename(tmp, path) == nil {
			r.Status, r.Error = rec.Status, rec.Error
		}
	}
}

func joinNonEmpty(a, b string) string {
	if b == "" {
		return a
	}
	return a + ": " + b
}

// fail records the task as a failed run with why and the log tail, and
// publishes it.
func (c *jobsTaskCmd) fail(ctx context.Context, e *env, b *slurm.Batch, work, why, logTail string) error {
	t := b.Tasks[c.Index]
	now := time.Now().UTC()
	status := results.StatusFailed
	if c.signalled != nil && c.signalled() {
		// scancel or the time limit stopped the job before rigor run
		// recorded anything (while cloning, building, installing).
		switch stopState(ctx) {
		case "TIMEOUT":
			status, why = results.StatusTimeout, "slurm's time limit (--time) was reached before the run: "+why
		default:
			status, why = results.StatusInterrupted, "cancelled in slurm before the run: "+why
		}
	}
	run := &results.Run{
		RigorVersion: Version, ID: results.NewRunID(now), Experiment: b.Experiment, Point: t.Point,
		Start: now, End: now, Status: status, Error: why, LogTail: logTail,
		Labels: []string{"slurm"},
		Notes:  fmt.Sprintf("slurm batch %s, job %s on %s, round %d", b.ID, b.JobIDOf(c.Index), dash(os.Getenv("SLURMD_NODENAME")), t.Round),
	}
	if _, err := os.Stat(filepath.Join(work, ".git")); err != nil {
		// Not even a clone: record it beside the batch only.
		r := &slurm.TaskResult{Index: c.Index, JobID: b.JobIDOf(c.Index), Node: os.Getenv("SLURMD_NODENAME"), Status: run.Status, Error: why}
		b.SetResult(r)
		return errors.New(why)
	}
	if _, err := results.Open(work).Write(run, nil); err != nil {
		return fmt.Errorf("recording the failure (%s): %w", why, err)
	}
	return c.publish(ctx, e, b, work, []*results.Run{run})
}

// publish pushes the runs' records to the batch's results branch and
// writes the task's result beside the batch.
func (c *jobsTaskCmd) publish(ctx context.Context, e *env, b *slurm.Batch, work string, runs []*results.Run) error {
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
	r := &slurm.TaskResult{Index: c.Index, JobID: b.JobIDOf(c.Index), Node: os.Getenv("SLURMD_NODENAME"),
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
	fmt.Fprintf(e.stderr, "rigor: %s: %s → %s on %s (%s)\n", t.Point, first.Status, paths[0], b.Branch, shortHash(commit))
	if first.Status != results.StatusOK {
		return quietError{code: ExitRunFailed}
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

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

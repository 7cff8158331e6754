package cli

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/rigorbench/rigor/internal/results"
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

A job whose record is published ok removes its output file from its node
(/tmp/rigor-<batch>-<job>.out; 'rigor run --slurm --keep-output' keeps it);
the output of a job that did not succeed is kept there for 7 days, and
'rigor jobs' names it. 'rigor jobs --prune' removes the refs a batch keeps
on the remote (refs/rigor/submit/<batch>, refs/rigor/batches/<batch>) once
nothing needs them; 'rigor results sync' does it too.

Interrupting rigor never cancels jobs; 'rigor jobs cancel' does.

Examples:
  rigor jobs
  rigor jobs --wait
  rigor jobs --prune
  rigor jobs 20261201T152000Z-3f9a --json  # needs Slurm: a batch 'rigor run ID --slurm' submitted
  rigor jobs cancel 20261201T152000Z-3f9a  # needs Slurm: a batch 'rigor run ID --slurm' submitted
  rigor jobs cancel 1234_2  # needs Slurm: a job of such a batch`
}

type jobsListCmd struct {
	Batches []string `arg:"" optional:"" name:"batch" help:"Batch ids or Slurm job ids (default: every batch of this module)."`
	Wait    bool     `help:"Wait until every job has ended, then list them; exit 2 when a run did not succeed."`
	Tail    int      `default:"5" help:"Lines of output shown for a job that ended without recording a run."`
	JSON    bool     `help:"Print the jobs as JSON."`
	Prune   bool     `help:"Remove from the remote the refs of the batches whose every job has a record on the results branch: the commit the jobs ran (refs/rigor/submit/<batch>) at once, the batch (refs/rigor/batches/<batch>) once its records are merged here. The results branches stay."`
}

func (jobsListCmd) Help() string {
	return `Lists every job of the batches submitted from this module, with its Slurm
state and reason and the record it produced.

With --prune it lists instead what it removed from the remote and what it
kept, and why: a batch with a job still to record keeps both its refs, one
whose records are not merged here (rigor results sync) keeps its batch.

Examples:
  rigor jobs list
  rigor jobs list --wait --tail 20
  rigor jobs list --prune
  rigor jobs list 20261201T152000Z-3f9a --json  # needs Slurm: a batch 'rigor run ID --slurm' submitted`
}

// jobRow is one task of a batch as rigor jobs shows it, and its JSON form.
type jobRow = slurm.JobStatus

func (c *jobsListCmd) Run(e *env) error {
	root, err := spec.FindRoot(e.wd)
	if err != nil {
		return err
	}
	if c.Prune && c.Wait {
		return withHint(errors.New("--prune and --wait do not go together"), "'rigor jobs --wait' first, then 'rigor jobs --prune'")
	}
	batches, err := selectBatches(e, root, c.Batches)
	if err != nil {
		return err
	}
	if c.Prune {
		return c.prune(e, root, batches)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	interactive := term.IsTerminal(int(os.Stderr.Fd()))
	var rows []jobRow
	for {
		rows, err = slurm.Refresh(ctx, slurm.RefreshOptions{Store: e.store(root), Batches: batches, Tail: c.Tail, Version: Version, Warn: e.warn,
			Recorded: func(job, point, why, path string) {
				fmt.Fprintf(e.stderr, "rigor: %s (%s): %s → %s\n", job, point, why, filepath.ToSlash(relTo(path, e.wd)))
			}})
		if err != nil && ctx.Err() == nil {
			err = explainSlurm(err, nil)
		}
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
		fmt.Fprintln(tw, "JOB\tPOINT\tROUND\tSTATE\tREASON\tNODE\tRECORD")
		for _, r := range rows {
			rec := "-"
			if r.Run != "" {
				rec = r.Run + " " + r.Status
				if !r.Synced {
					rec += " (not synced)"
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", r.Job, r.Point, r.Round, r.State, dash(r.Reason), dash(r.Node), rec)
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
			if r.Output != "" && r.Node != "" {
				fmt.Fprintf(e.stdout, "  output kept on %s for %s: %s\n", r.Node, slurm.OutputKeptFor, r.Output)
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

// prune removes the refs of the finished batches from the remote and
// lists what it removed and kept.
func (c *jobsListCmd) prune(e *env, root string, batches []*slurm.Batch) error {
	remote := slurmRemote(root)
	if !hasRemote(root, remote) {
		return withHint(fmt.Errorf("the module has no git remote %q: the batches' refs are there", remote),
			"the batches' refs are on slurm.cue's remote, else origin ('git remote -v' lists the module's remotes)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	o := slurm.PruneOptions{Root: root, Remote: remote, Batches: batches}
	if len(c.Batches) > 0 {
		for _, b := range batches {
			o.Only = append(o.Only, b.ID)
		}
	}
	pruned, err := slurm.Prune(ctx, o)
	if c.JSON {
		if pruned == nil {
			pruned = []slurm.Pruned{}
		}
		if jerr := e.printJSON(pruned); jerr != nil && err == nil {
			err = jerr
		}
	} else {
		printPruned(e, pruned, remote)
	}
	if err != nil {
		return withHint(fmt.Errorf("nothing was removed: %w", err), "the refs are kept; 'git ls-remote "+remote+" refs/rigor/*' lists them")
	}
	return nil
}

// printPruned prints what slurm.Prune did: a line per batch, then a count
// on stderr.
func printPruned(e *env, pruned []slurm.Pruned, remote string) {
	removed, kept := 0, 0
	for _, p := range pruned {
		removed += len(p.Removed)
		kept += len(p.Kept)
		if len(p.Removed) > 0 {
			fmt.Fprintf(e.stdout, "%s  removed %s\n", p.Batch, strings.Join(p.Removed, " "))
		}
		if len(p.Kept) > 0 {
			fmt.Fprintf(e.stdout, "%s  kept %s: %s\n", p.Batch, strings.Join(p.Kept, " "), p.Why)
		}
	}
	fmt.Fprintf(e.stderr, "rigor: removed %d %s of finished batches from %s, kept %d; the results branches stay\n", removed, plural(removed, "ref", "refs"), remote, kept)
}

// slurmRemote is the remote the batches push to: slurm.cue's, else origin.
func slurmRemote(root string) string {
	if cfg, err := slurm.LoadConfig(root); err == nil && cfg.Remote != "" {
		return cfg.Remote
	}
	return "origin"
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
	// Batches submitted from other clones come from the remote.
	remote := slurmRemote(root)
	if hasRemote(root, remote) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := slurm.FetchBatches(ctx, root, remote)
		cancel()
		if err != nil {
			e.warn([]error{fmt.Errorf("reading the batches of other clones from %s: %w", remote, err)})
		}
	}
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

type jobsCancelCmd struct {
	Jobs []string `arg:"" name:"batch" help:"Batch ids, Slurm job ids or array tasks (1234_2) submitted from this module."`
}

func (jobsCancelCmd) Help() string {
	return `Cancels jobs with scancel: a whole batch, a Slurm job or one array task.
Only jobs submitted from this module can be named.

Examples:
  rigor jobs cancel 20261201T152000Z-3f9a  # needs Slurm: a batch 'rigor run ID --slurm' submitted
  rigor jobs cancel 1234_2  # needs Slurm: a job of such a batch`
}

func (c *jobsCancelCmd) Run(e *env) error {
	root, err := spec.FindRoot(e.wd)
	if err != nil {
		return err
	}
	// The batches of other clones come from the remote, as 'rigor jobs'
	// reads them: a batch submitted elsewhere is cancelled from here.
	all, err := selectBatches(e, root, nil)
	if err != nil {
		return err
	}
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
	Batch string `arg:"" help:"The batch, as JSON (the job script holds it), or the directory of a batch submitted by an earlier rigor."`
	Index int    `arg:"" help:"The task's index ($SLURM_ARRAY_TASK_ID)."`
}

func (c *jobsTaskCmd) Run(e *env) error {
	var b *slurm.Batch
	var err error
	if strings.HasPrefix(c.Batch, "{") {
		b, err = slurm.ParseBatch([]byte(c.Batch))
	} else {
		b, err = slurm.LoadBatch(c.Batch)
	}
	if err != nil {
		return err
	}
	cfg := e.cfg()
	task := &slurm.NodeTask{
		Batch: b, Index: c.Index, Version: Version, Log: e.stderr,
		Node: cfg.Getenv("SLURMD_NODENAME"), JobID: cfg.Getenv("SLURM_JOB_ID"), ArrayJobID: cfg.Getenv("SLURM_ARRAY_JOB_ID"), JobGPUs: cfg.Getenv("SLURM_JOB_GPUS"),
		Partition: cfg.Getenv("SLURM_JOB_PARTITION"),
		Cache:     cfg.Cache, RigFile: cfg.RigFile, Environ: os.Environ(),
	}
	// The job's --output, which the task removes once its record is
	// published ok.
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode().IsRegular() {
		task.Output = fi
	}
	err = task.Run(context.Background())
	if errors.Is(err, slurm.ErrRunFailed) {
		return quietError{code: ExitRunFailed}
	}
	return err
}

// hasRemote reports whether the git repository at root has the remote.
func hasRemote(root, remote string) bool {
	cmd := exec.Command("git", "remote", "get-url", remote)
	cmd.Dir = root
	return cmd.Run() == nil
}

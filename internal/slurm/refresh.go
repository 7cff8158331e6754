package slurm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/rigorbench/rigor/internal/gitrepo"
	"github.com/rigorbench/rigor/internal/results"
)

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// JobStatus is one task of a batch as rigor jobs shows it, and its JSON
// form.
type JobStatus struct {
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
	// Output is the job's output file on its node; empty once the job
	// removed it, its record published ok ([OutputKept]).
	Output string `json:"output,omitempty"`
}

// RefreshOptions say which batches [Refresh] reads and where it reports.
type RefreshOptions struct {
	// Store is the module's results store, configured for its commits.
	Store   *results.Store
	Batches []*Batch
	// Tail is the number of output lines kept for a job that ended
	// without recording a run.
	Tail int
	// Version is rigor's version, for the records Refresh writes.
	Version string
	// Recorded is told of each record Refresh writes for a job that ended
	// without one: the job, its point, why, and the record's path.
	Recorded func(job, point, why, path string)
	// Warn receives what went wrong without stopping the refresh.
	Warn func([]error)
}

// Refresh reads the state of every task of the batches from Slurm and
// from what the jobs wrote, and records the tasks whose job ended without
// recording a run.
func Refresh(ctx context.Context, o RefreshOptions) ([]JobStatus, error) {
	e := &o
	if e.Warn == nil {
		e.Warn = func([]error) {}
	}
	store := o.Store
	client := &Client{}
	var rows []JobStatus
	root, tail := o.Store.Root, o.Tail
	for _, b := range o.Batches {
		res := make([]*TaskResult, len(b.Tasks))
		settled := true
		for i := range b.Tasks {
			r, err := b.Result(i)
			if err != nil {
				e.Warn([]error{err})
			}
			res[i] = r
			if r == nil || r.SlurmState == "" {
				settled = false
			}
		}
		jobs := map[int]Job{}
		if !settled {
			js, err := client.Jobs(ctx, []string{b.JobID})
			if err != nil {
				return nil, err
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
		// What the jobs that ended pushed: their records on the results
		// branch say which task they are.
		// A job not found there is recorded as lost only when the branch
		// could be read.
		var pushed map[int]*TaskResult
		var readErr error
		for i := range b.Tasks {
			if j, ok := jobs[i]; res[i] == nil && ok && TerminalState(j.State) || res[i] == nil && !ok {
				if pushed, readErr = branchResults(ctx, root, b); readErr != nil {
					e.Warn([]error{fmt.Errorf("reading the records of batch %s on %s: %w", b.ID, b.Branch, readErr)})
				}
				break
			}
		}
		for i, r := range pushed {
			if i >= 0 && i < len(res) && res[i] == nil {
				res[i] = r
				if err := b.SetResult(r); err != nil {
					e.Warn([]error{err})
				}
			}
		}
		for i, t := range b.Tasks {
			row := JobStatus{Batch: b.ID, Job: b.JobIDOf(i), Point: t.Point, Round: t.Round, Output: b.OutputOf(i)}
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
			if TerminalState(row.State) {
				if r == nil && readErr == nil {
					var err error
					r, err = recordLostJob(ctx, e, store, b, i, j, row.State, tail)
					if err != nil {
						return nil, err
					}
				} else if r.SlurmState == "" {
					r.SlurmState = row.State
					if err := b.SetResult(r); err != nil {
						e.Warn([]error{err})
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
				if r.Pushed != "" && r.Status == results.StatusOK && !b.KeepOutput {
					row.Output = ""
				}
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// branchResults reads the records the batch's jobs pushed to its results
// branch (fetched into refs/rigor/jobs/<batch>): each names its batch and
// array index ([results.SlurmJob]).
func branchResults(ctx context.Context, root string, b *Batch) (map[int]*TaskResult, error) {
	out, _, err := branchResultsFrom(ctx, root, b.Remote, b)
	return out, err
}

// branchResultsFrom is [branchResults] from remote; it returns the
// branch's tip too ("" when remote has no such branch).
func branchResultsFrom(ctx context.Context, root, remote string, b *Batch) (map[int]*TaskResult, string, error) {
	tip, found, err := gitrepo.FetchBranch(ctx, root, remote, b.Branch, JobsRefPrefix+b.ID)
	if err != nil || !found {
		return nil, "", err
	}
	out, err := readBranchResults(ctx, root, b, tip)
	return out, tip, err
}

// readBranchResults reads the records of b's jobs that tip, a commit of
// its results branch, holds.
func readBranchResults(ctx context.Context, root string, b *Batch, tip string) (map[int]*TaskResult, error) {
	files, err := gitrepo.AddedSince(ctx, root, b.Commit, tip, results.Dir+"/"+b.Experiment)
	if err != nil {
		return nil, err
	}
	out := map[int]*TaskResult{}
	for _, f := range files {
		if !strings.HasSuffix(f, ".json") || !results.IsRunID(strings.TrimSuffix(path.Base(f), ".json")) {
			continue
		}
		data, err := gitrepo.ReadFile(ctx, root, tip, f)
		if err != nil {
			return nil, err
		}
		var run results.Run
		if json.Unmarshal(data, &run) != nil || run.Slurm == nil || run.Slurm.Batch != b.ID {
			continue
		}
		i := run.Slurm.ArrayIndex
		out[i] = &TaskResult{Index: i, JobID: b.JobIDOf(i), Node: run.Slurm.Node, Status: run.Status,
			RunID: run.ID, Record: f, Pushed: tip, Error: run.Error}
	}
	return out, nil
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
func recordLostJob(ctx context.Context, e *RefreshOptions, store *results.Store, b *Batch, i int, j Job, state string, tail int) (*TaskResult, error) {
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
		RigorVersion: e.Version, ID: results.NewRunID(now), Experiment: b.Experiment, Point: t.Point,
		Start: b.Submitted, End: now, Status: slurmStatus(state), Error: msg,
		LogTail: b.Tail(i, max(tail, 20)),
		Labels:  []string{"slurm"},
		Notes:   fmt.Sprintf("recorded by rigor jobs from Slurm's account: batch %s, job %s, round %d", b.ID, b.JobIDOf(i), t.Round),
	}
	b.Stamp(run, i, j.JobID, j.Nodes, j.Partition)
	rec := &results.Recorder{Store: store}
	path, err := rec.Record(run, nil)
	if err != nil {
		return nil, fmt.Errorf("recording job %s: %w", b.JobIDOf(i), err)
	}
	rel, _ := filepath.Rel(store.Root, path)
	r := &TaskResult{Index: i, JobID: b.JobIDOf(i), Node: j.Nodes, Status: run.Status, RunID: run.ID,
		Record: filepath.ToSlash(rel), SlurmState: state, Error: msg}
	if err := b.SetResult(r); err != nil {
		return nil, err
	}
	if e.Recorded != nil {
		e.Recorded(b.JobIDOf(i), t.Point, msg, path)
	}
	msg = fmt.Sprintf("rigor jobs: %s: %s\n\nrun %s, slurm job %s (batch %s, round %d)", t.Point, run.Status, run.ID, b.JobIDOf(i), b.ID, t.Round)
	if _, err := rec.Commit(ctx, msg); err != nil {
		e.Warn([]error{fmt.Errorf("the record is kept at %s but was not committed: %v", rel, err)})
	}
	// The record goes to the batch's results branch like the jobs' own,
	// so that every clone's rigor results sync brings it.
	paths := []string{filepath.ToSlash(rel)}
	if raw := store.RawDir(run.Experiment, run.ID); exists(raw) {
		relRaw, _ := filepath.Rel(store.Root, raw)
		paths = append(paths, filepath.ToSlash(relRaw))
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	pushed, err := gitrepo.Publish(pctx, store.Root, gitrepo.PublishOptions{
		Remote: b.Remote, Branch: b.Branch, Base: b.Commit, Paths: paths, Message: msg, Author: b.Author,
	})
	if err != nil {
		e.Warn([]error{fmt.Errorf("the record of job %s is committed here but not pushed to %s: %v", b.JobIDOf(i), b.Branch, err)})
		return r, nil
	}
	r.Published = pushed
	if err := b.SetResult(r); err != nil {
		return nil, err
	}
	return r, nil
}

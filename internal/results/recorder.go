package results

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/rigorbench/rigor/internal/gitrepo"
)

// Recorder is the one way a run becomes a record in the module: run,
// import and rigor jobs (for a Slurm job that ended without one) record
// through it. It marks records made from uncommitted inputs, writes each
// record and its raw outputs, saves a record the module could not take in
// a fallback store, and commits what it wrote: after each record or once
// for all. What to print is the caller's: the Recorder returns what
// happened.
type Recorder struct {
	Store *Store
	// Fallback takes a record that Store could not write (nil: the
	// write's error is returned as it is).
	Fallback *Store
	// Dirty lists, per experiment, the inputs of its runs that no commit
	// holds (relative to the module); a record of such an experiment says
	// so (Dirty, DirtyFiles).
	Dirty map[string][]string

	recorded []Recorded
	pending  []string // files written since the last commit
}

// Recorded is a record written into the store.
type Recorded struct {
	Run  *Run
	Path string
}

// FallbackError is a record that the store could not take: Saved is
// where the fallback store keeps it ("" when that failed too, with
// FallbackErr saying why).
type FallbackError struct {
	Err         error
	Saved       string
	FallbackErr error
}

func (e *FallbackError) Error() string { return e.Err.Error() }
func (e *FallbackError) Unwrap() error { return e.Err }

// Record writes run and its raw outputs (see [Store.Write]) and returns
// the record's path. When the store cannot take it and a Fallback is set,
// the record goes there and the error is a *[FallbackError].
func (r *Recorder) Record(run *Run, raw map[string][]byte) (string, error) {
	if files := r.Dirty[run.Experiment]; len(files) > 0 {
		run.Dirty, run.DirtyFiles = true, files
	}
	path, err := r.Store.Write(run, raw)
	if err != nil {
		if r.Fallback == nil {
			return "", err
		}
		saved, ferr := r.Fallback.Write(run, raw)
		return "", &FallbackError{Err: err, Saved: saved, FallbackErr: ferr}
	}
	r.recorded = append(r.recorded, Recorded{Run: run, Path: path})
	r.pending = append(r.pending, path, r.Store.RawDir(run.Experiment, run.ID))
	return path, nil
}

// Add adds files the caller wrote to the next commit beside the records
// (a bisect's state, committed with the records of each round).
func (r *Recorder) Add(paths ...string) { r.pending = append(r.pending, paths...) }

// Recorded returns the records written so far, in order.
func (r *Recorder) Recorded() []Recorded { return r.recorded }

// Commit is what [Recorder.Commit] did.
type Commit struct {
	// Hash is the commit made; "" when nothing was committed.
	Hash string
	// NotRepository is set when the module is not in a git repository:
	// the records stay written, uncommitted, and that is no error.
	NotRepository bool
	// Detached is set when the commit went onto a detached HEAD: it
	// belongs to no branch.
	Detached bool
}

// Commit commits the records (and their raw outputs) written since the
// last Commit, with msg. It does not share ctx's cancellation, so records
// written after Ctrl-C are still committed, and gives up after a minute.
// A failure is a *[gitrepo.CommitError]: the records stay written.
func (r *Recorder) Commit(ctx context.Context, msg string) (Commit, error) {
	files := r.pending
	r.pending = nil
	// A run that never started has no raw outputs directory.
	var present []string
	for _, f := range files {
		if _, err := os.Lstat(f); err == nil {
			present = append(present, f)
		}
	}
	if len(present) == 0 {
		return Commit{}, nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	var c Commit
	c.Detached, _ = r.Store.HeadDetached()
	hash, err := r.Store.Commit(ctx, present, msg)
	if errors.Is(err, gitrepo.ErrNotRepository) {
		return Commit{NotRepository: true}, nil
	}
	c.Hash = hash
	return c, err
}

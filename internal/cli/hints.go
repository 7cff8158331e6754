package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/rigorbench/rigor/internal/buildcache"
	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/gitsrc"
	"github.com/rigorbench/rigor/internal/results"
)

// explain adds what the user can do about an error of preparing or running
// the experiment id: the one place where typed errors from the libraries
// become hints (errors are matched by type, never by their text). Errors
// that know their own advice implement Hint() string.
func explain(err error, id string) error {
	if err == nil {
		return nil
	}
	var (
		fe *buildcache.FailedError
		bc *buildcache.BinaryChangedError
		ce *engine.CommitMismatchError
		pc *engine.PatchChangedError
		pe *gitsrc.PatchError
		h  interface{ Hint() string }
	)
	switch {
	case errors.As(err, &bc):
		return withHint(err, "the build cache is damaged or was tampered with; build it again with 'rigor build --rebuild "+id+"'")
	case errors.As(err, &ce):
		return withHint(err, "the source at the locked commit reports another commit; check engine.source and relock with 'rigor lock --update engine "+id+"'")
	case errors.As(err, &pc), errors.As(err, &pe):
		return withHint(err, "relock the patches with 'rigor lock --update patches "+id+"'")
	case errors.Is(err, context.Canceled):
		return withHint(err, "interrupted; nothing half-built was cached, run the command again")
	case errors.As(err, &fe) && fe.Log != "":
		return withHint(err, "the full build log is "+fe.Log)
	case errors.As(err, &h) && h.Hint() != "":
		return withHint(err, h.Hint())
	}
	return err
}

// commitRecorded commits what rec wrote since its last commit: the one
// way run and import commit. A module outside git is a warning (what
// names the records with their verb: "the records are"), and so is a
// detached HEAD (once); any other failure is returned, and the records
// stay written either way.
func (e *env) commitRecorded(rec *results.Recorder, msg, what string) error {
	c, err := rec.Commit(context.Background(), msg)
	if c.Detached && !e.warnedDetached {
		e.warnedDetached = true
		fmt.Fprintf(e.stderr, "rigor: warning: HEAD is detached: the commit belongs to no branch, and the next checkout leaves it behind ('git switch -c NAME' keeps it)\n")
	}
	if c.NotRepository {
		fmt.Fprintf(e.stderr, "rigor: warning: %s not committed: the module is not in a git repository ('git init' to keep their history, or --no-commit)\n", what)
	}
	return err
}

// notCommitted is the error for records written but not committed.
func notCommitted(what string, err error) error {
	return withHint(fmt.Errorf("%s written but not committed: %w", what, err), "commit them yourself with git, or pass --no-commit")
}

package cli

import (
	"context"
	"errors"

	"github.com/rigorbench/rigor/engine"
	"github.com/rigorbench/rigor/internal/buildcache"
	"github.com/rigorbench/rigor/internal/gitsrc"
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
		ce *engine.CommitMismatchError
		pc *engine.PatchChangedError
		pe *gitsrc.PatchError
		h  interface{ Hint() string }
	)
	switch {
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

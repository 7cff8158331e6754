//go:build unix

package gitrepo

import (
	"context"

	"github.com/rigorbench/rigor/internal/flock"
)

// lockFile takes an exclusive flock on path, waiting until ctx ends, and
// returns its release. The kernel drops the lock when the process dies, so
// a crashed rigor never leaves the repository locked.
func lockFile(ctx context.Context, path string) (func(), error) {
	l, err := flock.Acquire(ctx, path, flock.Options{Waiting: "another rigor to finish committing"})
	if err != nil {
		return nil, err
	}
	return l.Unlock, nil
}

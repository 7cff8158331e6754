package gitsrc

import (
	"context"
	"path/filepath"

	"github.com/rigorbench/rigor/internal/flock"
)

// lockMirror locks the mirror directory mirror through "<mirror>.lock", a
// sibling file, so that the lock exists before the mirror does. Readers
// share it; a fetch takes it alone.
func lockMirror(ctx context.Context, mirror string, exclusive bool) (*flock.Lock, error) {
	return flock.Acquire(ctx, filepath.Clean(mirror)+".lock", flock.Options{Shared: !exclusive, Waiting: "another rigor process using the git mirror"})
}

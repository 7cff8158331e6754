package buildcache

import (
	"context"

	"github.com/rigorbench/rigor/internal/flock"
)

// lockKey takes the lock of one build key. With wait it waits until ctx is
// done; without, it fails at once with flock.ErrLocked when another holder
// has it.
func lockKey(ctx context.Context, path string, wait bool) (*flock.Lock, error) {
	return flock.Acquire(ctx, path, flock.Options{NoWait: !wait, Waiting: "another build of the same key"})
}

package buildcache

import (
	"context"
	"errors"

	"github.com/rigorbench/rigor/internal/flock"
)

// lockKey takes the lock of one build key. With wait it waits until ctx is
// done; without, it fails at once with flock.ErrLocked when another holder
// has it.
func lockKey(ctx context.Context, path string, wait bool) (*flock.Lock, error) {
	return flock.Acquire(ctx, path, flock.Options{NoWait: !wait, Waiting: "another build of the same key"})
}

// lockToBuild takes the lock of a key to build it, writing this process's
// id into the lock file. When another process holds the lock, the trace's
// Waiting hears who before this one waits.
func lockToBuild(ctx context.Context, path string) (*flock.Lock, error) {
	opts := flock.Options{Waiting: "another build of the same key", Owner: true}
	lk, err := flock.Acquire(ctx, path, flock.Options{NoWait: true, Owner: true})
	if !errors.Is(err, flock.ErrLocked) {
		return lk, err
	}
	if t := traceOf(ctx); t != nil && t.Waiting != nil {
		t.Waiting(flock.Owner(path), path)
	}
	return flock.Acquire(ctx, path, opts)
}

// Trace is told what [Cache.Build] is doing, as net/http/httptrace's
// ClientTrace is told what a request does: the caller that prints progress
// sets it on the context ([WithTrace]) and the packages in between carry
// the context unchanged.
type Trace struct {
	// Waiting is called when another process holds the build lock of the
	// key, before waiting for it: pid is that process (0 when unknown),
	// lock the lock file.
	Waiting func(pid int, lock string)
	// Building is called when this process starts to build key; log is
	// the build log being written (moved into the entry on success, to
	// <key>.failed.log on failure).
	Building func(key, log string)
	// Substituted is called when key's entry came from a [Substituter]
	// instead of a build.
	Substituted func(key string)
}

type traceKey struct{}

// WithTrace returns ctx carrying t for the builds run under it.
func WithTrace(ctx context.Context, t *Trace) context.Context {
	return context.WithValue(ctx, traceKey{}, t)
}

func traceOf(ctx context.Context) *Trace {
	t, _ := ctx.Value(traceKey{}).(*Trace)
	return t
}

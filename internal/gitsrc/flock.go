package gitsrc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// fileLock is an flock(2) lock on a file. Locks belong to the open file
// description, so two goroutines of one process exclude each other just as
// two processes do.
type fileLock struct{ f *os.File }

// lockFile takes an exclusive or shared lock on path, creating it and its
// directory if needed, and waits for it until ctx is done.
func lockFile(ctx context.Context, path string, exclusive bool) (*fileLock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	wait := 5 * time.Millisecond
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if err == nil {
			return &fileLock{f: f}, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("locking %s: waiting for another rigor process: %w", path, ctx.Err())
		case <-time.After(wait):
		}
		if wait < 200*time.Millisecond {
			wait *= 2
		}
	}
}

// unlock releases the lock; closing the file releases it too.
func (l *fileLock) unlock() {
	unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	l.f.Close()
}

// lockMirror locks the mirror directory mirror through "<mirror>.lock", a
// sibling file, so that the lock exists before the mirror does.
func lockMirror(ctx context.Context, mirror string, exclusive bool) (*fileLock, error) {
	return lockFile(ctx, filepath.Clean(mirror)+".lock", exclusive)
}

// Package flock is rigor's one file lock: flock(2) on a lock file, waited
// for with backoff until a context ends. The kernel drops a lock when its
// process dies, so a crashed rigor never leaves anything locked. Locks
// belong to the open file description, so two goroutines of one process
// exclude each other just as two processes do.
package flock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ErrLocked is returned by a non-waiting [Lock] when another holder has the
// lock.
var ErrLocked = errors.New("locked by another process")

// Options say how to take a lock.
type Options struct {
	// Shared takes a shared (reader) lock instead of an exclusive one.
	Shared bool
	// NoWait fails at once with ErrLocked instead of waiting.
	NoWait bool
	// Waiting names what a waiter waits for, for the error when ctx ends
	// ("another build of the same key").
	Waiting string
	// Owner writes this process's id into the lock file once the
	// (exclusive) lock is held, for [Owner] to tell waiters who holds it.
	Owner bool
}

// Lock is a held lock.
type Lock struct{ f *os.File }

// Acquire takes a lock on path, creating the file and its directory.
func Acquire(ctx context.Context, path string, opts Options) (*Lock, error) {
	// The umask decides the modes, as for any tool: a cache shared by a
	// group (umask 002, a setgid folder) gets 2775 folders and 0664 lock
	// files, which the group's other users can lock too.
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
	if errors.Is(err, fs.ErrPermission) {
		// Another user's lock file that we may only read: flock(2)
		// locks through a read-only descriptor as well.
		f, err = os.Open(path)
	}
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	how := unix.LOCK_EX
	if opts.Shared {
		how = unix.LOCK_SH
	}
	delay := 5 * time.Millisecond
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if err == nil {
			if opts.Owner && !opts.Shared {
				// Best effort: a waiter without the pid still waits.
				if f.Truncate(0) == nil {
					f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
				}
			}
			return &Lock{f: f}, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		if opts.NoWait {
			f.Close()
			return nil, ErrLocked
		}
		select {
		case <-ctx.Done():
			f.Close()
			what := opts.Waiting
			if what == "" {
				what = "another rigor process"
			}
			return nil, fmt.Errorf("waiting for %s (%s): %w", what, path, ctx.Err())
		case <-time.After(delay):
		}
		if delay < 200*time.Millisecond {
			delay *= 2
		}
	}
}

// Owner returns the process id the holder of the lock at path wrote there
// (see [Options.Owner]), or 0 when the file names none.
func Owner(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// Unlock releases the lock. Unlocking a nil Lock does nothing, so that a
// lock taken only sometimes is released in one line.
func (l *Lock) Unlock() {
	if l == nil {
		return
	}
	unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	l.f.Close()
}

package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/rigorbench/rigor/internal/flock"
)

// Scratch run directories (<cache>/runs/run-*) hold a run's plan inputs
// and engine outputs until the record is written; a rigor killed with
// SIGKILL leaves its directory behind. A run claims its directory with a
// lock that the kernel drops when the process dies, so the next run (or
// `rigor cache prune`) can tell a leftover from a directory in use.

// ScratchDir returns the directory that holds the scratch run directories
// of the cache.
func ScratchDir(cache string) string { return filepath.Join(cache, "runs") }

// claimFile is the lock file inside a claimed scratch directory.
const claimFile = ".rigor-claim"

// unclaimedAge is how old an unclaimed scratch directory must be before it
// counts as left over: a directory made by a rigor that does not claim its
// directories yet, or one whose claim is being taken this instant.
const unclaimedAge = time.Hour

// ClaimScratch marks dir as in use by this process until release is
// called (or the process dies).
func ClaimScratch(dir string) (release func(), err error) {
	l, err := flock.Acquire(context.Background(), filepath.Join(dir, claimFile), flock.Options{NoWait: true})
	if err != nil {
		return nil, fmt.Errorf("claiming scratch directory %s: %w", dir, err)
	}
	return l.Unlock, nil
}

// CleanScratch removes the scratch run directories of the cache that no
// live process claims: those whose claim lock is free, and unclaimed ones
// older than an hour. It returns the directories removed and their total
// size; a directory that cannot be removed is reported in the error and
// the others are still removed.
func CleanScratch(cache string) (removed []string, size int64, err error) {
	return cleanClaimed(ScratchDir(cache), "run-")
}

// JobScratchPrefix starts the names of the Slurm task's scratch clones,
// made in the node's temporary directory.
const JobScratchPrefix = "rigor-job-"

// CleanJobScratch removes the scratch clones of Slurm tasks (tmp's
// rigor-job-* directories, this user's) that no live task claims: left by
// a task that was killed (kill -9, a node's OOM killer) before it could
// remove its clone, whole or half deleted.
func CleanJobScratch(tmp string) (removed []string, size int64, err error) {
	return cleanClaimed(tmp, JobScratchPrefix)
}

// cleanClaimed removes root's directories named prefix* that are this
// user's and that no live process claims ([ClaimScratch]).
func cleanClaimed(root, prefix string) (removed []string, size int64, err error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("listing scratch directories: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if !ours(dir) || !leftover(dir) {
			continue
		}
		n := dirSize(dir)
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("removing scratch directory %s: %w", dir, err))
			continue
		}
		removed = append(removed, dir)
		size += n
	}
	return removed, size, errors.Join(errs...)
}

// ours reports whether dir belongs to this user (a shared temporary
// directory holds other users' too).
func ours(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

// leftover reports whether no live process claims dir.
func leftover(dir string) bool {
	claim := filepath.Join(dir, claimFile)
	if _, err := os.Stat(claim); err != nil {
		fi, err := os.Stat(dir)
		return err == nil && time.Since(fi.ModTime()) > unclaimedAge
	}
	l, err := flock.Acquire(context.Background(), claim, flock.Options{NoWait: true})
	if err != nil {
		return false
	}
	l.Unlock()
	return true
}

func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

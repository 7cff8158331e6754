package buildcache

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rigorbench/rigor/internal/flock"
)

// Entry states, as [Cache.List] reports them.
const (
	// StateComplete is an entry with its marker: a usable build.
	StateComplete = "complete"
	// StateBuilding is a temporary directory whose build is running.
	StateBuilding = "building"
	// StateIncomplete is debris of a dead build: a temporary directory
	// nobody holds, or an entry directory without its marker.
	StateIncomplete = "incomplete"
	// StateFailed is the kept log of a failed build.
	StateFailed = "failed"
)

// Item is one thing in the build cache.
type Item struct {
	Key   string `json:"key"`
	State string `json:"state"`
	// Path is the directory (or, for a failed build, the log file).
	Path string `json:"path"`
	// Size is the bytes under Path.
	Size int64 `json:"size"`
	// Entry is the marker's content, for a complete entry.
	Entry *Entry `json:"entry,omitempty"`
}

// List describes every entry of the cache, complete or not, sorted by key
// then state. An absent cache is empty, not an error.
func (c Cache) List(ctx context.Context) ([]Item, error) {
	des, err := os.ReadDir(c.Dir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing build cache: %w", err)
	}
	var items []Item
	for _, de := range des {
		name := de.Name()
		path := filepath.Join(c.Dir(), name)
		var it Item
		switch {
		case strings.HasSuffix(name, ".lock"):
			continue
		case strings.HasSuffix(name, ".failed.log") && validKey(strings.TrimSuffix(name, ".failed.log")):
			it = Item{Key: strings.TrimSuffix(name, ".failed.log"), State: StateFailed, Path: path}
		case strings.Contains(name, ".tmp-") && de.IsDir():
			key := name[:strings.Index(name, ".tmp-")]
			if !validKey(key) {
				continue
			}
			it = Item{Key: key, State: StateIncomplete, Path: path}
			if c.held(ctx, key) {
				it.State = StateBuilding
			}
		case validKey(name) && de.IsDir():
			it = Item{Key: name, State: StateIncomplete, Path: path}
			if e, err := c.Lookup(name); err == nil {
				it.State, it.Entry = StateComplete, e
			}
		default:
			continue
		}
		it.Size = diskSize(it.Path)
		items = append(items, it)
	}
	sort.Slice(items, func(i, j int) bool {
		if items[i].Key != items[j].Key {
			return items[i].Key < items[j].Key
		}
		return items[i].State < items[j].State
	})
	return items, nil
}

// held reports whether another holder has key's build lock.
func (c Cache) held(ctx context.Context, key string) bool {
	lk, err := lockKey(ctx, c.lockPath(key), false)
	if err != nil {
		return errors.Is(err, flock.ErrLocked)
	}
	lk.Unlock()
	return false
}

// diskSize sums the sizes of the regular files under path.
func diskSize(path string) int64 {
	var n int64
	filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// PruneOptions configures [Cache.Prune].
type PruneOptions struct {
	// Used reports whether a lockfile uses the complete entry key; entries
	// it rejects are removed. nil keeps every complete entry.
	Used func(key string) bool
	// All removes every entry, used or not (not running builds).
	All bool
	// DryRun reports what would be removed and removes nothing.
	DryRun bool
}

// Prune removes incomplete entries, kept logs of failed builds, and
// complete entries that opts.Used rejects (all of them with opts.All), and
// returns what it removed (or would remove). A build that is running is
// never touched, and a complete entry is removed under its key's lock, its
// marker first, so that it never looks complete while half removed.
func (c Cache) Prune(ctx context.Context, opts PruneOptions) ([]Item, error) {
	items, err := c.List(ctx)
	if err != nil {
		return nil, err
	}
	var removed []Item
	for _, it := range items {
		switch it.State {
		case StateBuilding:
			continue
		case StateComplete:
			if !opts.All && (opts.Used == nil || opts.Used(it.Key)) {
				continue
			}
		}
		if opts.DryRun {
			removed = append(removed, it)
			continue
		}
		lk, err := lockKey(ctx, c.lockPath(it.Key), false)
		if errors.Is(err, flock.ErrLocked) {
			continue // a build of this key started meanwhile
		}
		if err != nil {
			return removed, err
		}
		if it.State == StateComplete {
			err = os.Remove(filepath.Join(it.Path, MarkerFile))
		}
		if err == nil {
			err = os.RemoveAll(it.Path)
		}
		lk.Unlock()
		if err != nil {
			return removed, fmt.Errorf("removing %s: %w", it.Path, err)
		}
		removed = append(removed, it)
	}
	return removed, nil
}

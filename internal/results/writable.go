package results

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ErrNoSpace is returned (wrapped) by [Store.CheckWritable] when the
// results directory's file system has less free space than
// [MinFreeBytes].
var ErrNoSpace = errors.New("not enough free space")

// MinFreeBytes is the free space [Store.CheckWritable] asks for: room for
// a record and its raw outputs with a wide margin.
var MinFreeBytes uint64 = 64 << 20

// CheckWritable reports whether a run of experiment can be recorded: the
// experiment's results directory can be created, a file can be written,
// synced and removed in it, and its file system has [MinFreeBytes] free.
// Call it before starting an engine, so that a long run is not measured
// for nothing.
func (s *Store) CheckWritable(experiment string) error {
	if err := CheckExperimentID(experiment); err != nil {
		return fmt.Errorf("checking the results directory: %w", err)
	}
	dir := filepath.Join(s.Dir, filepath.FromSlash(experiment))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("checking the results directory %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".rigor-check-*.tmp")
	if err != nil {
		return fmt.Errorf("checking the results directory %s: %w", dir, err)
	}
	name := f.Name()
	defer os.Remove(name)
	_, werr := f.Write([]byte("rigor\n"))
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return fmt.Errorf("checking the results directory %s: %w", dir, err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err == nil {
		if free := st.Bavail * uint64(st.Bsize); free < MinFreeBytes {
			return fmt.Errorf("checking the results directory %s: %w: %d MB free, want %d MB", dir, ErrNoSpace, free>>20, MinFreeBytes>>20)
		}
	}
	return nil
}

// Fallback returns a store in dir (RIGOR_FALLBACK_DIR, else
// rigor-unsaved-<uid> under the system's temporary directory: internal/cli
// decides), for a record whose write to the module failed after the run:
// [Store.Write] on it redacts and writes as in the module
// (<dir>/<experiment>/<run id>.json), and the error for the user names the
// path it returns.
func Fallback(dir string) *Store {
	return &Store{Root: dir, Dir: dir}
}

// Package buildcache is rigor's content-addressed cache of engine builds.
//
// A build lives in <cache>/builds/<key>/, where key is the sha256 of the
// build's inputs ([Inputs.Key]): the engine commit, the patch hashes in
// order, the recipe (the exact configure and build lines), the compiler
// identity and the platform. The pipeline:
//
//  1. [Cache.Lookup] finds a complete entry with one stat and one small
//     read: an entry is complete exactly when its marker file build.json
//     exists, and the marker is written last.
//  2. On a miss, [Cache.Build] takes an exclusive flock on
//     <cache>/builds/<key>.lock, so concurrent builds of one key are
//     serialized: the second waits, then finds the first one's entry.
//  3. The build runs in <key>.tmp-build (one name per key: builds of a key
//     are serialized, so the path a compiler may embed never carries a pid);
//     on success the programs are hashed into the marker, the marker is
//     written and the directory renamed to <key>. A failed or interrupted
//     build never leaves a directory that looks complete: its temporary
//     directory is removed, and its log kept as <key>.failed.log.
//  4. Before a build is used, [Entry.Verify] checks its programs against
//     the hashes in the marker (through a stat-keyed hash cache), so a
//     truncated or replaced binary is refused, never run.
//
// [Cache.List] describes every entry, complete or not; [Cache.Prune]
// removes incomplete entries and those no lockfile uses.
package buildcache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/rigorbench/rigor/internal/logtail"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// MarkerFile is the file that makes an entry complete; it holds the
// [Entry] as JSON and is written last.
const MarkerFile = "build.json"

// LogFile is the build log inside an entry.
const LogFile = "build.log"

// Inputs are everything a build's bytes depend on. Two builds with equal
// inputs are interchangeable.
type Inputs struct {
	// Engine is the engine family, e.g. "llama.cpp".
	Engine string `json:"engine"`
	// Commit is the full 40-hex source commit.
	Commit string `json:"commit"`
	// Patches are the hex sha256 of each patch, in the order applied.
	Patches []string `json:"patches"`
	// Recipe is what the build runs: configure and build arguments and
	// environment. Its exact JSON takes part in the key.
	Recipe json.RawMessage `json:"recipe"`
	// Compiler identifies the toolchain: the first line of each tool's
	// --version, by tool name ("cc", "c++", "cmake").
	Compiler map[string]string `json:"compiler"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform"`
}

// Key returns the hex sha256 of the canonical JSON of in (encoding/json
// sorts map keys; the struct fixes the field order).
func (in Inputs) Key() string {
	if in.Patches == nil {
		in.Patches = []string{}
	}
	if len(in.Recipe) == 0 {
		in.Recipe = json.RawMessage("null")
	}
	b, err := json.Marshal(in)
	if err != nil {
		// Only an invalid Recipe can fail; hash its bytes instead so that
		// the key still depends on them.
		b = append([]byte(fmt.Sprintf("%#v", in)), in.Recipe...)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Entry is a complete build, as its marker file records it.
type Entry struct {
	Key    string `json:"key"`
	Inputs Inputs `json:"inputs"`
	// Bins maps a program name to its path relative to the entry
	// directory, e.g. "llama-bench": "build/bin/llama-bench". A name with
	// a slash is a library the programs load, named by its path under the
	// build tree ("bin/libllama.so": "build/bin/libllama.so").
	Bins map[string]string `json:"bins"`
	// SHA256 maps each program and library to the sha256 of its bytes
	// when the build finished. Entries made before rigor hashed them have
	// none, and entries made before rigor hashed libraries name none.
	SHA256 map[string]string `json:"sha256,omitempty"`
	// Created is when the build finished; Seconds how long it took.
	Created time.Time `json:"created"`
	Seconds float64   `json:"seconds"`

	// Dir is the entry's directory (not stored).
	Dir string `json:"-"`
}

// Bin returns the absolute path of program name, or "" if the build has
// no such program.
func (e *Entry) Bin(name string) string {
	p, ok := e.Bins[name]
	if !ok {
		return ""
	}
	return filepath.Join(e.Dir, p)
}

// BinDir returns the directory that holds the programs (that of the first
// one by name; libraries do not count), or "" if there are none.
func (e *Entry) BinDir() string {
	names := make([]string, 0, len(e.Bins))
	for n := range e.Bins {
		if !IsLibrary(n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	return filepath.Dir(e.Bin(names[0]))
}

// Cache is the build cache under a rigor cache directory.
type Cache struct {
	// Root is rigor's cache directory; builds live in Root/builds.
	Root string
}

// Dir returns the directory that holds the entries.
func (c Cache) Dir() string { return filepath.Join(c.Root, "builds") }

// EntryDir returns the directory of key's entry.
func (c Cache) EntryDir(key string) string { return filepath.Join(c.Dir(), key) }

// ErrNotFound is returned by [Cache.Lookup] when no complete entry has the
// key.
var ErrNotFound = errors.New("no cached build")

// validKey reports whether key is 64 lower-case hex digits, so that it can
// never name a path outside the cache.
func validKey(key string) bool {
	if len(key) != 64 {
		return false
	}
	for _, c := range key {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Lookup returns the complete entry of key: one read of its marker file.
// A missing entry, or one without its marker, is [ErrNotFound].
func (c Cache) Lookup(key string) (*Entry, error) {
	if !validKey(key) {
		return nil, fmt.Errorf("looking up build %q: not a sha256 key", key)
	}
	dir := c.EntryDir(key)
	b, err := os.ReadFile(filepath.Join(dir, MarkerFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("build %s: %w", key[:12], ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading build %s: %w", key[:12], err)
	}
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("reading build %s: %s: %w", key[:12], MarkerFile, err)
	}
	if e.Key != key {
		return nil, fmt.Errorf("reading build %s: %s names key %q", key[:12], MarkerFile, e.Key)
	}
	e.Dir = dir
	return &e, nil
}

// BuildFunc builds into dir, an empty directory, writing its log to the
// file log (dir/build.log), and returns the programs it made as paths
// relative to dir. It must stop promptly when ctx is done.
type BuildFunc func(ctx context.Context, dir string, log *os.File) (bins map[string]string, err error)

// FailedError is a build that failed; its log is kept at Log.
type FailedError struct {
	Key string
	// Log is the path of the failed build's log, kept beside the entries.
	Log string
	// Tail is the last lines of the log.
	Tail string
	Err  error
}

// Error names the cause, the log and its tail.
func (e *FailedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v (log: %s)", e.Err, e.Log)
	if e.Tail != "" {
		fmt.Fprintf(&b, "\nlast lines of the build log:\n%s", e.Tail)
	}
	return b.String()
}

// Unwrap returns the build's error.
func (e *FailedError) Unwrap() error { return e.Err }

// TailLines is how many log lines a [FailedError] shows.
const TailLines = 30

// Build returns the complete entry of in, building it with fn when the
// cache has none. built reports whether this call ran fn. Builds of one key
// are serialized by a file lock: a caller that waited for another process
// building the same key gets that process's entry.
//
// fn runs in <key>.tmp-<pid>; the marker is written after fn succeeds and
// the directory is then renamed into place. If fn fails or ctx ends, the
// temporary directory is removed, the log kept as <key>.failed.log, and
// the error is a [*FailedError].
func (c Cache) Build(ctx context.Context, in Inputs, fn BuildFunc) (e *Entry, built bool, err error) {
	key := in.Key()
	if e, err := c.Lookup(key); err == nil {
		return e, false, nil
	} else if !errors.Is(err, ErrNotFound) {
		return nil, false, err
	}
	if err := os.MkdirAll(c.Dir(), 0o755); err != nil {
		return nil, false, fmt.Errorf("creating build cache: %w", err)
	}
	lk, err := lockToBuild(ctx, c.lockPath(key))
	if err != nil {
		return nil, false, err
	}
	defer lk.Unlock()
	if e, err := c.Lookup(key); err == nil {
		return e, false, nil
	} else if !errors.Is(err, ErrNotFound) {
		return nil, false, err
	}
	// Holding the lock, anything else under this key is debris of a dead
	// build: an incomplete directory or a temporary one.
	c.removeDebris(key)
	// A substituter (the archive) before building: the build id is the key.
	if e, err := c.substitute(ctx, key); err != nil || e != nil {
		return e, false, err
	}
	tmp := c.BuildDir(key)
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return nil, false, fmt.Errorf("creating build directory: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
	logPath := filepath.Join(tmp, LogFile)
	log, err := os.Create(logPath)
	if err != nil {
		return nil, false, fmt.Errorf("creating build log: %w", err)
	}
	if t := traceOf(ctx); t != nil && t.Building != nil {
		t.Building(key, logPath)
	}
	start := time.Now()
	bins, ferr := fn(ctx, tmp, log)
	if ferr == nil && ctx.Err() != nil {
		ferr = ctx.Err()
	}
	log.Close()
	if ferr != nil {
		kept := filepath.Join(c.Dir(), key+".failed.log")
		if err := os.Rename(logPath, kept); err != nil {
			kept = ""
		}
		return nil, true, &FailedError{Key: key, Log: kept, Tail: logtail.File(kept, TailLines), Err: ferr}
	}
	for name, p := range bins {
		if filepath.IsAbs(p) || strings.HasPrefix(filepath.Clean(p), "..") {
			return nil, true, fmt.Errorf("build %s: program %s at %q is outside the build directory", key[:12], name, p)
		}
	}
	sums := map[string]string{}
	for name, p := range bins {
		sum, err := fileSHA256(filepath.Join(tmp, p))
		if err != nil {
			return nil, true, fmt.Errorf("build %s: hashing %s: %w", key[:12], name, err)
		}
		sums[name] = sum
	}
	e = &Entry{Key: key, Inputs: in, Bins: bins, SHA256: sums, Created: time.Now().UTC().Truncate(time.Second), Seconds: roundSeconds(time.Since(start))}
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return nil, true, fmt.Errorf("build %s: encoding %s: %w", key[:12], MarkerFile, err)
	}
	if err := writeSynced(filepath.Join(tmp, MarkerFile), append(b, '\n')); err != nil {
		return nil, true, fmt.Errorf("build %s: writing %s: %w", key[:12], MarkerFile, err)
	}
	final := c.EntryDir(key)
	if err := os.Rename(tmp, final); err != nil {
		return nil, true, fmt.Errorf("build %s: moving into place: %w", key[:12], err)
	}
	ok = true
	os.Remove(filepath.Join(c.Dir(), key+".failed.log"))
	syncDir(c.Dir())
	e.Dir = final
	return e, true, nil
}

// BuildDir is where a build of key runs before it is moved into place:
// the same path for every build of the key, so that nothing a compiler
// embeds (a source path, a pid) differs between two builds of one key.
func (c Cache) BuildDir(key string) string {
	return filepath.Join(c.Dir(), key+".tmp-build")
}

// Remove deletes the complete entry of key, waiting for a build of the key
// that is running, so that the next [Cache.Build] builds it again
// (`rigor build --rebuild`).
func (c Cache) Remove(ctx context.Context, key string) error {
	if !validKey(key) {
		return fmt.Errorf("build cache: bad key %q", key)
	}
	lk, err := lockToBuild(ctx, c.lockPath(key))
	if err != nil {
		return err
	}
	defer lk.Unlock()
	if err := os.RemoveAll(c.EntryDir(key)); err != nil {
		return fmt.Errorf("removing build %s: %w", key[:12], err)
	}
	c.removeDebris(key)
	return nil
}

// IsLibrary says whether a name of [Entry.Bins] is a library (its path
// under the build tree, "bin/libllama.so") rather than a program.
func IsLibrary(name string) bool { return strings.Contains(name, "/") }

// BinaryChangedError is a program or library of a cached build whose bytes
// are no longer those its build produced: truncated, replaced or damaged;
// or, with Extra, a library its build did not make.
type BinaryChangedError struct {
	Key, Program, Path string
	Want, Got          string
	Extra              bool
	// Unrecorded says the build recorded no library at all: a rigor that
	// did not hash libraries made it.
	Unrecorded bool
}

func (e *BinaryChangedError) Error() string {
	if e.Extra && e.Unrecorded {
		return fmt.Sprintf("the cached build %.12s loads libraries its build did not hash (an older rigor made it): %s (%s)", e.Key, e.Program, e.Path)
	}
	if e.Extra {
		return fmt.Sprintf("the cached build %.12s has a library its build did not make: %s (%s)", e.Key, e.Program, e.Path)
	}
	return fmt.Sprintf("the cached build %.12s has a changed %s (%s): sha256 %.12s, the build made %.12s", e.Key, e.Program, e.Path, e.Got, e.Want)
}

// Verify checks the entry's programs against the hashes its build
// recorded, hashing through sum (a stat-keyed hash cache, so an unchanged
// file is not read again). A program that is missing or changed is a
// *BinaryChangedError. Entries without recorded hashes pass.
func (e *Entry) Verify(sum func(path string) (string, error)) error {
	for _, name := range sortedNames(e.SHA256) {
		want := e.SHA256[name]
		path := e.Bin(name)
		got, err := sum(path)
		if err != nil {
			got = "missing"
			if !errors.Is(err, os.ErrNotExist) {
				got = err.Error()
			}
		}
		if got != want {
			return &BinaryChangedError{Key: e.Key, Program: name, Path: path, Want: want, Got: got}
		}
	}
	return nil
}

func sortedNames(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func roundSeconds(d time.Duration) float64 {
	return float64(d.Round(time.Millisecond)) / float64(time.Second)
}

func (c Cache) lockPath(key string) string { return filepath.Join(c.Dir(), key+".lock") }

// removeDebris removes what a dead build of key left behind. The caller
// holds key's lock.
func (c Cache) removeDebris(key string) {
	os.RemoveAll(c.EntryDir(key)) // no marker, or Lookup would have found it
	matches, _ := filepath.Glob(filepath.Join(c.Dir(), key+".tmp-*"))
	for _, m := range matches {
		os.RemoveAll(m)
	}
}

// writeSynced writes data to name and fsyncs it.
func writeSynced(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

package results

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rigorbench/rigor/internal/redact"
)

// Dir is the name of the results directory under the module root.
const Dir = "results"

// ErrNotFound is returned (wrapped) when a run, an experiment's runs or a
// record file does not exist.
var ErrNotFound = errors.New("not found")

// kindError is an error whose message reads on its own and which also
// matches sentinels: errors.Is(err, ErrNotFound) without ": not found"
// tacked onto the message.
type kindError struct {
	msg   string
	kinds []error
}

func (e *kindError) Error() string { return e.msg }

func (e *kindError) Is(target error) bool {
	for _, k := range e.kinds {
		if k == target {
			return true
		}
	}
	return false
}

func notFound(format string, args ...any) error {
	return &kindError{msg: fmt.Sprintf(format, args...), kinds: []error{ErrNotFound}}
}

// ErrExists is returned (wrapped) by [Store.Write] when a record with the
// run's id already exists: records are never overwritten.
var ErrExists = errors.New("record already exists")

// Store is a results directory: results/<experiment id>/<run id>.json per
// run, with the run's raw outputs in results/<experiment id>/<run id>/.
type Store struct {
	// Root is the module root; Dir is Root/results.
	Root string
	Dir  string
	// Fingerprinter, when set, makes [Store.Write] record a secret
	// variable's keyed fingerprint instead of plain [Redacted]
	// ([RedactWith]); see [LoadFingerprinter].
	Fingerprinter *Fingerprinter
	// Author and Scrubber configure the commits ([gitrepo.Repo]): the
	// value of RIGOR_GIT_AUTHOR, and the environment's secrets to keep out
	// of commit messages.
	Author   string
	Scrubber *redact.Scrubber
}

// Open returns the store of the module at root. It touches nothing on
// disk: a store whose directory does not exist yet lists no runs.
func Open(root string) *Store {
	return &Store{Root: root, Dir: filepath.Join(root, Dir)}
}

// runIDPattern matches the ids [NewRunID] makes, and the longer suffixes
// imports may use.
var runIDPattern = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z(-[0-9A-Za-z._-]+)?$`)

// IsRunID reports whether s has the shape of a run id
// (20260508T032753Z-3f9a).
func IsRunID(s string) bool { return runIDPattern.MatchString(s) }

// NewRunID returns a run id for a run started at t: the UTC time to the
// second and four random hex digits, e.g. "20260508T032753Z-3f9a". Ids sort
// by start time; two runs started in the same second get different ids
// with probability 1 - 1/65536, and [Store.Write] refuses the rare
// collision rather than overwrite.
func NewRunID(t time.Time) string {
	var b [2]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return t.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// CheckExperimentID reports whether id can name a directory under
// results/: slash-separated components of letters, digits, '.', '_' and
// '-', none of them "." or "..".
func CheckExperimentID(id string) error {
	if id == "" {
		return errors.New("empty experiment id")
	}
	for _, c := range strings.Split(id, "/") {
		if c == "" || c == "." || c == ".." {
			return fmt.Errorf("experiment id %q: empty, . or .. component", id)
		}
		for _, r := range c {
			if !(r == '.' || r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return fmt.Errorf("experiment id %q: character %q cannot name a results directory", id, r)
			}
		}
	}
	return nil
}

func checkRunID(id string) error {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, `/\`) || strings.HasPrefix(id, ".") {
		return fmt.Errorf("run id %q cannot name a record file", id)
	}
	return nil
}

// RecordPath returns the path of a run's record.
func (s *Store) RecordPath(experiment, id string) string {
	return filepath.Join(s.Dir, filepath.FromSlash(experiment), id+".json")
}

// RawDir returns the directory that holds a run's raw outputs.
func (s *Store) RawDir(experiment, id string) string {
	return filepath.Join(s.Dir, filepath.FromSlash(experiment), id)
}

// Encode returns the canonical encoding of a run: indented JSON in the
// field order of [Run], map keys sorted, a trailing newline.
// HTML characters are not escaped: a redacted value reads <redacted>, not
// \u003credacted\u003e.
func Encode(r *Run) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Write records a run: it redacts secrets ([Redact]), fills Schema and
// Files, and writes the record atomically (a temporary file, fsync, a
// link that never replaces an existing file, fsync of the directory)
// before anything else, so that a crash afterwards still leaves the
// record. Then it writes the raw outputs (file name → content, names
// relative to the run's raw directory, secrets scrubbed) beside it. It
// returns the record's path; the record is there whenever that path is
// returned, even with an error about raw files.
func (s *Store) Write(run *Run, raw map[string][]byte) (string, error) {
	if err := CheckExperimentID(run.Experiment); err != nil {
		return "", fmt.Errorf("writing record: %w", err)
	}
	if err := checkRunID(run.ID); err != nil {
		return "", fmt.Errorf("writing record: %w", err)
	}
	names := make([]string, 0, len(raw))
	for name := range raw {
		if !filepath.IsLocal(name) || name != filepath.ToSlash(filepath.Clean(name)) {
			return "", fmt.Errorf("writing record %s: raw file name %q is not a clean relative path", run.ID, name)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	secrets := collectSecrets(run)
	RedactWith(run, s.Fingerprinter)
	if run.Schema == 0 {
		run.Schema = SchemaVersion
	}
	if run.Point == "" {
		run.Point = run.Experiment
	}
	files := append([]string(nil), run.Files...)
	for _, n := range names {
		if !contains(files, n) {
			files = append(files, n)
		}
	}
	sort.Strings(files)
	run.Files = files
	data, err := Encode(run)
	if err != nil {
		return "", fmt.Errorf("encoding record %s: %w", run.ID, err)
	}
	// Last line of defence: whatever field a secret hid in (a note, a
	// sample label), the record's text is redacted as a whole.
	if red := redact.NewScrubber(secrets...).Bytes(data); !bytes.Equal(red, data) && json.Valid(red) {
		data = red
	}
	path := s.RecordPath(run.Experiment, run.ID)
	if err := writeNew(path, data); err != nil {
		return "", err
	}
	s.noteID(run.Experiment, run.ID)
	if len(names) > 0 {
		dir := s.RawDir(run.Experiment, run.ID)
		for _, n := range names {
			p := filepath.Join(dir, filepath.FromSlash(n))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return path, fmt.Errorf("writing raw output of %s (the record is kept at %s): %w", run.ID, path, err)
			}
			if err := os.WriteFile(p, scrubBytes(raw[n], secrets), 0o644); err != nil {
				return path, fmt.Errorf("writing raw output of %s (the record is kept at %s): %w", run.ID, path, err)
			}
		}
	}
	return path, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// writeNew writes data to path atomically and never replaces an existing
// file: temp file, fsync, close, link to the final name (which fails if it
// exists), remove the temp file, fsync the directory.
func writeNew(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("writing record: %w", err)
	}
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("writing record %s: %w", path, ErrExists)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing record: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("writing record %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("writing record %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing record %s: %w", path, err)
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		return fmt.Errorf("writing record %s: %w", path, err)
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("writing record %s: %w", path, ErrExists)
		}
		// A file system without hard links: rename, having checked above
		// that nothing is there.
		if err := os.Rename(tmp, path); err != nil {
			return fmt.Errorf("writing record %s: %w", path, err)
		}
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}

// Filter selects runs in [Store.List]. Empty fields select everything.
type Filter struct {
	// Experiment is an experiment id: only its directory is read.
	Experiment string
	// Point is a point id ("exp[ub=16]"); spaces and axis order do not
	// matter.
	Point string
	// Package lists the experiments of a package: those whose id is
	// Package/NAME (only its directory and their directories are read).
	// Not with Experiment or Point.
	Package string
}

// List loads the runs the filter selects, ordered by start time (then
// id). Files are read and decoded in parallel. A record that cannot be
// loaded does not fail the listing: it is left out and returned among the
// warnings as a *[LoadError] naming the file. A missing results
// directory, or experiment directory, lists nothing.
func (s *Store) List(f Filter) ([]*Run, []error, error) {
	if f.Experiment != "" {
		if err := CheckExperimentID(f.Experiment); err != nil {
			return nil, nil, err
		}
	}
	paths, err := s.recordPaths(f.Experiment)
	if err != nil {
		return nil, nil, err
	}
	runs, warnings := loadAll(paths)
	runs = filterRuns(runs, f)
	SortRuns(runs)
	return runs, warnings, nil
}

// ListDirs loads the records directly in the given directories under
// results/ (slash paths, as [Store.DirsUnder] returns them; not their
// subdirectories), ordered like [Store.List], whatever experiment each
// record names. Only those directories are read. Failures are warnings,
// as in [Store.List].
func (s *Store) ListDirs(dirs []string) ([]*Run, []error, error) {
	paths, err := s.recordPathsIn(dirs)
	if err != nil {
		return nil, nil, err
	}
	runs, warnings := loadAll(paths)
	SortRuns(runs)
	return runs, warnings, nil
}

// LoadFiles loads the record files of the paths (as [Summary.Path] gives
// them), in start order; a record that cannot be loaded is left out and
// returned among the warnings.
func (s *Store) LoadFiles(paths []string) ([]*Run, []error) {
	runs, warnings := loadAll(paths)
	SortRuns(runs)
	return runs, warnings
}

func filterRuns(runs []*Run, f Filter) []*Run {
	if f.Experiment == "" && f.Point == "" {
		return runs
	}
	out := runs[:0]
	for _, r := range runs {
		if f.Experiment != "" && r.Experiment != f.Experiment {
			continue
		}
		if f.Point != "" && !SamePoint(r.Point, f.Point) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// SamePoint reports whether two point ids name the same point, ignoring
// spaces and the order of the axes: "x[ub=16,t=4]" and "x[t=4, ub=16]".
func SamePoint(a, b string) bool {
	return normPoint(a) == normPoint(b)
}

func normPoint(id string) string {
	id = strings.ReplaceAll(id, " ", "")
	i := strings.IndexByte(id, '[')
	if i < 0 || !strings.HasSuffix(id, "]") {
		return id
	}
	axes := strings.Split(id[i+1:len(id)-1], ",")
	sort.Strings(axes)
	return id[:i] + "[" + strings.Join(axes, ",") + "]"
}

// SortRuns orders runs by start time, then id.
func SortRuns(runs []*Run) {
	sort.SliceStable(runs, func(i, j int) bool {
		a, b := runs[i], runs[j]
		if !a.Start.Equal(b.Start) {
			return a.Start.Before(b.Start)
		}
		return a.ID < b.ID
	})
}

// recordPaths returns the record files of one experiment (its directory
// only) or, with experiment "", of every experiment ([Store.recordDirs]).
func (s *Store) recordPaths(experiment string) ([]string, error) {
	dirs, err := s.recordDirs(experiment)
	if err != nil {
		return nil, err
	}
	return s.recordPathsIn(dirs)
}

func (s *Store) recordPathsIn(dirs []string) ([]string, error) {
	var out []string
	for _, d := range dirs {
		dir := filepath.Join(s.Dir, filepath.FromSlash(d))
		ents, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing runs of %s: %w", d, err)
		}
		readCounts.dirEntries.Add(int64(len(ents)))
		for _, e := range ents {
			if isRecordName(e) {
				out = append(out, filepath.Join(dir, e.Name()))
			}
		}
	}
	return out, nil
}

func isRecordName(d fs.DirEntry) bool {
	n := d.Name()
	return !d.IsDir() && strings.HasSuffix(n, ".json") && !strings.HasPrefix(n, ".")
}

// loadAll loads the files in parallel, keeping their order; failures
// become warnings.
func loadAll(paths []string) ([]*Run, []error) {
	runs := make([]*Run, len(paths))
	errs := make([]error, len(paths))
	forEach(len(paths), func(i int) { runs[i], errs[i] = Load(paths[i]) })
	out := runs[:0]
	var warnings []error
	for i, r := range runs {
		if errs[i] != nil {
			warnings = append(warnings, errs[i])
			continue
		}
		out = append(out, r)
	}
	return out, warnings
}

// Find returns the record path of a run id, searching every experiment:
// through the index's run-id map (ids.go) when it names the record, else
// by listing every directory, which writes the map again.
func (s *Store) Find(id string) (string, error) {
	if err := checkRunID(id); err != nil {
		return "", err
	}
	if p, ok := s.lookupID(id); ok {
		return p, nil
	}
	paths, err := s.recordPaths("")
	if err != nil {
		return "", fmt.Errorf("finding run %s: %w", id, err)
	}
	s.writeIDs(paths)
	var found []string
	for _, p := range paths {
		if filepath.Base(p) == id+".json" {
			found = append(found, p)
		}
	}
	switch len(found) {
	case 0:
		return "", notFound("run %s: no record %s.json under %s/", id, id, Dir)
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("run id %s is recorded more than once: %s", id, strings.Join(found, ", "))
}

// LatestInvocationPerPoint is [LatestPerPoint] widened to the rounds of
// one invocation: for each point it keeps the run LatestPerPoint picks and
// every other run of that point recorded by the same invocation (the other
// rounds of `rigor run --rounds`). Runs without an invocation stand alone.
// The result is in start order.
func LatestInvocationPerPoint(runs []*Run) []*Run {
	latest := LatestPerPoint(runs)
	keep := map[*Run]bool{}
	inv := map[string]string{} // point → invocation of its latest run
	for _, r := range latest {
		keep[r] = true
		if r.Invocation != "" {
			inv[normPoint(r.Point)] = r.Invocation
		}
	}
	out := latest
	for _, r := range runs {
		if !keep[r] && r.Invocation != "" && inv[normPoint(r.Point)] == r.Invocation {
			keep[r] = true
			out = append(out, r)
		}
	}
	SortRuns(out)
	return out
}

// LatestPerPoint keeps the latest run of each point, preferring the
// latest run whose status is ok: a diff against the latest failed run has
// nothing to compare. A point whose runs all failed keeps its latest run,
// so that the failure is reported rather than hidden. The result is in
// start order.
func LatestPerPoint(runs []*Run) []*Run {
	out := latestPer(runs, func(r *Run) (string, time.Time, string, string) { return r.Point, r.Start, r.ID, r.Status })
	SortRuns(out)
	return out
}

// latestPer keeps, for each point, its latest ok item, or its latest item
// when none is ok, in the order points first appear; later means a later
// start, then a greater id. Runs and index summaries share it.
func latestPer[T any](items []T, fields func(T) (point string, start time.Time, id, status string)) []T {
	type pick struct {
		latest, ok       T
		hasLatest, hasOK bool
		latestAt, okAt   time.Time
		latestID, okID   string
	}
	by := map[string]*pick{}
	var order []string
	later := func(at time.Time, id string, thanAt time.Time, thanID string) bool {
		if !at.Equal(thanAt) {
			return at.After(thanAt)
		}
		return id > thanID
	}
	for _, it := range items {
		point, start, id, status := fields(it)
		k := normPoint(point)
		p := by[k]
		if p == nil {
			p = &pick{}
			by[k] = p
			order = append(order, k)
		}
		if !p.hasLatest || later(start, id, p.latestAt, p.latestID) {
			p.latest, p.hasLatest, p.latestAt, p.latestID = it, true, start, id
		}
		if status == StatusOK && (!p.hasOK || later(start, id, p.okAt, p.okID)) {
			p.ok, p.hasOK, p.okAt, p.okID = it, true, start, id
		}
	}
	out := make([]T, 0, len(by))
	for _, k := range order {
		if p := by[k]; p.hasOK {
			out = append(out, p.ok)
		} else {
			out = append(out, p.latest)
		}
	}
	return out
}

// forEach calls f(0) … f(n-1) on twice GOMAXPROCS goroutines (the work is
// mostly waiting for the disk) and returns when all have returned.
func forEach(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0)*2, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

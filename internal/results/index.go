package results

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// The index is a derived cache of record summaries under results/.index/:
// one segment file per experiment directory, holding for each record file
// its stat (size, modification and change times, inode) and its
// [Summary]. A summary is used only while the file's stat still matches;
// any other file is read again and its entry replaced, so the index can
// never disagree with the records. It can be deleted at any time: the
// next listing rebuilds the segments it reads. It holds machine-specific
// stat data, so it ignores itself in git (.index/.gitignore).
const indexDir = ".index"

// indexVersion changes whenever the segment format or the summary does:
// a segment of another version is rebuilt.
const indexVersion = 3

// racyWindow is how recent a file's modification may be for its entry
// to be kept: a file changed again within the file system's timestamp
// granularity, with the same size, would keep the same stat (git's "racy
// clean" problem), so recent files are read again until they have aged.
var racyWindow = 2 * time.Second

// indexNow is the clock racyWindow is measured against; tests move it.
var indexNow = time.Now

// fileKey is what a record file's stat must still say for its summary to
// be used.
type fileKey struct {
	Size  int64  `json:"size"`
	Mtime int64  `json:"mtime"`
	Ctime int64  `json:"ctime,omitempty"`
	Ino   uint64 `json:"ino,omitempty"`
}

// recent reports whether the file changed within racyWindow of now.
func (k fileKey) recent(now time.Time) bool {
	limit := now.Add(-racyWindow).UnixNano()
	return k.Mtime >= limit || k.Ctime >= limit
}

type segment struct {
	Version int            `json:"version"`
	Dir     string         `json:"dir"`
	Records []segmentEntry `json:"records"`
}

type segmentEntry struct {
	Name    string   `json:"name"`
	Key     fileKey  `json:"stat"`
	Summary *Summary `json:"summary"`
}

// indexPath is the segment file of an experiment directory (slash path
// under results/). '+' cannot occur in an experiment id, so the flattened
// names never collide.
func (s *Store) indexPath(dir string) string {
	return filepath.Join(s.Dir, indexDir, strings.ReplaceAll(dir, "/", "+")+".idx")
}

// recordDirs returns the directories under results/ that may hold
// records (slash paths relative to it): one experiment's, or with
// experiment "" every directory but raw-output directories (a directory
// beside a "<name>.json") and hidden ones. Only directories are read: no
// file is opened or stat'ed.
func (s *Store) recordDirs(experiment string) ([]string, error) {
	ls, err := s.listRecordDirs(experiment)
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.rel
	}
	return out, err
}

// dirListing is a directory of [Store.recordDirs] with its entries as the
// walk read them; ents is nil when the directory was not read (one
// experiment's, which its reader lists itself).
type dirListing struct {
	rel  string
	ents []fs.DirEntry
}

func (s *Store) listRecordDirs(experiment string) ([]dirListing, error) {
	if experiment != "" {
		return []dirListing{{rel: experiment}}, nil
	}
	var out []dirListing
	var walk func(rel string) error
	walk = func(rel string) error {
		ents, err := os.ReadDir(filepath.Join(s.Dir, filepath.FromSlash(rel)))
		if err != nil {
			if rel == "" && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		names := make(map[string]bool, len(ents))
		for _, e := range ents {
			names[e.Name()] = true
		}
		if rel != "" {
			out = append(out, dirListing{rel: rel, ents: ents})
		}
		for _, e := range ents {
			n := e.Name()
			if !e.IsDir() || strings.HasPrefix(n, ".") || names[n+".json"] {
				continue
			}
			if err := walk(pathJoin(rel, n)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(""); err != nil {
		return nil, fmt.Errorf("listing runs: %w", err)
	}
	return out, nil
}

// Experiments lists the experiment ids that have a directory under
// results/ (and the directories above them), sorted.
func (s *Store) Experiments() ([]string, error) {
	dirs, err := s.recordDirs("")
	sort.Strings(dirs)
	return dirs, err
}

func pathJoin(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// Summaries returns the summaries of the runs the filter selects, in
// start order, from the index: only records added or changed since it
// was last written are read (and their entries written back). Like
// [Store.List], a record that cannot be loaded is left out and returned
// among the warnings.
func (s *Store) Summaries(f Filter) ([]*Summary, []error, error) {
	if f.Experiment != "" {
		if err := CheckExperimentID(f.Experiment); err != nil {
			return nil, nil, err
		}
	}
	dirs, err := s.listRecordDirs(f.Experiment)
	if err != nil {
		return nil, nil, err
	}
	now := indexNow()
	type result struct {
		sums     []*Summary
		warnings []error
		err      error
	}
	res := make([]result, len(dirs))
	workers := min(runtime.GOMAXPROCS(0)*2, len(dirs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r := &res[i]
				r.sums, r.warnings, r.err = s.dirSummaries(dirs[i].rel, dirs[i].ents, now)
				dirs[i].ents = nil // let the listing go
			}
		}()
	}
	for i := range dirs {
		next <- i
	}
	close(next)
	wg.Wait()
	var sums []*Summary
	var warnings []error
	for _, r := range res {
		if r.err != nil {
			return nil, nil, r.err
		}
		sums = append(sums, r.sums...)
		warnings = append(warnings, r.warnings...)
	}
	if f.Experiment == "" {
		s.pruneIndex(dirs)
	}
	if f.Experiment != "" || f.Point != "" {
		out := sums[:0]
		for _, x := range sums {
			if (f.Experiment == "" || x.Experiment == f.Experiment) && (f.Point == "" || SamePoint(x.Point, f.Point)) {
				out = append(out, x)
			}
		}
		sums = out
	}
	sortSummaries(sums)
	return sums, warnings, nil
}

func sortSummaries(sums []*Summary) {
	sort.SliceStable(sums, func(i, j int) bool {
		a, b := sums[i], sums[j]
		if !a.Start.Equal(b.Start) {
			return a.Start.Before(b.Start)
		}
		return a.ID < b.ID
	})
}

// dirSummaries summarizes the records of one directory through its
// segment, and rewrites the segment when anything changed.
func (s *Store) dirSummaries(dir string, ents []fs.DirEntry, now time.Time) ([]*Summary, []error, error) {
	abs := filepath.Join(s.Dir, filepath.FromSlash(dir))
	if ents == nil {
		var err error
		ents, err = os.ReadDir(abs)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("listing runs of %s: %w", dir, err)
		}
	}
	old := s.readSegment(dir)
	byName := make(map[string]*segmentEntry, len(old.Records))
	for i := range old.Records {
		byName[old.Records[i].Name] = &old.Records[i]
	}
	seg := segment{Version: indexVersion, Dir: dir}
	dirty := false
	var sums []*Summary
	var warnings []error
	for _, e := range ents {
		if !isRecordName(e) {
			continue
		}
		p := filepath.Join(abs, e.Name())
		key, err := statKey(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed since the directory was read
			}
			warnings = append(warnings, &LoadError{Path: p, Err: err})
			continue
		}
		var sum *Summary
		if ent := byName[e.Name()]; ent != nil && ent.Key == key && ent.Summary != nil {
			sum = ent.Summary
		} else {
			r, err := Load(p)
			if err != nil {
				warnings = append(warnings, err)
				dirty = dirty || ent != nil
				continue
			}
			sum = Summarize(r)
			// A record changed by hand while it was read keeps the
			// stat taken before, which no longer matches: it is read
			// again next time, never trusted stale.
			if key.recent(now) {
				dirty = dirty || ent != nil
				sum.Path = p
				sums = append(sums, sum)
				continue
			}
			dirty = true
		}
		seg.Records = append(seg.Records, segmentEntry{Name: e.Name(), Key: key, Summary: sum})
		c := *sum
		c.Path = p
		sums = append(sums, &c)
	}
	if len(seg.Records) != len(old.Records) {
		dirty = true
	}
	if dirty {
		s.writeSegment(dir, &seg)
	}
	return sums, warnings, nil
}

// readSegment returns the segment of a directory, empty when there is
// none or it cannot be read (it is rebuilt then).
func (s *Store) readSegment(dir string) *segment {
	var seg segment
	data, err := os.ReadFile(s.indexPath(dir))
	if err != nil {
		return &seg
	}
	if got, ok := decodeSegment(data, dir); ok {
		return got
	}
	return &seg
}

// writeSegment replaces a segment atomically (a temporary file renamed
// over it), so that a concurrent reader sees the old or the new one and
// two writers leave one of theirs, each true to the files. Failing to
// write the cache is not an error: the next listing reads the records.
func (s *Store) writeSegment(dir string, seg *segment) {
	idx := filepath.Join(s.Dir, indexDir)
	if err := os.MkdirAll(idx, 0o755); err != nil {
		return
	}
	ignore := filepath.Join(idx, ".gitignore")
	if _, err := os.Lstat(ignore); errors.Is(err, fs.ErrNotExist) {
		os.WriteFile(ignore, []byte("# rigor's index of the records: a cache of this machine, rebuilt when deleted\n*\n"), 0o644)
	}
	data := encodeSegment(seg)
	f, err := os.CreateTemp(idx, ".segment-*.tmp")
	if err != nil {
		return
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	if cerr := f.Close(); werr != nil || cerr != nil {
		os.Remove(tmp)
		return
	}
	if err := os.Rename(tmp, s.indexPath(dir)); err != nil {
		os.Remove(tmp)
	}
}

// pruneIndex removes the segments of directories that no longer exist,
// after a listing of every directory.
func (s *Store) pruneIndex(dirs []dirListing) {
	ents, err := os.ReadDir(filepath.Join(s.Dir, indexDir))
	if err != nil {
		return
	}
	keep := make(map[string]bool, len(dirs))
	for _, d := range dirs {
		keep[filepath.Base(s.indexPath(d.rel))] = true
	}
	for _, e := range ents {
		n := e.Name()
		if !strings.HasPrefix(n, ".") && !keep[n] {
			os.Remove(filepath.Join(s.Dir, indexDir, n))
		}
	}
}

// Latest loads the latest run of each point the filter selects (see
// [LatestPerPoint]) with the other rounds of its invocation
// ([LatestInvocationPerPoint]), choosing them by the index and reading
// only those records: what diff compares by default and what a new run is
// compared with.
func (s *Store) Latest(f Filter) ([]*Run, []error, error) {
	sums, warnings, err := s.Summaries(f)
	if err != nil {
		return nil, nil, err
	}
	pick := latestSummaries(sums)
	inv := map[string]string{}
	chosen := map[*Summary]bool{}
	for _, x := range pick {
		chosen[x] = true
		if x.Invocation != "" {
			inv[normPoint(x.Point)] = x.Invocation
		}
	}
	for _, x := range sums {
		if !chosen[x] && x.Invocation != "" && inv[normPoint(x.Point)] == x.Invocation {
			pick = append(pick, x)
		}
	}
	paths := make([]string, len(pick))
	for i, x := range pick {
		paths[i] = x.Path
	}
	runs, more := loadAll(paths)
	SortRuns(runs)
	return runs, append(warnings, more...), nil
}

// Previous loads the latest ok run of a point recorded before the run
// with id before ("" for none): the run a new run of the point is compared
// with. It returns nil without an error when there is none.
func (s *Store) Previous(point, before string) (*Run, error) {
	exp := point
	if i := strings.IndexByte(point, '['); i >= 0 {
		exp = point[:i]
	}
	sums, _, err := s.Summaries(Filter{Experiment: exp, Point: point})
	if err != nil {
		return nil, err
	}
	for i := len(sums) - 1; i >= 0; i-- {
		x := sums[i]
		if x.Status == StatusOK && x.ID != before && (before == "" || x.ID < before) {
			return Load(x.Path)
		}
	}
	return nil, nil
}

// Imported returns the records imported so far, by the key import's
// duplicate check matches ([ImportKey.String]), each with its record's
// path relative to the module root.
func (s *Store) Imported() (map[string]string, []error, error) {
	sums, warnings, err := s.Summaries(Filter{})
	if err != nil {
		return nil, nil, err
	}
	out := map[string]string{}
	for _, x := range sums {
		if x.Import == nil {
			continue
		}
		p := x.Path
		if rel, err := filepath.Rel(s.Root, p); err == nil {
			p = rel
		}
		out[x.Import.String()] = filepath.ToSlash(p)
	}
	return out, warnings, nil
}

// latestSummaries is [LatestPerPoint] over summaries.
func latestSummaries(sums []*Summary) []*Summary {
	return latestPer(sums, func(r *Summary) (string, time.Time, string, string) { return r.Point, r.Start, r.ID, r.Status })
}

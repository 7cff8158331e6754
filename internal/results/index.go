package results

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
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
const indexVersion = 6

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

// String is the key as text for [Summary.StatKey]: "" when recent.
func (k fileKey) String(now time.Time) string {
	if k.recent(now) {
		return ""
	}
	return fmt.Sprintf("%d.%d.%d.%d", k.Size, k.Mtime, k.Ctime, k.Ino)
}

// recent reports whether the file changed within racyWindow of now.
func (k fileKey) recent(now time.Time) bool {
	limit := now.Add(-racyWindow).UnixNano()
	return k.Mtime >= limit || k.Ctime >= limit
}

type segment struct {
	Version int    `json:"version"`
	Dir     string `json:"dir"`
	// DirKey is the directory's stat when Subdirs and the names of
	// Records were all it held; zero when they may not be (a record was
	// too recent to keep, or could not be read).
	DirKey  fileKey        `json:"dirStat"`
	Subdirs []string       `json:"subdirs,omitempty"`
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
	if dir == "" {
		return filepath.Join(s.Dir, indexDir, "+.idx") // results/ itself
	}
	return filepath.Join(s.Dir, indexDir, strings.ReplaceAll(dir, "/", "+")+".idx")
}

// recordDirs returns the directories under results/ that may hold
// records (slash paths relative to it): one experiment's, or with
// experiment "" every directory but raw-output directories (a directory
// beside a "<name>.json") and hidden ones. Only directories are read: no
// file is opened or stat'ed.
func (s *Store) recordDirs(experiment string) ([]string, error) {
	if experiment != "" {
		return []string{experiment}, nil
	}
	return s.dirsUnder("", nil)
}

// DirsUnder is [Store.Experiments] limited to the directory dir (a slash
// path under results/) and the directories below it: only those are
// read, so its cost is that of dir's subtree, not of the whole store. A
// subdirectory for which descend (when not nil) is false is listed but
// not read, nor anything below it. A missing dir lists nothing.
func (s *Store) DirsUnder(dir string, descend func(dir string) bool) ([]string, error) {
	dir = strings.Trim(dir, "/")
	if dir != "" {
		if err := CheckExperimentID(dir); err != nil {
			return nil, err
		}
	}
	dirs, err := s.dirsUnder(dir, descend)
	sort.Strings(dirs)
	return dirs, err
}

func (s *Store) dirsUnder(start string, descend func(string) bool) ([]string, error) {
	var out []string
	var walk func(rel string) error
	walk = func(rel string) error {
		ents, err := os.ReadDir(filepath.Join(s.Dir, filepath.FromSlash(rel)))
		if err != nil {
			if rel == start && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		readCounts.dirEntries.Add(int64(len(ents)))
		if rel != "" {
			out = append(out, rel)
		}
		for _, n := range subdirs(ents) {
			sub := pathJoin(rel, n)
			if descend != nil && !descend(sub) {
				out = append(out, sub)
				continue
			}
			if err := walk(sub); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(start); err != nil {
		return nil, fmt.Errorf("listing runs: %w", err)
	}
	return out, nil
}

// subdirs returns the directories of a listing that may hold records:
// not hidden, and not raw-output directories (beside a "<name>.json").
func subdirs(ents []fs.DirEntry) []string {
	names := make(map[string]bool, len(ents))
	for _, e := range ents {
		names[e.Name()] = true
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() && !strings.HasPrefix(n, ".") && !names[n+".json"] {
			out = append(out, n)
		}
	}
	return out
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
//
// Each directory under results/ is stat'ed; one whose stat matches its
// segment's is not read again (its subdirectories and record names are
// the segment's: creating, removing or renaming an entry changes a
// directory's modification and change times). Each record file is
// stat'ed, since an edit in place does not change its directory.
func (s *Store) Summaries(f Filter) ([]*Summary, []error, error) {
	return s.summaries(f, false)
}

// Details is [Store.Summaries] with each summary's [Detail].
func (s *Store) Details(f Filter) ([]*Summary, []error, error) {
	return s.summaries(f, true)
}

// DetailsIn is [Store.Details] of the records directly in the given
// directories under results/ (slash paths, not their subdirectories),
// whatever experiment each names: only those directories' segments are
// read.
func (s *Store) DetailsIn(dirs []string) ([]*Summary, []error, error) {
	now := indexNow()
	var sums []*Summary
	var warnings []error
	for _, d := range dirs {
		_, got, w, err := s.scanDir(d, now, true)
		if err != nil {
			if d == "" && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, nil, err
		}
		sums = append(sums, got...)
		warnings = append(warnings, w...)
	}
	sortSummaries(sums)
	return sums, warnings, nil
}

func (s *Store) summaries(f Filter, detail bool) ([]*Summary, []error, error) {
	if f.Experiment != "" {
		if err := CheckExperimentID(f.Experiment); err != nil {
			return nil, nil, err
		}
	}
	now := indexNow()
	type result struct {
		subdirs  []string
		sums     []*Summary
		warnings []error
		err      error
	}
	// The tree is read a level at a time, the directories of a level in
	// parallel: results/, then lab/ and others, then their experiments.
	level := []string{""}
	if f.Experiment != "" {
		level = []string{f.Experiment}
	}
	if f.Package != "" {
		if err := CheckExperimentID(f.Package); err != nil {
			return nil, nil, err
		}
		level = []string{f.Package}
	}
	depth := 0
	var listed []string
	var sums []*Summary
	var warnings []error
	for len(level) > 0 {
		res := make([]result, len(level))
		forEach(len(level), func(i int) {
			r := &res[i]
			r.subdirs, r.sums, r.warnings, r.err = s.scanDir(level[i], now, detail)
		})
		listed = append(listed, level...)
		var below []string
		for i, r := range res {
			if r.err != nil {
				if level[i] == "" && errors.Is(r.err, fs.ErrNotExist) {
					return nil, nil, nil
				}
				return nil, nil, r.err
			}
			sums = append(sums, r.sums...)
			warnings = append(warnings, r.warnings...)
			if f.Experiment == "" && (f.Package == "" || depth == 0) {
				for _, d := range r.subdirs {
					below = append(below, pathJoin(level[i], d))
				}
			}
		}
		level = below
		depth++
	}
	if f.Experiment == "" && f.Package == "" {
		s.pruneIndex(listed)
	}
	if f.Experiment != "" || f.Point != "" || f.Package != "" {
		out := sums[:0]
		for _, x := range sums {
			if (f.Experiment == "" || x.Experiment == f.Experiment) && (f.Point == "" || SamePoint(x.Point, f.Point)) &&
				(f.Package == "" || path.Dir(x.Experiment) == f.Package) {
				out = append(out, x)
			}
		}
		sums = out
	}
	sortSummaries(sums)
	return sums, warnings, nil
}

func sortSummaries(sums []*Summary) {
	slices.SortStableFunc(sums, func(a, b *Summary) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// scanDir summarizes the records of one directory through its segment,
// and returns its subdirectories that may hold records (not raw-output
// directories, beside a "<name>.json", nor hidden ones). It rewrites the
// segment when anything changed. A directory that does not exist holds
// nothing (results/ itself reports fs.ErrNotExist).
func (s *Store) scanDir(dir string, now time.Time, detail bool) (dirs []string, sums []*Summary, warnings []error, err error) {
	abs := filepath.Join(s.Dir, filepath.FromSlash(dir))
	// The directory's stat is taken before it is read: a change while
	// it is read leaves a key that no longer matches.
	dkey, err := statKey(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist) && dir == "":
		return nil, nil, nil, err
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, nil, nil
	case err != nil:
		return nil, nil, nil, listingError(dir, err)
	}
	old := s.readSegment(dir, detail)
	seg := segment{Version: indexVersion, Dir: dir}
	// The names of the records, each with its entry in the old segment
	// (nil for a record it does not hold).
	var names []string
	var olds []*segmentEntry
	if old.DirKey != (fileKey{}) && old.DirKey == dkey {
		seg.Subdirs = old.Subdirs
		names = make([]string, len(old.Records))
		olds = make([]*segmentEntry, len(old.Records))
		for i := range old.Records {
			names[i], olds[i] = old.Records[i].Name, &old.Records[i]
		}
	} else {
		ents, err := os.ReadDir(abs)
		switch {
		case errors.Is(err, fs.ErrNotExist) && dir == "":
			return nil, nil, nil, err
		case errors.Is(err, fs.ErrNotExist):
			return nil, nil, nil, nil // removed since its stat
		case err != nil:
			return nil, nil, nil, listingError(dir, err)
		}
		byName := make(map[string]*segmentEntry, len(old.Records))
		for i := range old.Records {
			byName[old.Records[i].Name] = &old.Records[i]
		}
		seg.Subdirs = subdirs(ents)
		for _, e := range ents {
			if dir != "" && isRecordName(e) {
				names = append(names, e.Name())
				olds = append(olds, byName[e.Name()])
			}
		}
	}
	dirty := !slices.Equal(seg.Subdirs, old.Subdirs) || len(names) != len(old.Records)
	// Trusted is whether every record name is in the new segment: only
	// then may its listing stand for the directory's.
	trusted := !dkey.recent(now)
	sums = make([]*Summary, 0, len(names))
	seg.Records = make([]segmentEntry, 0, len(names))
	prefix := abs + string(filepath.Separator)
	for i, n := range names {
		p := prefix + n
		key, err := statKey(p)
		if err != nil {
			trusted = false
			dirty = dirty || olds[i] != nil
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed since the directory was read
			}
			warnings = append(warnings, &LoadError{Path: p, Err: err})
			continue
		}
		if ent := olds[i]; ent != nil && ent.Key == key && ent.Summary != nil {
			ent.Summary.Path = p
			ent.Summary.stat = key.String(now)
			seg.Records = append(seg.Records, *ent)
			sums = append(sums, ent.Summary)
			continue
		}
		dirty = true
		r, err := Load(p)
		if err != nil {
			trusted = false
			warnings = append(warnings, err)
			continue
		}
		sum := Summarize(r)
		sum.Path = p
		sum.stat = key.String(now)
		sums = append(sums, sum)
		// A record changed by hand while it was read keeps the stat
		// taken before, which no longer matches: it is read again next
		// time, never trusted stale. One changed within racyWindow is
		// not kept at all: it might change again with the same stat.
		if key.recent(now) {
			trusted = false
			continue
		}
		seg.Records = append(seg.Records, segmentEntry{Name: n, Key: key, Summary: sum})
	}
	if trusted {
		seg.DirKey = dkey
	}
	if dirty || seg.DirKey != old.DirKey {
		if !detail {
			s.withDetails(dir, &seg)
		}
		s.writeSegment(dir, &seg)
	}
	if !detail {
		for _, x := range sums {
			x.Detail = nil // as from the index, whether read or summarized now
		}
	}
	return seg.Subdirs, sums, warnings, nil
}

func listingError(dir string, err error) error {
	if dir == "" {
		return fmt.Errorf("listing runs: %w", err)
	}
	return fmt.Errorf("listing runs of %s: %w", dir, err)
}

// withDetails gives the entries of a segment about to be written that
// were read without their details (by [Store.Summaries]) the details the
// segment on disk holds for them, reading it again with them. An entry
// whose stat no longer matches the one there is left without, and is not
// written.
func (s *Store) withDetails(dir string, seg *segment) {
	var full map[string]*segmentEntry
	for i := range seg.Records {
		e := &seg.Records[i]
		if e.Summary.Detail != nil {
			continue
		}
		if full == nil {
			disk := s.readSegment(dir, true)
			full = make(map[string]*segmentEntry, len(disk.Records))
			for j := range disk.Records {
				full[disk.Records[j].Name] = &disk.Records[j]
			}
		}
		if d := full[e.Name]; d != nil && d.Key == e.Key {
			// A copy: the summary itself is returned to the caller,
			// without its detail.
			c := *e.Summary
			c.Detail = d.Summary.Detail
			e.Summary = &c
		}
	}
}

// readSegment returns the segment of a directory, empty when there is
// none or it cannot be read (it is rebuilt then); with detail, its
// summaries' details too.
func (s *Store) readSegment(dir string, detail bool) *segment {
	var seg segment
	data, err := os.ReadFile(s.indexPath(dir))
	if err != nil {
		return &seg
	}
	if got, ok := decodeSegment(data, dir, detail); ok {
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
func (s *Store) pruneIndex(dirs []string) {
	ents, err := os.ReadDir(filepath.Join(s.Dir, indexDir))
	if err != nil {
		return
	}
	keep := make(map[string]bool, len(dirs))
	for _, d := range dirs {
		keep[filepath.Base(s.indexPath(d))] = true
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
	pick, sampled := chooseLatest(sums)
	paths := make([]string, len(pick))
	for i, x := range pick {
		paths[i] = x.Path
	}
	runs, more := loadAll(paths)
	SortRuns(runs)
	return runs, append(append(warnings, sampled...), more...), nil
}

// chooseLatest picks of an experiment's summaries the latest run of each
// point ([LatestPerPoint]) with the other rounds of its invocation, at
// most [MaxRounds] of them per point ([SampleRounds], whose warnings it
// returns): the runs [Store.Latest] and [Store.LatestAt] read whole.
func chooseLatest(sums []*Summary) ([]*Summary, []error) {
	pick := latestSummaries(sums)
	inv := map[string]string{}
	chosen := map[*Summary]bool{}
	for _, x := range pick {
		chosen[x] = true
		if x.Invocation != "" {
			inv[normPoint(x.Point)] = x.Invocation
		}
	}
	rounds := map[string][]*Summary{} // point → the other rounds of its latest invocation
	for _, x := range sums {
		if !chosen[x] && x.Invocation != "" && inv[normPoint(x.Point)] == x.Invocation {
			rounds[normPoint(x.Point)] = append(rounds[normPoint(x.Point)], x)
		}
	}
	var warnings []error
	for _, x := range pick { // the range is of the latest runs only
		more, w := SampleRounds("latest", x, rounds[normPoint(x.Point)])
		if w != nil {
			warnings = append(warnings, w)
		}
		pick = append(pick, more...)
	}
	return pick, warnings
}

// MaxRounds bounds the rounds of one invocation [Store.Latest] reads per
// point, and a report's diff page compares: beyond it, an evenly spaced
// sample is read, and a warning says so ([SampleRounds]).
var MaxRounds = 1000

// SampleRounds bounds the rounds of one invocation of a point that a diff
// compares: chosen is the run of the point the diff chose (its latest ok
// run), others the other rounds of its invocation; which names the
// invocation in the warning ("latest"). Beyond [MaxRounds] rounds in all,
// it keeps of others those among MaxRounds rounds evenly spaced in start
// order (the first and the last), chosen being compared anyway, and the
// warning, a *[Sampled], says so; else it returns others and nil. `rigor
// diff` and the report's diff page choose the same rounds and say the
// same.
func SampleRounds(which string, chosen *Summary, others []*Summary) ([]*Summary, error) {
	if len(others)+1 <= MaxRounds {
		return others, nil
	}
	w := &Sampled{Point: chosen.Point, Which: which, Invocation: chosen.Invocation, Rounds: len(others) + 1, Kept: MaxRounds}
	kept := sampleRounds(append(slices.Clone(others), chosen), MaxRounds)
	return slices.DeleteFunc(kept, func(y *Summary) bool { return y == chosen }), w
}

// Sampled is the warning of [SampleRounds]: the invocation of a point had
// more rounds than [MaxRounds], and only Kept of its Rounds are compared.
// A comparison carries it among its caveats (compare.Side.Sampled), so
// that every format of a diff says it.
type Sampled struct {
	// Point is the point's id; Which names the invocation ("latest",
	// "previous"), Invocation is its id.
	Point, Which, Invocation string
	Rounds, Kept             int
}

func (s *Sampled) Error() string {
	return fmt.Sprintf("point %s: its %s invocation %s has %d rounds; %d of them, evenly spaced in time and the latest included, are compared", s.Point, s.Which, s.Invocation, s.Rounds, s.Kept)
}

// SplitSampled separates the [Sampled] warnings from the others (records
// that could not be loaded, say): the first belong to the comparison, the
// second to the command.
func SplitSampled(warnings []error) (sampled []*Sampled, others []error) {
	for _, w := range warnings {
		var s *Sampled
		if errors.As(w, &s) {
			sampled = append(sampled, s)
		} else {
			others = append(others, w)
		}
	}
	return sampled, others
}

// sampleRounds keeps n of the rounds, evenly spaced in start order (the
// first and the last kept). The choice depends only on the order, so two
// sides of an interleaved invocation with as many rounds keep the same
// ones.
func sampleRounds(xs []*Summary, n int) []*Summary {
	slices.SortStableFunc(xs, func(a, b *Summary) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	if n <= 1 {
		return xs[len(xs)-1:]
	}
	out := make([]*Summary, 0, n)
	for k := range n {
		out = append(out, xs[k*(len(xs)-1)/(n-1)])
	}
	return out
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
// path relative to the module root. With experiments given, only their
// directories are read (an import's cost then does not grow with the
// records of other experiments); with none, every record is.
func (s *Store) Imported(experiments ...string) (map[string]string, []error, error) {
	filters := []Filter{{}}
	if len(experiments) > 0 {
		filters = nil
		seen := map[string]bool{}
		for _, x := range experiments {
			if !seen[x] {
				seen[x] = true
				filters = append(filters, Filter{Experiment: x})
			}
		}
	}
	out := map[string]string{}
	var warnings []error
	for _, f := range filters {
		sums, w, err := s.Summaries(f)
		if err != nil {
			return nil, nil, err
		}
		warnings = append(warnings, w...)
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
	}
	return out, warnings, nil
}

// LatestSummaries is [LatestPerPoint] over summaries: each point's
// latest ok summary, else its latest.
func LatestSummaries(sums []*Summary) []*Summary { return latestSummaries(sums) }

// latestSummaries is [LatestPerPoint] over summaries.
func latestSummaries(sums []*Summary) []*Summary {
	return latestPer(sums, func(r *Summary) (string, time.Time, string, string) { return r.Point, r.Start, r.ID, r.Status })
}

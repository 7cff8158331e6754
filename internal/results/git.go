package results

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/rigorbench/rigor/internal/gitrepo"
)

// The store's records in git: commits and reads at a revision go through
// internal/gitrepo; what is here decides which files are records.

func (s *Store) openRepo() (*gitrepo.Repo, error) {
	g, err := gitrepo.Open(s.Root, s.Dir)
	if err != nil {
		return nil, err
	}
	g.Author, g.Scrubber = s.Author, s.Scrubber
	return g, nil
}

// Commit commits the given files (directories stand for the files under
// them) in the git repository that holds the store, and returns the new
// commit's hash ([gitrepo.Repo.Commit]). Any failure after the files were
// written is a *[gitrepo.CommitError]: the files are kept. A store outside
// a git repository wraps [gitrepo.ErrNotRepository].
func (s *Store) Commit(ctx context.Context, paths []string, msg string) (string, error) {
	g, err := s.openRepo()
	if err != nil {
		return "", &gitrepo.CommitError{Paths: paths, Err: err}
	}
	return g.Commit(ctx, paths, msg)
}

// Uncommitted returns those of paths (files) whose content differs from
// the file at HEAD ([gitrepo.Repo.Uncommitted]). A store outside a git
// repository wraps [gitrepo.ErrNotRepository].
func (s *Store) Uncommitted(paths []string) ([]string, error) {
	g, err := s.openRepo()
	if err != nil {
		return nil, err
	}
	return g.Uncommitted(paths)
}

// HeadDetached reports whether the store's repository has a detached HEAD
// ([gitrepo.Repo.HeadDetached]).
func (s *Store) HeadDetached() (bool, error) {
	g, err := s.openRepo()
	if err != nil {
		return false, err
	}
	return g.HeadDetached()
}

// at returns a revision of the store's repository and the store
// directory's path in it.
func (s *Store) at(ctx context.Context, rev string) (*gitrepo.Revision, string, error) {
	g, err := s.openRepo()
	if err != nil {
		return nil, "", err
	}
	v, err := g.At(ctx, rev)
	if err != nil {
		return nil, "", err
	}
	dir, err := g.Rel(s.Dir)
	if err != nil {
		return nil, "", err
	}
	return v, dir, nil
}

// LoadAt loads the runs of an experiment as they were recorded at a git
// revision of the results repository (HEAD~3, a branch, a tag, a commit
// hash), reading the trees through go-git: no checkout, the working tree
// is not touched. Records that cannot be decoded are left out and returned
// as warnings, as [Store.List] does. The runs are in start order.
func (s *Store) LoadAt(ctx context.Context, rev, experiment string) ([]*Run, []error, error) {
	if err := CheckExperimentID(experiment); err != nil {
		return nil, nil, err
	}
	v, dir, err := s.at(ctx, rev)
	if err != nil {
		return nil, nil, err
	}
	files, err := v.Files(path.Join(dir, experiment))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var runs []*Run
	var warnings []error
	for _, f := range files {
		name := path.Base(f.Path)
		if !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		r, err := revisionRun(v, f, f.Path+"@"+rev)
		if err != nil {
			warnings = append(warnings, err)
			continue
		}
		if r.Experiment != experiment {
			continue
		}
		runs = append(runs, r)
	}
	SortRuns(runs)
	return runs, warnings, nil
}

// LoadFileAt loads one record file (a path in the working tree) as it was
// at a revision.
func (s *Store) LoadFileAt(ctx context.Context, rev, file string) (*Run, error) {
	g, err := s.openRepo()
	if err != nil {
		return nil, err
	}
	v, err := g.At(ctx, rev)
	if err != nil {
		return nil, err
	}
	rel, err := g.Rel(file)
	if err != nil {
		return nil, err
	}
	f, err := v.Lookup(rel)
	if err != nil {
		return nil, &LoadError{Path: rel + "@" + rev, Err: notFound("not in revision %s", rev)}
	}
	return revisionRun(v, f, rel+"@"+rev)
}

// FindAt loads a run by its id as it was recorded at a revision.
func (s *Store) FindAt(ctx context.Context, rev, id string) (*Run, error) {
	if err := checkRunID(id); err != nil {
		return nil, err
	}
	v, dir, err := s.at(ctx, rev)
	if err != nil {
		return nil, err
	}
	found, err := v.Find(dir, id+".json")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, notFound("run %s: no %s/ at %s", id, dir, rev)
	}
	if err != nil {
		return nil, err
	}
	switch len(found) {
	case 0:
		return nil, notFound("run %s: no record %s.json under %s/ at %s", id, id, dir, rev)
	case 1:
		return revisionRun(v, found[0], found[0].Path+"@"+rev)
	}
	var names []string
	for _, f := range found {
		names = append(names, f.Path)
	}
	return nil, fmt.Errorf("run id %s is recorded more than once at %s: %s", id, rev, strings.Join(names, ", "))
}

func revisionRun(v *gitrepo.Revision, f gitrepo.File, name string) (*Run, error) {
	data, err := readRevision(v, f, name)
	if err != nil {
		return nil, err
	}
	readCounts.revRuns.Add(1)
	r, err := Decode(data)
	return r, namedLoadError(err, name)
}

// readRevision reads a record at a revision, counted in [Reads].
func readRevision(v *gitrepo.Revision, f gitrepo.File, name string) ([]byte, error) {
	data, err := v.Read(f)
	if err != nil {
		return nil, &LoadError{Path: name, Err: err}
	}
	readCounts.revRecords.Add(1)
	readCounts.revBytes.Add(int64(len(data)))
	return data, nil
}

// namedLoadError names the record in a decoding error: nil stays nil.
func namedLoadError(err error, name string) error {
	if err == nil {
		return nil
	}
	var le *LoadError
	if errors.As(err, &le) {
		le.Path = name
		return le
	}
	return &LoadError{Path: name, Err: err}
}

// LatestAt is [Store.Latest] at a git revision: the latest run of each
// point the filter selects with the other rounds of its invocation, at
// most [MaxRounds] of them per point (an evenly spaced sample beyond, and
// a *[Sampled] warning among the warnings). Each record of the experiment
// at the revision is read once and summarized (no index holds it), one
// at a time; only the runs chosen are decoded whole and kept, so its
// memory and the comparison's work do not grow with the rounds of an
// invocation (issue 30: `diff EXP@REV` kept every round). Records that
// cannot be decoded are warnings, as in [Store.LoadAt].
func (s *Store) LatestAt(ctx context.Context, rev string, f Filter) ([]*Run, []error, error) {
	if err := CheckExperimentID(f.Experiment); err != nil {
		return nil, nil, err
	}
	v, dir, err := s.at(ctx, rev)
	if err != nil {
		return nil, nil, err
	}
	files, err := v.Files(path.Join(dir, f.Experiment))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var sums []*Summary
	var warnings []error
	file := map[*Summary]gitrepo.File{}
	for _, gf := range files {
		name := path.Base(gf.Path)
		if !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		x, err := revisionSummary(v, gf, gf.Path+"@"+rev)
		if err != nil {
			warnings = append(warnings, err)
			continue
		}
		if x.Experiment != f.Experiment || (f.Point != "" && !SamePoint(x.Point, f.Point)) {
			continue
		}
		x.Path = gf.Path + "@" + rev
		sums = append(sums, x)
		file[x] = gf
	}
	pick, sampled := chooseLatest(sums)
	warnings = append(warnings, sampled...)
	var runs []*Run
	for _, x := range pick {
		r, err := revisionRun(v, file[x], x.Path)
		if err != nil {
			warnings = append(warnings, err)
			continue
		}
		runs = append(runs, r)
	}
	SortRuns(runs)
	return runs, warnings, nil
}

// revisionSummary reads a record at a revision and decodes only its
// summary's identity ([decodeSummary]).
func revisionSummary(v *gitrepo.Revision, f gitrepo.File, name string) (*Summary, error) {
	data, err := readRevision(v, f, name)
	if err != nil {
		return nil, err
	}
	x, err := decodeSummary(data)
	return x, namedLoadError(err, name)
}

// maxSyncedRecord bounds the size of a record a results branch brings:
// records are a few kilobytes; raw outputs are beside them, not in them.
const maxSyncedRecord = 16 << 20

// SyncCheck says which files a results branch (rigor results sync) may
// not bring into the module whose experiments are those named: it may add
// only regular files under results/<existing experiment id>/ that are
// records, named <run id>.json and holding a record of that experiment
// with that id, and the raw outputs each of those records lists, in
// results/<experiment>/<run id>/. Everything else is refused with the
// reason: an experiment, schema or build file, a symlink anywhere, a
// record of an experiment the module does not have.
func SyncCheck(ctx context.Context, experiments map[string]bool) func([]gitrepo.AddedFile) []gitrepo.Refused {
	return func(files []gitrepo.AddedFile) []gitrepo.Refused {
		var refused []gitrepo.Refused
		refuse := func(f gitrepo.AddedFile, format string, args ...any) {
			refused = append(refused, gitrepo.Refused{Path: f.Path, Reason: fmt.Sprintf(format, args...)})
		}
		// The records first: the raw outputs they list are allowed.
		listed := map[string]bool{}
		var raws []gitrepo.AddedFile
		for _, f := range files {
			if !f.Regular() {
				what := "a symlink"
				if f.Mode == "160000" {
					what = "a submodule"
				}
				refuse(f, "%s: a results branch brings regular files only", what)
				continue
			}
			rest, ok := strings.CutPrefix(f.Path, Dir+"/")
			if !ok {
				refuse(f, "outside %s/", Dir)
				continue
			}
			exp, name, ok := splitExperiment(rest, experiments)
			if !ok {
				refuse(f, "not under the results of an experiment of this module")
				continue
			}
			if id, ok := strings.CutSuffix(name, ".json"); ok && !strings.Contains(id, "/") {
				if !IsRunID(id) {
					refuse(f, "%s is not a run id", id)
					continue
				}
				data, err := f.Read(ctx, maxSyncedRecord)
				if err != nil {
					refuse(f, "reading it: %v", err)
					continue
				}
				r, err := Decode(data)
				switch {
				case err != nil:
					refuse(f, "not a record: %v", err)
				case r.Experiment != exp || r.ID != id:
					refuse(f, "a record of %s, run %s, not of %s, run %s", r.Experiment, r.ID, exp, id)
				default:
					for _, n := range r.Files {
						listed[path.Join(Dir, exp, id, n)] = true
					}
				}
				continue
			}
			raws = append(raws, f)
		}
		for _, f := range raws {
			if strings.Contains("/"+f.Path, "/.") {
				refuse(f, "a hidden file")
				continue
			}
			if !listed[f.Path] {
				refuse(f, "not a raw output that a record of the branch lists")
			}
		}
		return refused
	}
}

// splitExperiment splits "qwen/base/20260101T000000Z-0001.json" into an
// experiment id of the module and the rest; the longest id wins.
func splitExperiment(rest string, experiments map[string]bool) (exp, name string, ok bool) {
	for i := len(rest) - 1; i > 0; i-- {
		if rest[i] == '/' && experiments[rest[:i]] {
			return rest[:i], rest[i+1:], true
		}
	}
	return "", "", false
}

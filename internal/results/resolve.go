package results

import (
	"context"
	"strings"
)

// RefKind says what a reference given on the command line names.
type RefKind string

// Kinds of references.
const (
	RefRun        RefKind = "run"        // a run id: 20260508T032753Z-3f9a
	RefExperiment RefKind = "experiment" // an experiment id: minimax-m27-b70/baseline
	RefPoint      RefKind = "point"      // a point id: minimax-m27-b70/ubSweep[ub=16]
	RefFile       RefKind = "file"       // a record file: results/x/y.json
)

// Selection is what a reference resolved to.
type Selection struct {
	// Ref is the reference as given, Rev its git revision ("" for the
	// working tree).
	Ref, Rev string
	Kind     RefKind
	// ID is the reference without "@REV": the run, experiment or point id,
	// or the file path.
	ID string
	// Runs are the runs it names, in start order: one for a run or a
	// file, every recorded run for an experiment or a point.
	Runs []*Run
	// Warnings are records left out because they could not be loaded,
	// and, of [Store.ResolveLatest], a *[Sampled] per point whose
	// invocation had more rounds than [MaxRounds].
	Warnings []error
}

// ParseRef splits a reference into its id, its kind and its revision:
// "ID@REV" names ID as recorded at the git revision REV. A reference
// ending in .json is a record file; one without '/' a run id; one ending
// in "]" a point id; anything else an experiment id.
func ParseRef(ref string) (id string, kind RefKind, rev string) {
	id = ref
	if i := strings.LastIndexByte(ref, '@'); i > 0 && i < len(ref)-1 {
		id, rev = ref[:i], ref[i+1:]
	}
	switch {
	case strings.HasSuffix(id, ".json"):
		kind = RefFile
	case !strings.Contains(id, "/"):
		kind = RefRun
	case strings.HasSuffix(id, "]") && strings.Contains(id, "["):
		kind = RefPoint
	default:
		kind = RefExperiment
	}
	return id, kind, rev
}

// Resolve loads the runs a reference names (see [ParseRef]): a run id
// (searched in every experiment), a record file, an experiment's or a
// point's runs, each either in the working tree or, with "@REV", as
// committed at that revision ([Store.LoadAt]). A reference that names no
// run is an error wrapping [ErrNotFound].
func (s *Store) Resolve(ctx context.Context, ref string) (*Selection, error) {
	return s.resolve(ctx, ref, false)
}

// ResolveLatest is [Store.Resolve] keeping only the latest run of each
// point of an experiment or a point, with the other rounds of its
// invocation ([LatestInvocationPerPoint]), at most [MaxRounds] of them
// (a *[Sampled] among the warnings says when there were more). In the
// working tree the runs are chosen by the index ([Store.Latest]) and only
// those records are read; at a revision every record of the experiment is
// summarized and only those are decoded whole ([Store.LatestAt]).
func (s *Store) ResolveLatest(ctx context.Context, ref string) (*Selection, error) {
	return s.resolve(ctx, ref, true)
}

func (s *Store) resolve(ctx context.Context, ref string, latest bool) (*Selection, error) {
	id, kind, rev := ParseRef(ref)
	sel := &Selection{Ref: ref, Rev: rev, Kind: kind, ID: id}
	at := ""
	if rev != "" {
		at = " at " + rev
	}
	switch kind {
	case RefFile:
		var r *Run
		var err error
		if rev == "" {
			r, err = Load(id)
		} else {
			r, err = s.LoadFileAt(ctx, rev, id)
		}
		if err != nil {
			return nil, err
		}
		sel.Runs = []*Run{r}
	case RefRun:
		if !IsRunID(id) {
			return nil, notFound("%q is neither a run id (like 20260508T032753Z-3f9a) nor an experiment id (like dir/name)", id)
		}
		var r *Run
		var err error
		if rev == "" {
			var p string
			if p, err = s.Find(id); err == nil {
				r, err = Load(p)
			}
		} else {
			r, err = s.FindAt(ctx, rev, id)
		}
		if err != nil {
			return nil, err
		}
		sel.Runs = []*Run{r}
	case RefExperiment, RefPoint:
		exp := id
		f := Filter{Experiment: id}
		if kind == RefPoint {
			exp = id[:strings.IndexByte(id, '[')]
			f = Filter{Experiment: exp, Point: id}
		}
		if err := CheckExperimentID(exp); err != nil {
			return nil, err
		}
		var runs []*Run
		var warnings []error
		var err error
		switch {
		case rev == "" && latest:
			runs, warnings, err = s.Latest(f)
		case rev == "":
			runs, warnings, err = s.List(f)
		case latest:
			runs, warnings, err = s.LatestAt(ctx, rev, f)
		default:
			runs, warnings, err = s.LoadAt(ctx, rev, exp)
			runs = filterRuns(runs, f)
		}
		if err != nil {
			return nil, err
		}
		sel.Runs, sel.Warnings = runs, warnings
		if len(runs) == 0 {
			what := "runs"
			if len(warnings) > 0 {
				what = "loadable runs"
			}
			if kind == RefPoint {
				return sel, notFound("no recorded %s of point %s%s", what, id, at)
			}
			return sel, notFound("no recorded %s of %s in %s/%s/%s", what, id, Dir, id, at)
		}
	}
	return sel, nil
}

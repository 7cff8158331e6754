package lock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"

	"github.com/rigorbench/rigor/internal/gitsrc"
	"github.com/rigorbench/rigor/internal/hf"
	"github.com/rigorbench/rigor/internal/spec"
)

// Inputs of a [Drift].
const (
	DriftEngine = "engine"     // a git ref of the engine
	DriftModel  = "model"      // a revision of a hub model
	DriftNPM    = "engine.npm" // an npm version range
	// DriftCorpus is a hub corpus's revision (quality.measure.corpus).
	DriftCorpus = "quality.measure.corpus"
)

// Drift is a locked input whose request resolves upstream to something
// else than the lock pins: a tag force-moved, a branch advanced, a hub
// branch with a new commit, a new npm version within a range. The lock
// still pins the old value, so a rerun runs what it ran before; Drift
// says that relocking would not.
type Drift struct {
	// ID is the experiment.
	ID string `json:"id"`
	// Input is [DriftEngine], [DriftModel] or [DriftNPM].
	Input string `json:"input"`
	// Source is where the input comes from: the git URL as the
	// experiment wrote it, the hub repo, the npm package.
	Source string `json:"source"`
	// Ref is the request: a branch or tag, a hub revision ("main" when
	// none was written), an npm version range.
	Ref string `json:"ref"`
	// Locked is what the lock pins; Upstream is what Ref resolves to now
	// (full commits, or npm versions).
	Locked   string `json:"locked"`
	Upstream string `json:"upstream"`
}

// String is the drift as `rigor lock --check --online` prints it after
// the experiment id, e.g. "engine ref b4747: 28165161ffe1 → 2e41d733a5ce
// (moved upstream; the lock still pins 28165161ffe1)".
func (d Drift) String() string {
	what := map[string]string{DriftEngine: "engine ref", DriftModel: "model revision", DriftNPM: "engine npm " + d.Source + "@",
		DriftCorpus: "corpus " + d.Source + " revision"}[d.Input]
	if d.Input != DriftNPM {
		what += " "
	}
	old, cur := short(d.Locked), short(d.Upstream)
	return fmt.Sprintf("%s%s: %s → %s (moved upstream; the lock still pins %s)", what, d.Ref, old, cur, old)
}

// Gone is a locked input its upstream no longer has: a git remote that is
// gone (repository not found) or that a force-push took the locked commit
// off (no branch or tag it advertises holds it), a hub repository or
// revision that answers 404, an npm version unpublished. A rerun needs
// it from a cache or an archive (rigor archive); the caller says whether
// the archive holds it.
type Gone struct {
	// ID is the experiment; Input is [DriftEngine], [DriftModel] or
	// [DriftNPM]; Source and Ref are as in [Drift].
	ID     string `json:"id"`
	Input  string `json:"input"`
	Source string `json:"source"`
	Ref    string `json:"ref"`
	// Locked is what the lock pins (a full commit, an npm version).
	Locked string `json:"locked"`
	// Why says what the upstream answered.
	Why string `json:"why"`
	// Archived says whether the archive holds it; Archive is the
	// archive asked ("" when none is set).
	Archived bool   `json:"archived"`
	Archive  string `json:"archive,omitempty"`
}

// String is the input as `rigor lock --check --online` prints it after the
// experiment id, without what the archive holds.
func (g Gone) String() string {
	what := map[string]string{DriftEngine: "engine ref", DriftModel: "model revision", DriftNPM: "engine npm " + g.Source + "@"}[g.Input]
	if g.Input != DriftNPM {
		what += " "
	}
	return fmt.Sprintf("%s%s: %s", what, g.Ref, short(g.Locked))
}

// isGoneGit says whether a git error is the remote saying it has no such
// repository (a deleted repository, a local path that is gone).
func isGoneGit(err error) bool {
	var unr *gitsrc.UnreachableError
	var tmo *gitsrc.TimeoutError
	if errors.As(err, &unr) || errors.As(err, &tmo) {
		return false
	}
	return strings.Contains(err.Error(), "repository not found")
}

// CheckOnline asks every upstream the locks of set's experiments came
// from whether each recorded request still resolves to what the lock
// pins: git remotes (their advertised refs, as git ls-remote lists them),
// the hub's revision API, the npm registry (through npm). Requests that
// cannot move — a ref the lock recorded as a commit (full or short sha;
// a tag named like a sha, llama.cpp's b4747, is a tag), a local path, a
// hub revision that is a commit — are not asked about. Experiments without a lock entry are
// skipped ([Check] reports them). It returns the drifts sorted by
// experiment and input, the inputs gone upstream ([Gone]; a moved ref whose
// old commit no branch or tag holds any more is gone, not a drift), and an
// *[InputError] for each upstream that could not be asked. The resolver
// must not be offline.
func (r *Resolver) CheckOnline(ctx context.Context, set *spec.Set) ([]Drift, []Gone, int, []error) {
	if r.err != nil {
		return nil, nil, 0, []error{r.err}
	}
	if r.opts.Offline || r.hf.Offline() {
		return nil, nil, 0, []error{errors.New("checking upstreams: offline (--offline or HF_HUB_OFFLINE) forbids the network")}
	}
	files := map[string]*File{}
	var errs []error
	for _, x := range set.Experiments {
		if _, ok := files[x.Package]; ok {
			continue
		}
		f, err := Read(set.Root, x.Package)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
		files[x.Package] = f
	}
	var (
		mu     sync.Mutex
		drifts []Drift
		gone   []Gone
		asked  int
		wg     sync.WaitGroup
	)
	sem := make(chan struct{}, r.opts.Concurrency)
	for _, x := range set.Experiments {
		f := files[x.Package]
		if f == nil || f.Experiments[x.ID] == nil {
			continue
		}
		e := f.Experiments[x.ID]
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			ds, gs, n, es := r.driftOf(ctx, x, e)
			mu.Lock()
			asked += n
			drifts = append(drifts, ds...)
			gone = append(gone, gs...)
			errs = append(errs, es...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	order := map[string]int{DriftEngine: 0, DriftNPM: 1, DriftModel: 2, DriftCorpus: 3}
	sort.Slice(drifts, func(i, j int) bool {
		if drifts[i].ID != drifts[j].ID {
			return drifts[i].ID < drifts[j].ID
		}
		return order[drifts[i].Input] < order[drifts[j].Input]
	})
	sort.Slice(gone, func(i, j int) bool {
		if gone[i].ID != gone[j].ID {
			return gone[i].ID < gone[j].ID
		}
		return order[gone[i].Input] < order[gone[j].Input]
	})
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return drifts, gone, asked, errs
}

// driftOf asks the upstreams of one locked entry; n is how many inputs it
// asked about (an input pinned to a commit needs no asking).
func (r *Resolver) driftOf(ctx context.Context, x *spec.Experiment, e *Entry) (ds []Drift, gs []Gone, n int, errs []error) {
	id, eng := x.ID, e.Engine
	switch {
	case eng.Requested.Git != "" && eng.Commit != "" && eng.Kind != gitsrc.KindCommit:
		n++
		ref := eng.Requested.Ref
		if ref == "" {
			ref = "HEAD"
		}
		// The lockfile's URL has no credentials; the experiment's may.
		src := eng.Requested.Git
		if g := x.Spec.Engine.Source.Git; g != "" && gitsrc.StripUserinfo(g) == src {
			src = g
		}
		res, err := r.gitResolve(ctx, src, eng.Requested.Ref)
		gone := Gone{ID: id, Input: DriftEngine, Source: eng.Requested.Git, Ref: ref, Locked: eng.Commit}
		var refErr *gitsrc.RefNotFoundError
		switch {
		case err != nil && isGoneGit(err):
			gone.Why = "the remote answered: repository not found"
			gs = append(gs, gone)
		case err != nil && errors.As(err, &refErr) || err == nil && res.Commit != eng.Commit:
			// The ref moved or went: does a branch or tag still hold
			// the locked commit, or did a force-push take it away?
			has, herr := gitsrc.RemoteHasCommit(ctx, r.gitURL(src), eng.Commit, r.gitOptions())
			switch {
			case herr != nil:
				errs = append(errs, &InputError{ID: id, Input: InputEngine, Err: herr})
			case !has && err != nil:
				gone.Why = fmt.Sprintf("%s is gone and no branch or tag of the remote holds the commit", ref)
				gs = append(gs, gone)
			case !has:
				gone.Why = fmt.Sprintf("%s is now %s and no branch or tag of the remote holds the locked commit: force-pushed away", ref, short(res.Commit))
				gs = append(gs, gone)
			case err != nil:
				errs = append(errs, &InputError{ID: id, Input: InputEngine, Err: err})
			default:
				ds = append(ds, Drift{ID: id, Input: DriftEngine, Source: eng.Requested.Git, Ref: ref, Locked: eng.Commit, Upstream: res.Commit})
			}
		case err != nil:
			errs = append(errs, &InputError{ID: id, Input: InputEngine, Err: err})
		}
	case eng.NPM != nil && eng.Requested.NPM != "":
		n++
		v, err := r.npmView(ctx, eng.NPM.Package, eng.Requested.NPM)
		var ne *NPMError
		switch {
		case err != nil && errors.As(err, &ne) && (ne.Code == "E404" || ne.Code == "ETARGET"):
			gs = append(gs, Gone{ID: id, Input: DriftNPM, Source: eng.NPM.Package, Ref: eng.Requested.NPM, Locked: eng.NPM.Version,
				Why: fmt.Sprintf("the npm registry has no version of %s matching %s (%s): unpublished", eng.NPM.Package, eng.Requested.NPM, ne.Code)})
		case err != nil:
			errs = append(errs, &InputError{ID: id, Input: InputEngine, Err: err})
		case v.Version != eng.NPM.Version:
			ds = append(ds, Drift{ID: id, Input: DriftNPM, Source: eng.NPM.Package, Ref: eng.Requested.NPM, Locked: eng.NPM.Version, Upstream: v.Version})
		case v.Integrity != eng.NPM.Integrity:
			// A published version cannot change on the npm registry, but
			// a mirror registry can serve other bytes under its name.
			ds = append(ds, Drift{ID: id, Input: DriftNPM, Source: eng.NPM.Package, Ref: eng.Requested.NPM, Locked: eng.NPM.Integrity, Upstream: v.Integrity})
		}
	}
	m := e.Model
	if m.Requested.HF != "" && m.Commit != "" && !hex40.MatchString(strings.ToLower(m.Requested.Revision)) {
		n++
		rev := m.Requested.Revision
		if rev == "" {
			rev = "main"
		}
		commit, err := r.hubRevision(ctx, m.Requested.HF, rev)
		var he *hf.HubError
		switch {
		case err != nil && errors.As(err, &he) && (he.Code == hf.CodeRepoNotFound || he.Code == hf.CodeRevisionNotFound):
			// The hub answers a deleted repository 404, or 401 to a
			// request without a token, as it hides private ones.
			gs = append(gs, Gone{ID: id, Input: DriftModel, Source: m.Requested.HF, Ref: rev, Locked: m.Commit,
				Why: fmt.Sprintf("the hub answered %d %s for %s@%s", he.Status, he.Code, m.Requested.HF, rev)})
		case err != nil:
			errs = append(errs, &InputError{ID: id, Input: InputModel, Err: err})
		case commit != m.Commit:
			ds = append(ds, Drift{ID: id, Input: DriftModel, Source: m.Requested.HF, Ref: rev, Locked: m.Commit, Upstream: commit})
		}
	}
	if c := e.Corpus; c != nil && c.HF != "" && c.Commit != "" && !hex40.MatchString(strings.ToLower(c.Revision)) {
		n++
		rev := c.Revision
		if rev == "" {
			rev = "main"
		}
		commit, err := r.hubRevision(ctx, c.HF, rev)
		switch {
		case err != nil:
			errs = append(errs, &InputError{ID: id, Input: DriftCorpus, Err: err})
		case commit != c.Commit:
			ds = append(ds, Drift{ID: id, Input: DriftCorpus, Source: "hf://" + c.HF + "/" + c.Path, Ref: rev, Locked: c.Commit, Upstream: commit})
		}
	}
	return ds, gs, n, errs
}

// hubRevision resolves a hub revision to its commit, once per repo and
// revision.
func (r *Resolver) hubRevision(ctx context.Context, repo, rev string) (string, error) {
	v, err := r.once("hfrev\x00"+repo+"\x00"+rev, func() (any, error) {
		if err := r.probeHub(ctx); err != nil {
			return nil, err
		}
		return r.hf.ResolveRevision(ctx, repo, rev)
	})
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

// moved collects the refs that the git mirrors' fetches found moved
// during a lock (see gitsrc.Options.Moved).
type moved struct {
	mu    sync.Mutex
	moves []gitsrc.Move
}

func (m *moved) add(mv gitsrc.Move) {
	m.mu.Lock()
	m.moves = append(m.moves, mv)
	m.mu.Unlock()
}

// driftsOf turns the moves seen while locking into drifts of the
// experiments whose new entry still pins a moved ref's old commit.
func (r *Resolver) driftsOf(entries map[string]*Entry) []Drift {
	r.moved.mu.Lock()
	moves := append([]gitsrc.Move(nil), r.moved.moves...)
	r.moved.mu.Unlock()
	var out []Drift
	ids := make([]string, 0, len(entries))
	for id := range entries {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		eng := entries[id].Engine
		if eng.Requested.Git == "" || eng.Commit == "" {
			continue
		}
		ref := eng.Requested.Ref
		canon := strings.TrimSpace(r.gitURL(eng.Requested.Git))
		for _, mv := range moves {
			if mv.URL != canon || mv.New == eng.Commit {
				continue
			}
			if mv.Ref != ref && mv.Ref != "refs/heads/"+ref && mv.Ref != "refs/tags/"+ref {
				continue
			}
			if eng.Kind == gitsrc.KindTag || eng.Kind == gitsrc.KindAnnotatedTag {
				if !strings.HasPrefix(mv.Ref, "refs/tags/") && mv.Ref != ref {
					continue
				}
			} else if eng.Kind == gitsrc.KindBranch && strings.HasPrefix(mv.Ref, "refs/tags/") {
				continue
			}
			out = append(out, Drift{ID: id, Input: DriftEngine, Source: eng.Requested.Git, Ref: ref, Locked: eng.Commit, Upstream: mv.New})
			break
		}
	}
	return out
}

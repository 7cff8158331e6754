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
	DriftEngine = "engine" // a git ref of the engine
	DriftModel  = "model"  // a revision of a hub model
	// DriftModelFile is one file of a hub model's locked commit ([Gone]
	// only: a file cannot move).
	DriftModelFile = "model.file"
	DriftNPM       = "engine.npm" // an npm version range
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
// off (no branch or tag it advertises holds it), a hub repository,
// revision or commit that answers 404, one file that the locked commit
// no longer lists, an npm version unpublished. A rerun needs it from a
// cache or an archive (rigor archive); the caller says whether the
// archive holds it.
type Gone struct {
	// ID is the experiment; Input is [DriftEngine], [DriftModel],
	// [DriftModelFile], [DriftCorpus] or [DriftNPM]; Source and Ref are as in [Drift]
	// (Ref is the commit itself for an input pinned to a commit).
	ID     string `json:"id"`
	Input  string `json:"input"`
	Source string `json:"source"`
	Ref    string `json:"ref"`
	// Locked is what the lock pins (a full commit, an npm version; for a
	// model file, the model's commit).
	Locked string `json:"locked"`
	// Path and SHA256 are the file's, for [DriftModelFile] and
	// [DriftCorpus].
	Path   string `json:"path,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// Why says what the upstream answered.
	Why string `json:"why"`
	// Archived says whether the archive holds it; Archive is the
	// archive asked ("" when none is set).
	Archived bool   `json:"archived"`
	Archive  string `json:"archive,omitempty"`
	// pinned says that the request is the commit itself.
	pinned bool
}

// String is the input as `rigor lock --check --online` prints it after the
// experiment id, without what the archive holds: "engine ref v2:
// 1c211d55d33b", "engine commit 1c211d55d33b" (pinned to it), "model
// file org/tiny-GGUF@main: tiny-Q8_0.gguf", "engine npm
// node-llama-cpp@3.x: 3.22.1", "corpus org/texts@main: corpus.txt
// (0c3d986bbc9c)".
func (g Gone) String() string {
	switch {
	case g.Input == DriftCorpus && g.pinned:
		return fmt.Sprintf("corpus %s@%s: %s", g.Source, short(g.Locked), g.Path)
	case g.Input == DriftCorpus:
		return fmt.Sprintf("corpus %s@%s: %s (%s)", g.Source, g.Ref, g.Path, short(g.Locked))
	case g.Input == DriftModelFile:
		ref := g.Ref
		if g.pinned {
			ref = short(g.Locked)
		}
		return fmt.Sprintf("model file %s@%s: %s", g.Source, ref, g.Path)
	case g.Input == DriftNPM:
		return fmt.Sprintf("engine npm %s@%s: %s", g.Source, g.Ref, g.Locked)
	case g.pinned:
		return map[string]string{DriftEngine: "engine commit ", DriftModel: "model commit "}[g.Input] + short(g.Locked)
	}
	what := map[string]string{DriftEngine: "engine ref ", DriftModel: "model revision "}[g.Input]
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

// Unasked is a locked input whose upstream could not be asked: a remote,
// the hub or the npm registry unreachable or timing out, npm not
// installed. Whether it moved or is gone is not known, so a check that
// has one fails. Its fields are a [Gone]'s (Why is what failed, the same
// text for every experiment whose input asked the same question), and the
// caller says whether the archive holds it.
type Unasked struct {
	Gone
	// Err is the failure; label is the input as an [InputError] names
	// it ("engine", "model", "quality.measure.corpus").
	Err   error `json:"-"`
	label string
}

// Cause is the failure as "input: error", without the experiment: the
// same text for every experiment that asked the same question.
func (u Unasked) Cause() string { return u.label + ": " + u.Err.Error() }

// Hint says what to do about the failure, if there is something to say.
func (u Unasked) Hint() string { return (&InputError{Err: u.Err}).Hint() }

// Online is what [Resolver.CheckOnline] found.
type Online struct {
	// Moved are the drifts, sorted by experiment and input.
	Moved []Drift
	// Gone are the inputs gone upstream (a moved ref whose old commit no
	// branch or tag holds any more is gone, not a drift).
	Gone []Gone
	// Unasked are the inputs whose upstream could not be asked, sorted
	// by experiment and input. Each distinct question was asked once,
	// however many experiments share it.
	Unasked []Unasked
	// Asked is how many inputs were asked about.
	Asked int
	// Errs are the failures that are not one input's: a lockfile that
	// cannot be read, a resolver that cannot check.
	Errs []error
}

// CheckOnline asks every upstream the locks of set's experiments came
// from whether each recorded request still resolves to what the lock
// pins: git remotes (their advertised refs, as git ls-remote lists them),
// the hub's revision API and tree listing, the npm registry (through npm).
// A request that cannot move — a ref the lock recorded as a commit (full
// or short sha; a tag named like a sha, llama.cpp's b4747, is a tag), a
// hub revision that is a commit — is asked only whether it is gone: a
// branch or tag of the remote still holds the commit, the hub still has
// it. Local paths and synthetic models are not asked about; the files of
// a hub model are asked about at the locked commit. Experiments without a
// lock entry are skipped ([Check] reports them). Each distinct question
// is asked once per resolver, whatever number of experiments share it.
// The resolver must not be offline.
func (r *Resolver) CheckOnline(ctx context.Context, set *spec.Set) Online {
	if r.err != nil {
		return Online{Errs: []error{r.err}}
	}
	if r.opts.Offline || r.hf.Offline() {
		return Online{Errs: []error{errors.New("checking upstreams: offline (--offline or HF_HUB_OFFLINE) forbids the network")}}
	}
	var res Online
	files := map[string]*File{}
	for _, x := range set.Experiments {
		if _, ok := files[x.Package]; ok {
			continue
		}
		f, err := Read(set.Root, x.Package)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			res.Errs = append(res.Errs, err)
		}
		files[x.Package] = f
	}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
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
			o := r.driftOf(ctx, x, e)
			mu.Lock()
			res.Asked += o.n
			res.Moved = append(res.Moved, o.ds...)
			res.Gone = append(res.Gone, o.gs...)
			res.Unasked = append(res.Unasked, o.us...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.sort()
	return res
}

// sort orders what CheckOnline found by experiment and input.
func (res *Online) sort() {
	order := map[string]int{DriftEngine: 0, DriftNPM: 1, DriftModel: 2, DriftModelFile: 3, DriftCorpus: 4}
	sort.Slice(res.Moved, func(i, j int) bool {
		a, b := res.Moved[i], res.Moved[j]
		if a.ID != b.ID {
			return a.ID < b.ID
		}
		return order[a.Input] < order[b.Input]
	})
	gs := res.Gone
	sort.SliceStable(gs, func(i, j int) bool {
		if gs[i].ID != gs[j].ID {
			return gs[i].ID < gs[j].ID
		}
		return order[gs[i].Input] < order[gs[j].Input]
	})
	us := res.Unasked
	sort.SliceStable(us, func(i, j int) bool {
		if us[i].ID != us[j].ID {
			return us[i].ID < us[j].ID
		}
		if order[us[i].Input] != order[us[j].Input] {
			return order[us[i].Input] < order[us[j].Input]
		}
		return us[i].Path < us[j].Path
	})
	sort.SliceStable(res.Errs, func(i, j int) bool { return res.Errs[i].Error() < res.Errs[j].Error() })
}

// driftOf asks the upstreams of one locked entry; n is how many inputs it
// asked about (a local path or a synthetic model needs no asking).
func (r *Resolver) driftOf(ctx context.Context, x *spec.Experiment, e *Entry) *outcome {
	var o outcome
	eng := e.Engine
	switch {
	case eng.Requested.Git != "" && eng.Commit != "" && eng.Kind == gitsrc.KindCommit:
		o.n++
		r.gitCommitGone(ctx, x, e, &o)
	case eng.Requested.Git != "" && eng.Commit != "":
		o.n++
		r.gitRefDrift(ctx, x, e, &o)
	case eng.NPM != nil && eng.Requested.NPM != "":
		o.n++
		r.npmDrift(ctx, x.ID, e, &o)
	}
	if m := e.Model; m.Requested.HF != "" && m.Commit != "" {
		o.n++
		r.modelDrift(ctx, x.ID, e, &o)
	}
	if c := e.Corpus; c != nil && c.HF != "" && c.Commit != "" {
		o.n++
		r.corpusDrift(ctx, x.ID, c, &o)
	}
	return &o
}

// corpusDrift asks the hub about a locked hub corpus as modelDrift does
// about a model: where its revision points now (not asked when it is
// pinned as a commit), whether the hub still has the repository and the
// locked commit, lists the file and serves its bytes. Any of those gone
// is the corpus gone upstream.
func (r *Resolver) corpusDrift(ctx context.Context, id string, c *CorpusLock, o *outcome) {
	rev := c.Revision
	if rev == "" {
		rev = "main"
	}
	pinned := hex40.MatchString(strings.ToLower(rev))
	gone := Gone{ID: id, Input: DriftCorpus, Source: c.HF, Ref: rev, Locked: c.Commit, Path: c.Path, SHA256: c.SHA256, pinned: pinned}
	fail := func(err error) { o.unask(gone, DriftCorpus, err) }
	upstream := c.Commit
	if !pinned {
		commit, err := r.hubRevision(ctx, c.HF, rev)
		if he := hubGone(err); he != nil {
			gone.Why = fmt.Sprintf("the hub answered %d %s for %s@%s", he.Status, he.Code, c.HF, rev)
			o.gs = append(o.gs, gone)
			return
		} else if err != nil {
			fail(err)
			return
		}
		upstream = commit
	}
	files, err := r.hubFiles(ctx, c.HF, c.Commit)
	if he := hubGone(err); he != nil {
		gone.Why = fmt.Sprintf("the hub answered %d %s for %s@%s", he.Status, he.Code, c.HF, short(c.Commit))
		if upstream != c.Commit {
			gone.Why += fmt.Sprintf(", and %s is now %s: history rewritten", rev, short(upstream))
		}
		o.gs = append(o.gs, gone)
		return
	} else if err != nil {
		fail(err)
		return
	}
	if upstream != c.Commit {
		o.ds = append(o.ds, Drift{ID: id, Input: DriftCorpus, Source: "hf://" + c.HF + "/" + c.Path, Ref: rev, Locked: c.Commit, Upstream: upstream})
	}
	listed := false
	for _, f := range files {
		listed = listed || f.Path == c.Path
	}
	if !listed {
		gone.Why = fmt.Sprintf("the hub no longer lists it at %s", short(c.Commit))
		o.gs = append(o.gs, gone)
		return
	}
	var he *hf.HubError
	switch err := r.hubStat(ctx, c.HF, c.Commit, c.Path); {
	case err != nil && errors.As(err, &he) && he.Code == hf.CodeEntryNotFound:
		gone.Why = fmt.Sprintf("the hub answered %d %s for it at %s", he.Status, he.Code, short(c.Commit))
		o.gs = append(o.gs, gone)
	case err != nil:
		fail(err)
	}
}

// outcome gathers what the upstreams of one entry answered.
type outcome struct {
	ds []Drift
	gs []Gone
	us []Unasked
	n  int
}

// unask records that the upstream of the input g describes could not be
// asked: err, for the input an [InputError] names label.
func (o *outcome) unask(g Gone, label string, err error) {
	g.Why = err.Error()
	o.us = append(o.us, Unasked{Gone: g, Err: err, label: label})
}

// gitSource is the engine's git URL as the experiment wrote it: the
// lockfile's URL has no credentials; the experiment's may.
func gitSource(x *spec.Experiment, eng EngineLock) string {
	src := eng.Requested.Git
	if g := x.Spec.Engine.Source.Git; g != "" && gitsrc.StripUserinfo(g) == src {
		src = g
	}
	return src
}

// gitCommitGone asks the remote of an engine pinned to a commit whether a
// branch or tag still holds it: the commit cannot move, but the remote
// can be deleted, or force-pushed so that nothing holds it any more.
func (r *Resolver) gitCommitGone(ctx context.Context, x *spec.Experiment, e *Entry, o *outcome) {
	eng := e.Engine
	src := gitSource(x, eng)
	has, err := r.remoteHasCommit(ctx, src, eng.Commit)
	gone := Gone{ID: x.ID, Input: DriftEngine, Source: eng.Requested.Git, Ref: eng.Requested.Ref, Locked: eng.Commit, pinned: true}
	switch {
	case err != nil && isGoneGit(err):
		gone.Why = "the remote answered: repository not found"
		o.gs = append(o.gs, gone)
	case err != nil:
		o.unask(gone, InputEngine, err)
	case !has:
		gone.Why = "no branch or tag of the remote holds the commit: force-pushed away or deleted"
		o.gs = append(o.gs, gone)
	}
}

// gitRefDrift asks the remote where an engine's branch or tag points now.
func (r *Resolver) gitRefDrift(ctx context.Context, x *spec.Experiment, e *Entry, o *outcome) {
	id, eng := x.ID, e.Engine
	ref := eng.Requested.Ref
	if ref == "" {
		ref = "HEAD"
	}
	src := gitSource(x, eng)
	res, err := r.gitResolve(ctx, src, eng.Requested.Ref)
	gone := Gone{ID: id, Input: DriftEngine, Source: eng.Requested.Git, Ref: ref, Locked: eng.Commit}
	var refErr *gitsrc.RefNotFoundError
	switch {
	case err != nil && isGoneGit(err):
		gone.Why = "the remote answered: repository not found"
		o.gs = append(o.gs, gone)
	case err != nil && errors.As(err, &refErr) || err == nil && res.Commit != eng.Commit:
		// The ref moved or went: does a branch or tag still hold
		// the locked commit, or did a force-push take it away?
		has, herr := r.remoteHasCommit(ctx, src, eng.Commit)
		switch {
		case herr != nil:
			o.unask(gone, InputEngine, herr)
		case !has && err != nil:
			gone.Why = fmt.Sprintf("%s is gone and no branch or tag of the remote holds the commit", ref)
			o.gs = append(o.gs, gone)
		case !has:
			gone.Why = fmt.Sprintf("%s is now %s and no branch or tag of the remote holds the locked commit: force-pushed away", ref, short(res.Commit))
			o.gs = append(o.gs, gone)
		case err != nil:
			o.unask(gone, InputEngine, err)
		default:
			o.ds = append(o.ds, Drift{ID: id, Input: DriftEngine, Source: eng.Requested.Git, Ref: ref, Locked: eng.Commit, Upstream: res.Commit})
		}
	case err != nil:
		o.unask(gone, InputEngine, err)
	}
}

// remoteHasCommit asks a git remote, once per remote and commit, whether
// a branch or tag holds the commit.
func (r *Resolver) remoteHasCommit(ctx context.Context, src, commit string) (bool, error) {
	v, err := r.once("githas\x00"+src+"\x00"+commit, func() (any, error) {
		return gitsrc.RemoteHasCommit(ctx, r.gitURL(src), commit, r.gitOptions())
	})
	if err != nil {
		return false, err
	}
	return v.(bool), nil
}

// npmDrift asks the npm registry for the newest version in the requested
// range and, when it is not the locked one, whether the locked one is
// still published: a range whose locked version was unpublished is gone,
// not moved, whatever else the range now holds. A question npm could not
// answer leaves the input unasked, and the platform package is then not
// asked about: the same registry would only fail again.
func (r *Resolver) npmDrift(ctx context.Context, id string, e *Entry, o *outcome) {
	eng := e.Engine
	pkg, want := eng.NPM.Package, eng.Requested.NPM
	gone := Gone{ID: id, Input: DriftNPM, Source: pkg, Ref: want, Locked: eng.NPM.Version}
	v, err := r.npmView(ctx, pkg, want)
	if err == nil && v.Version != eng.NPM.Version {
		// Is the locked version itself still there?
		if _, lerr := r.npmView(ctx, pkg, eng.NPM.Version); isNPMMissing(lerr) {
			gone.Why = fmt.Sprintf("the npm registry no longer has %s@%s (%s; %s now resolves to %s): unpublished", pkg, eng.NPM.Version, npmCode(lerr), want, v.Version)
			o.gs = append(o.gs, gone)
			return
		} else if lerr != nil {
			o.unask(gone, InputEngine, lerr)
			return
		}
	}
	switch {
	case isNPMMissing(err):
		gone.Why = fmt.Sprintf("the npm registry has no version of %s matching %s (%s): unpublished", pkg, want, npmCode(err))
		o.gs = append(o.gs, gone)
	case err != nil:
		o.unask(gone, InputEngine, err)
		return
	case v.Version != eng.NPM.Version:
		o.ds = append(o.ds, Drift{ID: id, Input: DriftNPM, Source: pkg, Ref: want, Locked: eng.NPM.Version, Upstream: v.Version})
	case v.Integrity != eng.NPM.Integrity:
		// A published version cannot change on the npm registry, but
		// a mirror registry can serve other bytes under its name.
		o.ds = append(o.ds, Drift{ID: id, Input: DriftNPM, Source: pkg, Ref: want, Locked: eng.NPM.Integrity, Upstream: v.Integrity})
	}
	if len(o.gs) == 0 && eng.NPM.Platform != nil {
		r.npmPlatformGone(ctx, id, eng.NPM.Platform, o)
	}
}

// npmPlatformGone asks whether the prebuilt-binary package the lock pins
// beside node-llama-cpp (@node-llama-cpp/linux-x64) is still published:
// npm installs it with node-llama-cpp, so without it the locked install
// cannot be made again either.
func (r *Resolver) npmPlatformGone(ctx context.Context, id string, p *NPMLock, o *outcome) {
	_, err := r.npmView(ctx, p.Package, p.Version)
	gone := Gone{ID: id, Input: DriftNPM, Source: p.Package, Ref: p.Version, Locked: p.Version}
	switch {
	case isNPMMissing(err):
		gone.Why = fmt.Sprintf("the npm registry no longer has %s@%s (%s), which node-llama-cpp installs: unpublished", p.Package, p.Version, npmCode(err))
		o.gs = append(o.gs, gone)
	case err != nil:
		o.unask(gone, InputEngine, err)
	}
}

// isNPMMissing says whether npm answered that the package or version is
// not in the registry (E404, ETARGET).
func isNPMMissing(err error) bool {
	var ne *NPMError
	return err != nil && errors.As(err, &ne) && (ne.Code == "E404" || ne.Code == "ETARGET")
}

func npmCode(err error) string {
	var ne *NPMError
	if errors.As(err, &ne) {
		return ne.Code
	}
	return ""
}

// modelDrift asks the hub where a model's revision points now (a revision
// pinned as a commit cannot move and is not asked), then lists the files
// of the locked commit and sends a HEAD for each locked one: a repository
// or commit the hub no longer has is gone (a history rewritten on the hub
// is gone, not moved), and so is each locked file the commit no longer
// lists or that the hub answers 404 EntryNotFound.
func (r *Resolver) modelDrift(ctx context.Context, id string, e *Entry, o *outcome) {
	m := e.Model
	rev := m.Requested.Revision
	if rev == "" {
		rev = "main"
	}
	pinned := hex40.MatchString(strings.ToLower(rev))
	gone := Gone{ID: id, Input: DriftModel, Source: m.Requested.HF, Ref: rev, Locked: m.Commit, pinned: pinned}
	upstream := m.Commit
	if !pinned {
		commit, err := r.hubRevision(ctx, m.Requested.HF, rev)
		if he := hubGone(err); he != nil {
			// The hub answers a deleted repository 404, or 401 to a
			// request without a token, as it hides private ones.
			gone.Why = fmt.Sprintf("the hub answered %d %s for %s@%s", he.Status, he.Code, m.Requested.HF, rev)
			o.gs = append(o.gs, gone)
			return
		} else if err != nil {
			o.unask(gone, InputModel, err)
			return
		}
		upstream = commit
	}
	files, err := r.hubFiles(ctx, m.Requested.HF, m.Commit)
	if he := hubGone(err); he != nil {
		gone.Why = fmt.Sprintf("the hub answered %d %s for %s@%s", he.Status, he.Code, m.Requested.HF, short(m.Commit))
		if upstream != m.Commit {
			gone.Why += fmt.Sprintf(", and %s is now %s: history rewritten", rev, short(upstream))
		}
		o.gs = append(o.gs, gone)
		return
	} else if err != nil {
		o.unask(gone, InputModel, err)
		return
	}
	if upstream != m.Commit {
		o.ds = append(o.ds, Drift{ID: id, Input: DriftModel, Source: m.Requested.HF, Ref: rev, Locked: m.Commit, Upstream: upstream})
	}
	listed := map[string]bool{}
	for _, f := range files {
		listed[f.Path] = true
	}
	for _, f := range m.Files {
		g := Gone{ID: id, Input: DriftModelFile, Source: m.Requested.HF, Ref: rev, Locked: m.Commit, Path: f.Path, SHA256: f.SHA256, pinned: pinned}
		if !listed[f.Path] {
			g.Why = fmt.Sprintf("the hub no longer lists it at %s", short(m.Commit))
			o.gs = append(o.gs, g)
			continue
		}
		// Listed, since a commit's tree cannot change; but are its bytes
		// still served (an LFS object deleted from the repo's storage)?
		err := r.hubStat(ctx, m.Requested.HF, m.Commit, f.Path)
		var he *hf.HubError
		switch {
		case err != nil && errors.As(err, &he) && he.Code == hf.CodeEntryNotFound:
			g.Why = fmt.Sprintf("the hub answered %d %s for it at %s", he.Status, he.Code, short(m.Commit))
			o.gs = append(o.gs, g)
		case err != nil:
			o.unask(g, InputModel, err)
		}
	}
}

// hubStat asks the hub, once per file, whether it still serves a file at a
// commit.
func (r *Resolver) hubStat(ctx context.Context, repo, commit, file string) error {
	_, err := r.once("hfstat\x00"+repo+"\x00"+commit+"\x00"+file, func() (any, error) {
		return nil, r.hf.Stat(ctx, repo, commit, file)
	})
	return err
}

// hubGone returns the hub's answer when err says that a repository or
// revision does not exist (RepoNotFound, RevisionNotFound), else nil.
func hubGone(err error) *hf.HubError {
	var he *hf.HubError
	if err != nil && errors.As(err, &he) && (he.Code == hf.CodeRepoNotFound || he.Code == hf.CodeRevisionNotFound) {
		return he
	}
	return nil
}

// hubFiles lists a hub repository's files at a commit, once per repo and
// commit.
func (r *Resolver) hubFiles(ctx context.Context, repo, commit string) ([]hf.FileInfo, error) {
	v, err := r.once("hffiles\x00"+repo+"\x00"+commit, func() (any, error) {
		if err := r.probeHub(ctx); err != nil {
			return nil, err
		}
		return r.hf.ListFiles(ctx, repo, commit)
	})
	if err != nil {
		return nil, err
	}
	return v.([]hf.FileInfo), nil
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

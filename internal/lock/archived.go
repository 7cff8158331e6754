package lock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/rigorbench/rigor/internal/gitsrc"
	"github.com/rigorbench/rigor/internal/hf"
)

// An Archive holds the pins of requests (a git ref, a hub revision with its
// file globs, an npm range) that a lock once resolved, beside the content
// they pin (internal/archive implements it). A [Resolver] asks it only
// when an input's upstream is gone or cannot be reached, or, offline, when
// the caches do not hold the request: never when upstream answered, so a
// ref that moved upstream is still a drift, the user's to take.
type Archive interface {
	// Pin returns the archived pin of the request key ([GitKey],
	// [HubKey], [RevisionKey], [CorpusKey], [NPMKey]), nil when the archive holds none. A pin whose
	// content the archive does not hold is an error, never a pin.
	Pin(ctx context.Context, key string) (*Pin, error)
	// RestoreSource brings an archived commit into the cache's git
	// mirror of url, so that patches can be proven to apply at it.
	gitsrc.SourceArchive
	// String names the archive, e.g. oci://host:5000/lab/rigor.
	String() string
}

// Pin is what a lock resolved one request to, as an archive keeps it:
// the facts the lockfile holds for it and nothing else (no credentials:
// a git URL without its user information, as the lockfile has it).
type Pin struct {
	// Request is the request's key ([GitKey], [HubKey], [NPMKey]).
	Request string `json:"request"`
	// Commit and Kind are a git ref's commit and kind, or a hub
	// revision's commit (Kind empty).
	Commit string `json:"commit,omitempty"`
	Kind   string `json:"kind,omitempty"`
	// Files are a hub revision's files matching the request's globs.
	Files []FileLock `json:"files,omitempty"`
	// NPM is an npm range's exact version, with its platform package.
	NPM *NPMLock `json:"npm,omitempty"`
	// Artifacts are the tags of the archived content the pin needs (the
	// source bundle, the model files, the npm install): an archive holds a
	// pin only with them.
	Artifacts []string `json:"artifacts"`
}

// GitKey is the request key of a git source's ref: the URL without its
// user information (as a lockfile records it), and the ref (HEAD when
// none is written).
func GitKey(url, ref string) string {
	if ref == "" {
		ref = "HEAD"
	}
	return "git " + gitsrc.StripUserinfo(url) + " " + ref
}

// HubKey is the request key of a hub model: the repo, the revision (main
// when none is written) and the file globs, which decide the files.
func HubKey(repo, rev string, files []string) string {
	if rev == "" {
		rev = "main"
	}
	if len(files) == 0 {
		files = []string{}
	}
	b, _ := json.Marshal(files)
	return "hf " + repo + "@" + rev + " " + string(b)
}

// RevisionKey is the request key of a hub model read from a local path
// (hf and path: a local copy of the repo): only its revision is resolved
// on the hub, to the commit the lock pins; its files are the module's.
func RevisionKey(repo, rev string) string {
	if rev == "" {
		rev = "main"
	}
	return "hf-revision " + repo + "@" + rev
}

// CorpusKey is the request key of a hub corpus (quality.measure.corpus):
// the repo, the revision (main when none is written) and the one file.
// It is not a [HubKey]: a model's pin carries its files' GGUF facts, a
// corpus's does not, and the two must not replace each other's pins.
func CorpusKey(repo, rev, file string) string {
	if rev == "" {
		rev = "main"
	}
	return "corpus " + repo + "@" + rev + " " + file
}

// NPMKey is the request key of an npm engine: the package, the range and
// the platform package the range's version is pinned with.
func NPMKey(pkg, rng, platform string) string {
	return "npm " + pkg + "@" + rng + " " + platform
}

// DecodePin reads a pin's JSON (numbers of GGUF facts kept as written, as
// a lockfile's are) and checks that it is one of the request key.
func DecodePin(b []byte, key string) (*Pin, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var p Pin
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("not a pin: %v", err)
	}
	if p.Request != key {
		return nil, fmt.Errorf("it pins %q, not %q", p.Request, key)
	}
	kind, _, _ := strings.Cut(key, " ")
	switch {
	case kind == "git" && !hex40.MatchString(p.Commit):
		return nil, fmt.Errorf("its commit %q is not 40 hex digits", p.Commit)
	case kind == "hf" && (!hex40.MatchString(p.Commit) || len(p.Files) == 0):
		return nil, errors.New("it holds no commit and files of the revision")
	case kind == "hf-revision" && !hex40.MatchString(p.Commit):
		return nil, errors.New("it holds no commit of the revision")
	case kind == "corpus" && (!hex40.MatchString(p.Commit) || len(p.Files) != 1 || !strings.HasSuffix(key, " "+p.Files[0].Path)):
		return nil, errors.New("it holds no commit and file of the corpus")
	case kind == "npm" && (p.NPM == nil || p.NPM.Version == "" || p.NPM.Integrity == ""):
		return nil, errors.New("it holds no npm version and integrity")
	}
	for _, f := range p.Files {
		if !hex64.MatchString(f.SHA256) {
			return nil, fmt.Errorf("its file %s has no sha256", f.Path)
		}
	}
	return &p, nil
}

// FromArchive is an input a lock took from the archive because its
// upstream was gone, could not be reached or (offline) was not cached.
type FromArchive struct {
	// ID is the experiment; Input is [InputEngine], [InputModel] or
	// [DriftCorpus].
	ID    string `json:"id"`
	Input string `json:"input"`
	// Request names what was asked ("engine@v2", "org/tiny-GGUF@main");
	// Pinned is what the archive pins it to (a commit, an npm version).
	Request string `json:"request"`
	Pinned  string `json:"pinned"`
	// Why is what upstream answered; Archive the archive's address.
	Why     string `json:"why"`
	Archive string `json:"archive"`
}

// NotArchivedError is an input whose upstream is gone and that the archive
// does not hold (or could not be asked for): the upstream's error, and
// why the archive could not stand in.
type NotArchivedError struct {
	// ID is the experiment; What names the request; Archive is the
	// archive's address.
	ID, What, Archive string
	// Upstream is upstream's error; Err the archive's, nil when it
	// simply holds no pin of What.
	Upstream, Err error
}

// Error says what upstream answered and what the archive did.
func (e *NotArchivedError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%v; the archive %s could not stand in for %s: %v", e.Upstream, e.Archive, e.What, e.Err)
	}
	return fmt.Sprintf("%v; the archive %s holds no pin of %s", e.Upstream, e.Archive, e.What)
}

// Unwrap returns upstream's error.
func (e *NotArchivedError) Unwrap() error { return e.Upstream }

// Hint says how an archive comes to hold it.
func (e *NotArchivedError) Hint() string {
	if e.Err != nil {
		var h interface{ Hint() string }
		if errors.As(e.Err, &h) && h.Hint() != "" {
			return h.Hint()
		}
	}
	return "on a machine whose lock pins it, 'rigor archive push " + e.ID + "' archives its pin with its content; then 'rigor lock' takes it from there"
}

// standsIn says whether the archive may stand in for an upstream that
// failed with err: a git remote gone (repository or ref not found),
// unreachable or silent, a hub repository or revision not found or a hub
// that cannot be reached, an npm version not published or a registry
// that cannot be reached; offline, a cache that does not hold it.
func standsIn(err error) bool {
	var (
		gref *gitsrc.RefNotFoundError
		gunr *gitsrc.UnreachableError
		gtmo *gitsrc.TimeoutError
		gnm  *gitsrc.NoMirrorError
		he   *hf.HubError
		hunr *hf.UnreachableError
		htmo *hf.TimeoutError
		off  *OfflineError
		ne   *NPMError
	)
	switch {
	case errors.As(err, &gref), errors.As(err, &gunr), errors.As(err, &gtmo), errors.As(err, &gnm):
		return true
	case errors.As(err, &he):
		return he.Code == hf.CodeRepoNotFound || he.Code == hf.CodeRevisionNotFound || he.Status >= 500
	case errors.As(err, &hunr), errors.As(err, &htmo), errors.As(err, &off), errors.Is(err, hf.ErrOffline):
		return true
	case errors.As(err, &ne):
		switch ne.Code {
		case "E404", "ETARGET", "ENOTCACHED", "ENOTFOUND", "ECONNREFUSED", "ETIMEDOUT", "EAI_AGAIN", "ECONNRESET":
			return true
		}
		return false
	}
	return isGoneGit(err)
}

// fromArchive asks the archive for the pin of key after upstream failed
// with upErr, for the input of experiment id; what names the request. It
// returns upErr itself when the archive may not stand in (no archive,
// another failure), and a [*NotArchivedError] when it holds no pin.
func (r *Resolver) fromArchive(ctx context.Context, id, input, what, key string, upErr error) (*Pin, error) {
	a := r.opts.Archive
	if a == nil || !standsIn(upErr) {
		return nil, upErr
	}
	v, err := r.once("pin\x00"+key, func() (any, error) { return a.Pin(ctx, key) })
	if err != nil {
		return nil, &NotArchivedError{ID: id, What: what, Archive: a.String(), Upstream: upErr, Err: err}
	}
	p, _ := v.(*Pin)
	if p == nil {
		return nil, &NotArchivedError{ID: id, What: what, Archive: a.String(), Upstream: upErr}
	}
	pinned := p.Commit
	if p.NPM != nil {
		pinned = p.NPM.Version
	}
	r.mu.Lock()
	r.archived = append(r.archived, FromArchive{ID: id, Input: input, Request: what, Pinned: pinned, Why: upErr.Error(), Archive: a.String()})
	r.mu.Unlock()
	return p, nil
}

// restoreSource brings commit into the mirror of url from the archive
// after gitsrc failed with err to find it there (the remote gone, or
// offline): false when there is no archive or it does not hold it.
func (r *Resolver) restoreSource(ctx context.Context, url, commit string, err error) (bool, error) {
	if r.opts.Archive == nil || !standsIn(err) {
		return false, nil
	}
	return r.opts.Archive.RestoreSource(ctx, r.opts.Cache, url, commit)
}

// fromArchiveOf returns the inputs taken from the archive for the
// experiments of ids, sorted.
func (r *Resolver) fromArchiveOf(ids map[string]bool) []FromArchive {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []FromArchive
	for _, f := range r.archived {
		if ids[f.ID] {
			out = append(out, f)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].ID != out[j].ID {
			return out[i].ID < out[j].ID
		}
		return out[i].Input < out[j].Input
	})
	return out
}

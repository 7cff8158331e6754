package gitsrc

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	sg "github.com/rigorbench/rigor/internal/suggest"
)

// Kinds of ref, the values of [Resolution.Kind].
const (
	KindBranch       = "branch"
	KindTag          = "tag"           // a lightweight tag
	KindAnnotatedTag = "annotated-tag" // Commit is the peeled commit, not the tag object
	KindCommit       = "commit"        // a full or short sha
)

// Sources of a resolution, the values of [Resolution.Via].
const (
	ViaLsRemote = "ls-remote" // the remote's advertised refs
	ViaMirror   = "mirror"    // the bare mirror in the cache
)

// Resolution is what a ref of a remote resolved to.
type Resolution struct {
	Commit string // the full 40-hex commit sha, lower case
	Kind   string // KindBranch, KindTag, KindAnnotatedTag or KindCommit
	Ref    string // the ref as requested
	Via    string // ViaLsRemote or ViaMirror
}

// Resolve resolves ref of the remote url to a full commit sha.
//
// The url is an https URL, a local path or a file:// URL. The ref is a branch
// or tag name, a full ref name (refs/heads/x, refs/tags/x), HEAD (online
// only), a full 40-hex sha, or a short sha of 4 to 39 hex digits. Resolve
// tries, in order:
//
//   - a full sha: it must exist in the mirror, which is fetched if it does
//     not hold the commit yet;
//   - the remote's advertised branches and tags (tags before branches, as git
//     does; a branch and a tag of one name on different commits is an
//     error); an annotated tag resolves to the commit it peels to;
//   - a short sha: the mirror is created or fetched, then its commits are
//     searched for the prefix: several matches are an [*AmbiguousError].
//
// A ref found nowhere is a [*RefNotFoundError] with the nearest branch and tag
// names. With opts.Offline the mirror stands in for the remote: no mirror is a
// [*NoMirrorError]. An unreachable remote is an [*UnreachableError].
func Resolve(ctx context.Context, url, ref string, opts Options) (Resolution, error) {
	res, err := resolve(ctx, url, ref, opts)
	return res, scrubCredentials(err, url)
}

func resolve(ctx context.Context, url, ref string, opts Options) (Resolution, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return Resolution{}, err
	}
	raw := url // with its credentials, for the fetches
	url, ep, err := canonicalURL(url)
	if err != nil {
		return Resolution{}, err
	}
	if ref == "" {
		return Resolution{}, fmt.Errorf("resolving %s: empty ref", url)
	}
	path := MirrorPath(opts.Cache, url)
	res := Resolution{Ref: ref}

	if len(ref) == 40 && isHex(ref) {
		sha := strings.ToLower(ref)
		res.Kind, res.Via, res.Commit = KindCommit, ViaMirror, sha
		if mirrorExists(path) {
			ok, err := mirrorHasCommit(ctx, path, sha)
			if err != nil || ok {
				return res, err
			}
		}
		if opts.Offline {
			if !mirrorExists(path) {
				return Resolution{}, &NoMirrorError{URL: url, Cache: opts.Cache}
			}
			return Resolution{}, &RefNotFoundError{URL: url, Ref: ref, Offline: true}
		}
		if _, err := ensureMirror(ctx, raw, opts); err != nil {
			return Resolution{}, err
		}
		ok, err := mirrorHasCommit(ctx, path, sha)
		if err != nil {
			return Resolution{}, err
		}
		if !ok {
			return Resolution{}, &RefNotFoundError{URL: url, Ref: ref}
		}
		return res, nil
	}

	var refs map[string]string
	if opts.Offline {
		if !mirrorExists(path) {
			return Resolution{}, &NoMirrorError{URL: url, Cache: opts.Cache}
		}
		refs, err = mirrorRefs(ctx, path)
		res.Via = ViaMirror
	} else {
		refs, err = listRemote(ctx, url, ep, opts)
		res.Via = ViaLsRemote
	}
	if err != nil {
		return Resolution{}, err
	}
	commit, kind, err := pickRef(refs, ref)
	if err != nil {
		return Resolution{}, fmt.Errorf("resolving %q of %s: %w", ref, url, err)
	}
	if commit != "" {
		res.Commit, res.Kind = commit, kind
		return res, nil
	}

	if isShortHex(ref) {
		if !opts.Offline {
			if _, err := ensureMirror(ctx, raw, opts); err != nil {
				return Resolution{}, err
			}
		}
		commit, err := scanMirror(ctx, path, url, ref)
		if err != nil {
			return Resolution{}, err
		}
		if commit != "" {
			res.Commit, res.Kind, res.Via = commit, KindCommit, ViaMirror
			return res, nil
		}
	}
	return Resolution{}, &RefNotFoundError{URL: url, Ref: ref, Suggestions: suggest(refs, ref), Offline: opts.Offline}
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return s != ""
}

// isShortHex reports whether s can be an abbreviated sha: git's minimum of 4
// hex digits, at most 39.
func isShortHex(s string) bool { return len(s) >= 4 && len(s) < 40 && isHex(s) }

// pickRef finds ref among refs (name → sha, or "ref: <target>" for a symbolic
// ref; "<tag>^{}" → the commit an annotated tag peels to). It returns "" and
// no error when ref names no branch or tag.
func pickRef(refs map[string]string, ref string) (commit, kind string, err error) {
	lookup := func(name string) (string, string) {
		h, ok := refs[name]
		if !ok {
			return "", ""
		}
		if target, sym := strings.CutPrefix(h, "ref: "); sym {
			h, ok = refs[target]
			if !ok || strings.HasPrefix(h, "ref: ") {
				return "", ""
			}
			name = target
		}
		if strings.HasPrefix(name, "refs/tags/") {
			if p, ok := refs[name+"^{}"]; ok {
				return p, KindAnnotatedTag
			}
			return h, KindTag
		}
		return h, KindBranch
	}
	switch {
	case ref == "HEAD" || strings.HasPrefix(ref, "refs/heads/") || strings.HasPrefix(ref, "refs/tags/"):
		commit, kind = lookup(ref)
		return commit, kind, nil
	case strings.HasPrefix(ref, "refs/") || strings.HasSuffix(ref, "^{}"):
		return "", "", nil
	}
	tc, tk := lookup("refs/tags/" + ref)
	bc, bk := lookup("refs/heads/" + ref)
	switch {
	case tc != "" && bc != "" && tc != bc:
		return "", "", fmt.Errorf("ambiguous ref: branch refs/heads/%s is %s and tag refs/tags/%s is %s; name one in full",
			ref, shortSHA(bc), ref, shortSHA(tc))
	case tc != "":
		return tc, tk, nil
	default:
		return bc, bk, nil
	}
}

// mirrorRefs returns the branches and tags of the mirror at path in the form
// of listRemote, annotated tags peeled.
func mirrorRefs(ctx context.Context, path string) (map[string]string, error) {
	lk, err := lockMirror(ctx, path, false)
	if err != nil {
		return nil, err
	}
	defer lk.Unlock()
	repo, _, err := openMirror(path)
	if err != nil {
		return nil, err
	}
	iter, err := repo.References()
	if err != nil {
		return nil, fmt.Errorf("listing refs of mirror %s: %w", path, err)
	}
	refs := make(map[string]string)
	err = iter.ForEach(func(r *plumbing.Reference) error {
		name := r.Name().String()
		if r.Type() != plumbing.HashReference ||
			!strings.HasPrefix(name, "refs/heads/") && !strings.HasPrefix(name, "refs/tags/") {
			return nil
		}
		refs[name] = r.Hash().String()
		if !strings.HasPrefix(name, "refs/tags/") {
			return nil
		}
		h, peeled := r.Hash(), false
		for range 16 { // a tag of a tag of …: peel a bounded number of times
			t, err := repo.TagObject(h)
			if err != nil {
				break
			}
			h, peeled = t.Target, true
		}
		if peeled {
			refs[name+"^{}"] = h.String()
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing refs of mirror %s: %w", path, err)
	}
	return refs, nil
}

// mirrorHasCommit reports whether the mirror at path holds commit sha.
func mirrorHasCommit(ctx context.Context, path, sha string) (bool, error) {
	lk, err := lockMirror(ctx, path, false)
	if err != nil {
		return false, err
	}
	defer lk.Unlock()
	return hasCommitLocked(path, sha)
}

// hasCommitLocked is mirrorHasCommit for a caller that holds the mirror's
// lock.
func hasCommitLocked(path, sha string) (bool, error) {
	repo, _, err := openMirror(path)
	if err != nil {
		return false, err
	}
	_, err = repo.CommitObject(plumbing.NewHash(sha))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, plumbing.ErrObjectNotFound):
		return false, nil
	default:
		return false, fmt.Errorf("reading commit %s in mirror %s: %w", sha, path, err)
	}
}

// scanMirror returns the one commit of the mirror at path whose sha starts
// with prefix, "" when none does, or an [*AmbiguousError].
func scanMirror(ctx context.Context, path, url, prefix string) (string, error) {
	lk, err := lockMirror(ctx, path, false)
	if err != nil {
		return "", err
	}
	defer lk.Unlock()
	repo, st, err := openMirror(path)
	if err != nil {
		return "", err
	}
	p := strings.ToLower(prefix)
	whole, err := hex.DecodeString(p[:len(p)&^1])
	if err != nil {
		return "", fmt.Errorf("searching mirror %s for %q: %w", path, prefix, err)
	}
	hashes, err := st.HashesWithPrefix(whole)
	if err != nil {
		return "", fmt.Errorf("searching mirror %s for %q: %w", path, prefix, err)
	}
	seen := make(map[plumbing.Hash]bool)
	var commits []*object.Commit
	for _, h := range hashes {
		if seen[h] || !strings.HasPrefix(h.String(), p) {
			continue
		}
		seen[h] = true
		c, err := repo.CommitObject(h)
		if errors.Is(err, plumbing.ErrObjectNotFound) || errors.Is(err, object.ErrUnsupportedObject) {
			continue // a tree, blob or tag object
		}
		if err != nil {
			return "", fmt.Errorf("searching mirror %s for %q: reading %s: %w", path, prefix, h, err)
		}
		commits = append(commits, c)
	}
	switch len(commits) {
	case 0:
		return "", nil
	case 1:
		return commits[0].Hash.String(), nil
	}
	sort.Slice(commits, func(i, j int) bool { return commits[i].Hash.String() < commits[j].Hash.String() })
	e := &AmbiguousError{URL: url, Prefix: prefix}
	for _, c := range commits {
		subject, _, _ := strings.Cut(strings.TrimSpace(c.Message), "\n")
		e.Candidates = append(e.Candidates, c.Hash.String()+" "+subject)
	}
	return "", e
}

// maxSuggestions bounds [RefNotFoundError.Suggestions].
const maxSuggestions = 5

// suggest returns the branch and tag names of refs nearest to ref: within an
// edit distance of a third of its length (at least 2), or containing it or
// contained in it, nearest first.
func suggest(refs map[string]string, ref string) []string {
	want := strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(ref, "refs/heads/"), "refs/tags/"))
	limit := max(2, len(want)/3)
	type cand struct {
		name string
		d    int
	}
	var cands []cand
	seen := make(map[string]bool)
	for full := range refs {
		var name string
		switch {
		case strings.HasSuffix(full, "^{}"):
			continue
		case strings.HasPrefix(full, "refs/heads/"):
			name = full[len("refs/heads/"):]
		case strings.HasPrefix(full, "refs/tags/"):
			name = full[len("refs/tags/"):]
		default:
			continue
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		low := strings.ToLower(name)
		d := sg.Distance(low, want)
		if d <= limit || len(want) >= 3 && (strings.Contains(low, want) || strings.Contains(want, low)) {
			cands = append(cands, cand{name, d})
		}
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].d != cands[j].d {
			return cands[i].d < cands[j].d
		}
		return cands[i].name < cands[j].name
	})
	var out []string
	for i := 0; i < len(cands) && i < maxSuggestions; i++ {
		out = append(out, cands[i].name)
	}
	return out
}

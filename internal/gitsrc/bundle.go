package gitsrc

import (
	"context"
	"encoding/base64"

	"errors"
	"fmt"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"os"
	"path/filepath"
	"strings"
)

// Bundles carry an engine's source at a locked commit out of the cache and
// back: `rigor archive push` keeps a git bundle of the commit (its whole
// history, as git's own `git bundle create` writes it) so that a build can
// run when the remote is gone or was force-pushed away from the commit.

// archiveRef is the ref under which an imported bundle's commit is kept
// in a mirror, so that git never collects it and later fetches (which
// take only branches and tags) leave it alone.
func archiveRef(commit string) string { return "refs/rigor/archive/" + commit }

// HasCommit reports whether the mirror at mirror holds commit (a full sha).
func HasCommit(ctx context.Context, mirror, commit string) (bool, error) {
	if !mirrorExists(mirror) {
		return false, nil
	}
	return mirrorHasCommit(ctx, mirror, strings.ToLower(commit))
}

// Bundle writes a git bundle of commit, with all its history, from the
// mirror at mirror to dest, with git's `git bundle create`. The bundle's one
// ref is refs/rigor/source. The mirror is only read (under its shared
// lock): the ref is made in a scratch repository that borrows the
// mirror's objects.
func Bundle(ctx context.Context, mirror, commit, dest string) error {
	commit = strings.ToLower(commit)
	if len(commit) != 40 || !isHex(commit) {
		return fmt.Errorf("bundling %q: not a full 40-hex commit sha", commit)
	}
	mirror, err := filepath.Abs(mirror)
	if err != nil {
		return err
	}
	ok, err := HasCommit(ctx, mirror, commit)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("bundling %s: commit not in the mirror %s", shortSHA(commit), mirror)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dest), ".rigor-bundle-")
	if err != nil {
		return fmt.Errorf("bundling %s: %w", shortSHA(commit), err)
	}
	defer os.RemoveAll(tmp)
	if _, err := runGit(ctx, tmp, nil, "init", "--quiet", "--bare", "."); err != nil {
		return fmt.Errorf("bundling %s: %w", shortSHA(commit), err)
	}
	alt := filepath.Join(tmp, "objects", "info", "alternates")
	if err := os.WriteFile(alt, []byte(filepath.Join(mirror, "objects")+"\n"), 0o644); err != nil {
		return fmt.Errorf("bundling %s: %w", shortSHA(commit), err)
	}
	lk, err := lockMirror(ctx, mirror, false)
	if err != nil {
		return err
	}
	defer lk.Unlock()
	if _, err := runGit(ctx, tmp, nil, "update-ref", "refs/rigor/source", commit); err != nil {
		return fmt.Errorf("bundling %s: %w", shortSHA(commit), err)
	}
	if _, err := runGit(ctx, tmp, nil, "bundle", "create", "--quiet", dest, "refs/rigor/source"); err != nil {
		os.Remove(dest)
		return fmt.Errorf("bundling %s: %w", shortSHA(commit), err)
	}
	return nil
}

// BundleError is a bundle that does not hold the commit it was taken for:
// refused.
type BundleError struct {
	Commit string
	// Heads are the commits the bundle's refs name.
	Heads []string
	Err   error
}

func (e *BundleError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("the bundle is not a git bundle of %s: %v: refused", shortSHA(e.Commit), e.Err)
	}
	short := make([]string, len(e.Heads))
	for i, h := range e.Heads {
		short[i] = shortSHA(h)
	}
	return fmt.Sprintf("the bundle's ref names commit %s, not the locked %s: refused", strings.Join(short, ", "), shortSHA(e.Commit))
}

// ImportBundle brings commit from the git bundle at bundle into the cache's
// mirror of url, creating the mirror when there is none (set up to fetch
// from url later, as [EnsureMirror] makes it), and keeps it under
// refs/rigor/archive/<commit>. The bundle must name exactly commit: one
// whose refs name another commit, or that git cannot read, is a
// [*BundleError] and nothing of it is kept. It returns the mirror's path.
func ImportBundle(ctx context.Context, cache, url, bundle, commit string) (string, error) {
	commit = strings.ToLower(commit)
	if cache == "" {
		return "", errors.New("importing a git bundle: no cache directory")
	}
	url, _, err := canonicalURL(url)
	if err != nil {
		return "", err
	}
	bundle, err = filepath.Abs(bundle)
	if err != nil {
		return "", err
	}
	path := MirrorPath(cache, url)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	lk, err := lockMirror(ctx, path, true)
	if err != nil {
		return "", err
	}
	defer lk.Unlock()
	heads, err := bundleHeads(ctx, filepath.Dir(path), bundle)
	if err != nil {
		return "", &BundleError{Commit: commit, Err: err}
	}
	if len(heads) != 1 || heads[0][0] != commit {
		var hs []string
		for _, h := range heads {
			hs = append(hs, h[0])
		}
		return "", &BundleError{Commit: commit, Heads: hs}
	}
	dir, made := path, false
	if !mirrorExists(path) {
		dir, made = path+".tmp", true
		if err := os.RemoveAll(dir); err != nil {
			return "", err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		for _, args := range [][]string{
			{"init", "--quiet", "--bare", "."},
			{"config", "remote.origin.url", url},
			{"config", "remote.origin.fetch", string(mirrorRefSpecs[0])},
			{"config", "--add", "remote.origin.fetch", string(mirrorRefSpecs[1])},
		} {
			if _, err := runGit(ctx, dir, nil, args...); err != nil {
				os.RemoveAll(dir)
				return "", fmt.Errorf("importing the bundle of %s: %w", shortSHA(commit), err)
			}
		}
	}
	fail := func(err error) (string, error) {
		if made {
			os.RemoveAll(dir)
		}
		return "", err
	}
	if _, err := runGit(ctx, dir, nil, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", bundle, "+"+heads[0][1]+":"+archiveRef(commit)); err != nil {
		if ctx.Err() != nil {
			return fail(err)
		}
		return fail(&BundleError{Commit: commit, Err: err})
	}
	ok, err := hasCommitLocked(dir, commit)
	if err == nil && !ok {
		err = &BundleError{Commit: commit, Heads: []string{heads[0][0]}}
	}
	if err != nil {
		if !made {
			runGit(ctx, dir, nil, "update-ref", "-d", archiveRef(commit))
		}
		return fail(err)
	}
	if made {
		if err := os.Rename(dir, path); err != nil {
			return fail(err)
		}
	}
	return path, nil
}

// bundleHeads lists the refs of a bundle: [sha, name] pairs.
func bundleHeads(ctx context.Context, dir, bundle string) ([][2]string, error) {
	out, err := gitOutput(ctx, dir, "bundle", "list-heads", bundle)
	if err != nil {
		return nil, err
	}
	var heads [][2]string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		sha, name, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || len(sha) != 40 || !isHex(sha) || !strings.HasPrefix(name, "refs/") {
			continue
		}
		heads = append(heads, [2]string{strings.ToLower(sha), name})
	}
	if len(heads) == 0 {
		return nil, errors.New("it names no ref")
	}
	return heads, nil
}

// A SourceArchive brings a locked commit into the cache's mirror of a
// remote from elsewhere than the remote (rigor's archive, internal/archive),
// when the remote is gone or no longer has the commit. RestoreSource
// reports whether it had the commit; bytes it holds that are not the
// commit are an error, never a silent miss.
type SourceArchive interface {
	RestoreSource(ctx context.Context, cache, url, commit string) (ok bool, err error)
}

type sourceArchiveKey struct{}

// WithSourceArchive returns ctx carrying a for the builds run under it.
func WithSourceArchive(ctx context.Context, a SourceArchive) context.Context {
	return context.WithValue(ctx, sourceArchiveKey{}, a)
}

// SourceArchiveOf returns the source archive ctx carries, or nil.
func SourceArchiveOf(ctx context.Context) SourceArchive {
	a, _ := ctx.Value(sourceArchiveKey{}).(SourceArchive)
	return a
}

// SourceRestored reports whether ctx's source archive brought commit in
// this process: a record says its engine's source came from the archive.
func SourceRestored(ctx context.Context, commit string) bool {
	a, ok := SourceArchiveOf(ctx).(interface{ Restored(commit string) bool })
	return ok && commit != "" && a.Restored(strings.ToLower(commit))
}

// RemoteHasCommit says whether the remote url still holds commit: whether
// one of the branches or tags it has now contains it. The remote's
// branches and tags are fetched by git into a scratch repository that
// borrows the cache mirror's objects (so only what the mirror lacks is
// sent), and asked there: the mirror itself is not changed, so a later
// fetch into it still sees what moved. A commit that a force-push took off
// every branch and tag is false. A remote that cannot be reached is an
// error, never false.
func RemoteHasCommit(ctx context.Context, url, commit string, opts Options) (bool, error) {
	ok, err := remoteHasCommit(ctx, url, strings.ToLower(commit), opts)
	return ok, scrubCredentials(err, url)
}

func remoteHasCommit(ctx context.Context, url, commit string, opts Options) (bool, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return false, err
	}
	if opts.Offline {
		return false, fmt.Errorf("asking %s for %s: %w", StripUserinfo(url), shortSHA(commit), ErrOffline)
	}
	url, ep, err := canonicalURL(url)
	if err != nil {
		return false, err
	}
	if err := probe(ctx, url, ep, opts.Timeout); err != nil {
		return false, err
	}
	tmp, err := os.MkdirTemp("", "rigor-remote-check-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(tmp)
	if _, err := runGit(ctx, tmp, nil, "init", "--quiet", "--bare", "."); err != nil {
		return false, err
	}
	path := MirrorPath(opts.Cache, url)
	if mirrorExists(path) {
		abs, err := filepath.Abs(filepath.Join(path, "objects"))
		if err != nil {
			return false, err
		}
		if err := os.WriteFile(filepath.Join(tmp, "objects", "info", "alternates"), []byte(abs+"\n"), 0o644); err != nil {
			return false, err
		}
		lk, err := lockMirror(ctx, path, false)
		if err != nil {
			return false, err
		}
		defer lk.Unlock()
	}
	var env []string
	if a, ok := authOf(ep).(*githttp.BasicAuth); ok {
		// Given to git through its environment, never its arguments.
		tok := base64.StdEncoding.EncodeToString([]byte(a.Username + ":" + a.Password))
		env = append(env, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraHeader", "GIT_CONFIG_VALUE_0=Authorization: Basic "+tok)
	}
	fctx, cancel := context.WithTimeout(ctx, max(FetchTimeout, opts.Timeout))
	defer cancel()
	if _, err := gitOutputEnv(fctx, tmp, env, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", url, "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"); err != nil {
		if ctx.Err() != nil {
			return false, fmt.Errorf("fetching %s: %w", url, ctx.Err())
		}
		if errors.Is(fctx.Err(), context.DeadlineExceeded) {
			return false, &TimeoutError{URL: url, Op: "fetching", Timeout: max(FetchTimeout, opts.Timeout)}
		}
		msg := err.Error()
		if strings.Contains(msg, "does not appear to be a git repository") || strings.Contains(msg, "not found") {
			return false, fmt.Errorf("fetching %s: repository not found", url)
		}
		return false, fmt.Errorf("fetching %s: %w", url, err)
	}
	if _, err := gitOutput(ctx, tmp, "cat-file", "-e", commit+"^{commit}"); err != nil {
		return false, nil
	}
	out, err := gitOutput(ctx, tmp, "for-each-ref", "--contains", commit, "--format=%(refname)", "refs/heads", "refs/tags")
	if err != nil {
		return false, fmt.Errorf("asking which refs of %s hold %s: %w", url, shortSHA(commit), err)
	}
	return strings.TrimSpace(out) != "", nil
}

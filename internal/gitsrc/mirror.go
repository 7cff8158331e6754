package gitsrc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"
)

// DefaultTimeout is how long a remote may stay silent when
// [Options.Timeout] is zero: listing refs fails after it (and ends within
// twice it in all), and an
// http(s) fetch fails when the remote sends nothing for that long (see
// idle.go), as npm calls do. An unreachable host is reported sooner by the
// connection probe (see [ConnectTimeout]).
const DefaultTimeout = time.Minute

// FetchTimeout bounds a whole fetch, which for a first clone of a large
// engine repository takes minutes; silence ends it long before (over
// http(s): [Options.Timeout]).
const FetchTimeout = 30 * time.Minute

// ConnectTimeout bounds the connection probe that precedes every network
// operation (capped by [Options.Timeout]), so that a host that drops packets
// is reported as unreachable quickly.
const ConnectTimeout = 10 * time.Second

// Options configure [Resolve], [EnsureMirror] and [Fetch].
type Options struct {
	// Cache is rigor's cache directory; it must be set (internal/cli
	// reads RIGOR_CACHE, see [CacheDirFrom]).
	Cache string
	// Offline forbids the network: only mirrors already in Cache are used.
	Offline bool
	// Timeout is how long a remote may stay silent: listing refs or an
	// http(s) fetch that gets no byte for that long fails, and listing
	// refs ends within twice it; 0 means
	// [DefaultTimeout]. A whole fetch is bounded by [FetchTimeout].
	Timeout time.Duration
	// Moved, when set, is told of every branch or tag that a fetch into an
	// existing mirror found on another commit than the mirror had, so
	// that a caller can say when an input it pinned moved upstream (a
	// force-moved tag, an advanced branch). It is called before the fetch
	// returns, from the fetching goroutine.
	Moved func(Move)
}

// Move is a branch or tag of a remote that a fetch found moved.
type Move struct {
	// URL is the remote, as canonicalized (a local path made absolute).
	URL string
	// Ref is the full ref name, e.g. "refs/tags/b4747".
	Ref string
	// Old and New are the commits (annotated tags peeled) before and
	// after the fetch.
	Old, New string
}

func (o Options) withDefaults() (Options, error) {
	if o.Cache == "" {
		return o, errors.New("git source: no cache directory (Options.Cache is empty)")
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return o, nil
}

// mirrorRefSpecs fetch every branch and tag of the remote into the mirror
// under the same names, forced, as `git clone --mirror` would (without pull
// request and other refs).
var mirrorRefSpecs = []config.RefSpec{
	"+refs/heads/*:refs/heads/*",
	"+refs/tags/*:refs/tags/*",
}

// canonicalURL returns url with a local path made absolute, so that a
// relative path names one mirror whatever the working directory, and
// without its credentials ([StripUserinfo]): the URL names the mirror,
// goes into its config and into errors. The endpoint keeps the
// credentials; [authOf] hands them to go-git from memory.
func canonicalURL(url string) (string, *transport.Endpoint, error) {
	url = strings.TrimSpace(url)
	if url == "" {
		return "", nil, errors.New("empty git url")
	}
	ep, err := transport.NewEndpoint(url)
	if err != nil {
		return "", nil, fmt.Errorf("parsing git url %q: %w", StripUserinfo(url), scrubCredentials(err, url))
	}
	if stripped := StripUserinfo(url); stripped != url {
		return stripped, ep, nil
	}
	if ep.Protocol == "file" && !strings.HasPrefix(url, "file://") {
		abs, err := filepath.Abs(url)
		if err != nil {
			return "", nil, fmt.Errorf("parsing git url %q: %w", url, err)
		}
		url = abs
		if ep, err = transport.NewEndpoint(url); err != nil {
			return "", nil, fmt.Errorf("parsing git url %q: %w", url, err)
		}
	}
	return url, ep, nil
}

// mirrorExists reports whether a complete mirror is at path. Mirrors are made
// in a temporary directory and renamed into place, so existence means
// complete.
func mirrorExists(path string) bool {
	fi, err := os.Stat(filepath.Join(path, "objects"))
	return err == nil && fi.IsDir()
}

// EnsureMirror makes the bare mirror of url in the cache up to date and
// returns its directory: it clones the remote's branches and tags into a new
// mirror, or fetches into an existing one. With opts.Offline it only checks
// that the mirror exists ([*NoMirrorError] otherwise).
func EnsureMirror(ctx context.Context, url string, opts Options) (string, error) {
	path, err := ensureMirror(ctx, url, opts)
	return path, scrubCredentials(err, url)
}

func ensureMirror(ctx context.Context, url string, opts Options) (string, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return "", err
	}
	url, ep, err := canonicalURL(url)
	if err != nil {
		return "", err
	}
	path := MirrorPath(opts.Cache, url)
	if opts.Offline {
		if !mirrorExists(path) {
			return "", &NoMirrorError{URL: url, Cache: opts.Cache}
		}
		return path, nil
	}
	lk, err := lockMirror(ctx, path, true)
	if err != nil {
		return "", err
	}
	defer lk.Unlock()
	if mirrorExists(path) {
		return path, fetchLocked(ctx, path, url, ep, opts)
	}
	return path, createLocked(ctx, path, url, ep, opts)
}

// Fetch updates the existing mirror of url in the cache with the remote's
// branches and tags. Branches and tags deleted on the remote are kept, so
// that a lockfile's commit stays reachable offline.
func Fetch(ctx context.Context, url string, opts Options) error {
	return scrubCredentials(fetch(ctx, url, opts), url)
}

func fetch(ctx context.Context, url string, opts Options) error {
	opts, err := opts.withDefaults()
	if err != nil {
		return err
	}
	url, ep, err := canonicalURL(url)
	if err != nil {
		return err
	}
	if opts.Offline {
		return fmt.Errorf("fetching %s: %w", url, ErrOffline)
	}
	path := MirrorPath(opts.Cache, url)
	lk, err := lockMirror(ctx, path, true)
	if err != nil {
		return err
	}
	defer lk.Unlock()
	if !mirrorExists(path) {
		return fmt.Errorf("fetching %s: no mirror at %s: %w", url, path, fs.ErrNotExist)
	}
	return fetchLocked(ctx, path, url, ep, opts)
}

// createLocked clones url into a new mirror at path. The caller holds the
// mirror's exclusive lock.
func createLocked(ctx context.Context, path, url string, ep *transport.Endpoint, opts Options) error {
	tmp := path + ".tmp"
	// A leftover from a process that died mid-clone: we hold the lock, so no
	// one else is using it.
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("creating mirror of %s: %w", url, err)
	}
	repo, err := git.PlainInit(tmp, true)
	if err != nil {
		return fmt.Errorf("creating mirror of %s: %w", url, err)
	}
	_, err = repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{url}, Fetch: mirrorRefSpecs})
	if err == nil {
		err = fetchRepo(ctx, repo, url, ep, opts)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.RemoveAll(tmp)
		return err
	}
	return nil
}

// fetchLocked fetches into the existing mirror at path. The caller holds the
// mirror's exclusive lock.
func fetchLocked(ctx context.Context, path, url string, ep *transport.Endpoint, opts Options) error {
	repo, err := git.PlainOpen(path)
	if err != nil {
		return fmt.Errorf("opening mirror %s of %s: %w", path, url, err)
	}
	return fetchRepo(ctx, repo, url, ep, opts)
}

func fetchRepo(ctx context.Context, repo *git.Repository, url string, ep *transport.Endpoint, opts Options) error {
	if err := probe(ctx, url, ep, opts.Timeout); err != nil {
		return err
	}
	var before map[string]string
	if opts.Moved != nil {
		before = peeledRefs(repo)
	}
	octx, cancel := context.WithTimeout(ctx, max(FetchTimeout, opts.Timeout))
	defer cancel()
	octx, watch := withIdle(octx, opts.Timeout)
	err := repo.FetchContext(octx, &git.FetchOptions{
		RemoteName: "origin",
		Auth:       authOf(ep),
		RefSpecs:   mirrorRefSpecs,
		Tags:       git.NoTags, // the refspecs already take every tag
		Force:      true,
	})
	if err == nil && opts.Moved != nil {
		after := peeledRefs(repo)
		names := make([]string, 0, len(before))
		for name := range before {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if n, ok := after[name]; ok && n != before[name] {
				opts.Moved(Move{URL: url, Ref: name, Old: before[name], New: n})
			}
		}
	}
	if err == nil || errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil
	}
	return networkError(ctx, octx, watch, url, ep, "fetching", err, opts.Timeout)
}

// peeledRefs returns the commit of each branch and tag of repo, annotated
// tags peeled; refs it cannot read are left out.
func peeledRefs(repo *git.Repository) map[string]string {
	out := map[string]string{}
	iter, err := repo.References()
	if err != nil {
		return out
	}
	iter.ForEach(func(r *plumbing.Reference) error {
		name := r.Name().String()
		if r.Type() != plumbing.HashReference ||
			!strings.HasPrefix(name, "refs/heads/") && !strings.HasPrefix(name, "refs/tags/") {
			return nil
		}
		h := r.Hash()
		for range 16 {
			t, err := repo.TagObject(h)
			if err != nil {
				break
			}
			h = t.Target
		}
		out[name] = h.String()
		return nil
	})
	return out
}

// listRemote returns the refs the remote advertises, with peeled annotated
// tags appended as "<name>^{}" (git ls-remote's form).
func listRemote(ctx context.Context, url string, ep *transport.Endpoint, opts Options) (map[string]string, error) {
	if err := probe(ctx, url, ep, opts.Timeout); err != nil {
		return nil, err
	}
	// A remote that answers slowly gets twice its silence bound in all.
	octx, cancel := context.WithTimeout(ctx, 2*opts.Timeout)
	defer cancel()
	octx, watch := withIdle(octx, opts.Timeout)
	rem := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{url}})
	refs, err := rem.ListContext(octx, &git.ListOptions{PeelingOption: git.AppendPeeled, Auth: authOf(ep)})
	if err != nil {
		return nil, networkError(ctx, octx, watch, url, ep, "listing refs of", err, opts.Timeout)
	}
	m := make(map[string]string, len(refs))
	for _, r := range refs {
		switch r.Type() {
		case plumbing.HashReference:
			m[r.Name().String()] = r.Hash().String()
		default: // symbolic, e.g. HEAD -> refs/heads/main
			m[r.Name().String()] = "ref: " + r.Target().String()
		}
	}
	return m, nil
}

// probe dials the remote's host (or its HTTP proxy) before a network
// operation so that an unreachable host fails fast and clearly, whatever the
// transport does with timeouts. Local remotes need no probe.
func probe(ctx context.Context, url string, ep *transport.Endpoint, timeout time.Duration) error {
	var port int
	switch ep.Protocol {
	case "https":
		port = 443
	case "http":
		port = 80
	case "ssh":
		port = 22
	case "git":
		port = 9418
	default:
		return nil
	}
	if ep.Port != 0 {
		port = ep.Port
	}
	addr := net.JoinHostPort(ep.Host, strconv.Itoa(port))
	if ep.Protocol == "http" || ep.Protocol == "https" {
		u := &neturl.URL{Scheme: ep.Protocol, Host: addr}
		if proxy, err := http.ProxyFromEnvironment(&http.Request{URL: u}); err == nil && proxy != nil {
			pport := proxy.Port()
			if pport == "" {
				pport = "80"
				if proxy.Scheme == "https" {
					pport = "443"
				}
			}
			addr = net.JoinHostPort(proxy.Hostname(), pport)
		}
	}
	d := net.Dialer{Timeout: min(ConnectTimeout, timeout)}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("reaching %s: %w", url, ctx.Err())
		}
		return &UnreachableError{URL: url, Host: ep.Host, Err: err}
	}
	conn.Close()
	return nil
}

// networkError classifies err from a go-git operation on url: the caller's
// ctx cancelled, the operation's octx past its deadline, an unreachable host,
// or anything else.
func networkError(ctx, octx context.Context, watch *idleWatch, url string, ep *transport.Endpoint, op string, err error, timeout time.Duration) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s %s: %w", op, url, ctx.Err())
	}
	if watch.silent() {
		return &TimeoutError{URL: url, Op: op, Timeout: timeout, Silent: true}
	}
	if errors.Is(octx.Err(), context.DeadlineExceeded) {
		if op == "fetching" {
			timeout = max(FetchTimeout, timeout)
		} else {
			timeout *= 2
		}
		return &TimeoutError{URL: url, Op: op, Timeout: timeout}
	}
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return fmt.Errorf("%s %s: the remote repository is empty", op, url)
	}
	if errors.Is(err, transport.ErrRepositoryNotFound) {
		return fmt.Errorf("%s %s: repository not found", op, url)
	}
	var dnsErr *net.DNSError
	var opErr *net.OpError
	if errors.As(err, &dnsErr) || errors.As(err, &opErr) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) {
		return &UnreachableError{URL: url, Host: ep.Host, Err: err}
	}
	return fmt.Errorf("%s %s: %w", op, url, err)
}

// openMirror opens the mirror at path with go-git's filesystem storage, which
// can list object hashes by prefix.
func openMirror(path string) (*git.Repository, *filesystem.Storage, error) {
	st := filesystem.NewStorage(osfs.New(path), cache.NewObjectLRUDefault())
	repo, err := git.Open(st, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("opening mirror %s: %w", path, err)
	}
	return repo, st, nil
}

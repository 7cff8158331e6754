package lock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rigorbench/rigor/internal/gguf"
	"github.com/rigorbench/rigor/internal/gitsrc"
	"github.com/rigorbench/rigor/internal/hf"
	"github.com/rigorbench/rigor/internal/spec"
)

// Inputs named by `rigor lock --update`.
const (
	InputEngine  = "engine"
	InputModel   = "model"
	InputPatches = "patches"
	InputAll     = "all"
)

// Update says which inputs to re-resolve although their request did not
// change.
type Update struct {
	Engine, Model, Patches bool
}

// ParseUpdate turns input names (engine, model, patches, all) into an
// Update; no names means all.
func ParseUpdate(names []string) (Update, error) {
	if len(names) == 0 {
		return Update{true, true, true}, nil
	}
	var u Update
	for _, n := range names {
		switch n {
		case InputEngine:
			u.Engine = true
		case InputModel:
			u.Model = true
		case InputPatches:
			u.Patches = true
		case InputAll:
			u = Update{true, true, true}
		default:
			return u, fmt.Errorf("unknown input %q: want engine, model, patches or all", n)
		}
	}
	return u, nil
}

// EndpointUnpinned is what the lock of an endpoint says of its engine.
const EndpointUnpinned = "an endpoint rigor does not start: its build and model are the server's, the lock pins neither"

// DefaultConcurrency bounds how many experiments are resolved at once.
const DefaultConcurrency = 4

// DefaultProbeTimeout bounds the connection probe made before the first
// request to the hub, so that an unreachable hub is reported at once
// instead of after the client's retries.
const DefaultProbeTimeout = 5 * time.Second

// Options configure a [Resolver]. Zero fields take the defaults.
type Options struct {
	// Root is the module root; patch and relative local paths are
	// relative to it.
	Root string
	// HF is the hub client; nil means one with the hub's defaults and no
	// credentials.
	HF *hf.Client
	// HFToken is the token the hub client sends (HF_TOKEN), used to prove
	// access to a gated repo's files. It is never written anywhere.
	HFToken string
	// HFCache is the hub cache; "" means none (offline hub models cannot
	// be resolved).
	HFCache string
	// Cache is rigor's cache (git mirrors, synthetic models, the hash
	// cache); it must be set (internal/cli reads RIGOR_CACHE).
	Cache string
	// GitTimeout bounds each git network operation; 0 means gitsrc's
	// default.
	GitTimeout time.Duration
	// Offline forbids the network: the hub cache, the git mirrors and
	// npm's cache stand in. The hub client's own offline mode
	// (HF_HUB_OFFLINE) has the same effect for the hub.
	Offline bool
	// NPM is the npm program; "" means "npm" on PATH.
	NPM string
	// NPMTimeout bounds each npm call; 0 means one minute.
	NPMTimeout time.Duration
	// Platform is the node-llama-cpp platform package suffix, e.g.
	// "linux-x64"; "" means the platform rigor runs on.
	Platform string
	// Concurrency bounds how many experiments are resolved at once;
	// 0 means [DefaultConcurrency].
	Concurrency int
	// ProbeTimeout bounds the hub connection probe; 0 means
	// [DefaultProbeTimeout].
	ProbeTimeout time.Duration
	// Update names inputs to re-resolve although their request did not
	// change.
	Update Update
	// Progress, when set, receives hashing progress (see [Hasher]).
	Progress func(done, total int64)
	// Archive, when set, stands in for an upstream that is gone or cannot
	// be reached (or, offline, for a cache that misses): the pin it holds
	// of the request is locked instead, and said ([LockResult.FromArchive]).
	Archive Archive
}

// Resolver resolves experiments' inputs. Identical requests of several
// experiments (a model they share, say) are resolved once. It is safe for
// concurrent use.
type Resolver struct {
	opts    Options
	err     error // a configuration error every method returns
	hf      *hf.Client
	hfCache string
	hasher  *Hasher

	mu       sync.Mutex
	memo     map[string]*call
	archived []FromArchive // inputs the archive stood in for

	moved moved
}

type call struct {
	done chan struct{}
	val  any
	err  error
}

// NewResolver returns a resolver configured by opts.
func NewResolver(opts Options) *Resolver {
	r := &Resolver{opts: opts, memo: map[string]*call{}}
	if r.opts.Cache == "" {
		r.err = errors.New("locking: no cache directory (Options.Cache is empty)")
	}
	r.hf = opts.HF
	if r.hf == nil {
		r.hf = hf.NewClient(hf.ClientOptions{})
	}
	r.hfCache = opts.HFCache
	if r.opts.Concurrency <= 0 {
		r.opts.Concurrency = DefaultConcurrency
	}
	if r.opts.ProbeTimeout <= 0 {
		r.opts.ProbeTimeout = DefaultProbeTimeout
	}
	if r.opts.NPM == "" {
		r.opts.NPM = "npm"
	}
	if r.opts.NPMTimeout <= 0 {
		r.opts.NPMTimeout = time.Minute
	}
	if r.opts.Platform == "" {
		r.opts.Platform = nodePlatform(runtime.GOOS, runtime.GOARCH)
	}
	r.hasher = &Hasher{Cache: r.opts.Cache, Progress: opts.Progress}
	return r
}

// once runs fn once per key and shares its result.
func (r *Resolver) once(key string, fn func() (any, error)) (any, error) {
	r.mu.Lock()
	c, ok := r.memo[key]
	if !ok {
		c = &call{done: make(chan struct{})}
		r.memo[key] = c
		r.mu.Unlock()
		c.val, c.err = fn()
		close(c.done)
	} else {
		r.mu.Unlock()
		<-c.done
	}
	return c.val, c.err
}

// InputError is the failure to resolve one input of one experiment.
type InputError struct {
	// ID is the experiment.
	ID string
	// Input is "engine", "patches" or "model".
	Input string
	Err   error
}

// Error returns "id: input: error".
func (e *InputError) Error() string { return e.ID + ": " + e.Input + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *InputError) Unwrap() error { return e.Err }

// Hint returns the hint of the cause, if it has one.
func (e *InputError) Hint() string {
	var h interface{ Hint() string }
	if errors.As(e.Err, &h) {
		return h.Hint()
	}
	var (
		amb *gitsrc.AmbiguousError
		ref *gitsrc.RefNotFoundError
		unr *gitsrc.UnreachableError
		tmo *gitsrc.TimeoutError
		pe  *gitsrc.PatchError
		nm  *gitsrc.NoMirrorError
	)
	switch {
	case errors.As(e.Err, &amb):
		return "write more digits of the commit, or all 40"
	case errors.As(e.Err, &ref):
		return "list the remote's branches and tags with 'git ls-remote " + ref.URL + "'"
	case errors.As(e.Err, &unr), errors.As(e.Err, &tmo):
		return "check the network and the engine's git URL; with a git mirror in the cache, 'rigor lock --offline' works without it"
	case errors.As(e.Err, &pe):
		return "regenerate the patch against the locked commit, or pin the commit it was made for"
	case errors.As(e.Err, &nm):
		return "run 'rigor lock' once with the network to fill the cache"
	}
	return ""
}

// Resolve locks the inputs of x. An input whose request equals the one in
// old (and is not named in Options.Update) keeps its pin; local files are
// hashed again (cheaply, through the stat cache). The errors of every
// input that failed are returned joined, each an *[InputError].
func (r *Resolver) Resolve(ctx context.Context, x *spec.Experiment, old *Entry) (*Entry, error) {
	if r.err != nil {
		return nil, r.err
	}
	if x.Broken || len(x.Points) == 0 {
		return nil, &InputError{ID: x.ID, Input: "spec", Err: errors.New("the experiment has errors; run 'rigor vet'")}
	}
	e := &Entry{SpecDigest: SpecDigest(x)}
	var oldEngine *EngineLock
	var oldModel *ModelLock
	if old != nil {
		oldEngine, oldModel = &old.Engine, &old.Model
	}
	var oldCorpus *CorpusLock
	if old != nil {
		oldCorpus = old.Corpus
	}
	var engErr, modErr, corpErr error
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); e.Engine, engErr = r.engine(ctx, x, oldEngine) }()
	go func() { defer wg.Done(); e.Model, modErr = r.model(ctx, x, oldModel) }()
	go func() { defer wg.Done(); e.Corpus, corpErr = r.lockCorpus(ctx, x, oldCorpus) }()
	wg.Wait()
	if err := errors.Join(engErr, modErr, corpErr); err != nil {
		return nil, err
	}
	return e, nil
}

// engine locks the engine of x.
func (r *Resolver) engine(ctx context.Context, x *spec.Experiment, old *EngineLock) (EngineLock, error) {
	s := x.Spec.Engine
	src := s.Source
	req := requestOf(src)
	el := EngineLock{Family: s.Family, Requested: req}
	keep := old != nil && old.Family == s.Family && old.Requested == req && !r.opts.Update.Engine
	fail := func(input string, err error) (EngineLock, error) {
		return EngineLock{}, &InputError{ID: x.ID, Input: input, Err: err}
	}
	if len(s.Patches) > 0 && src.Kind() != "git" {
		return fail(InputPatches, fmt.Errorf("patches need a git source, not %s", src.Kind()))
	}
	switch src.Kind() {
	case "git":
		if keep && old.Commit != "" {
			el.Commit, el.Kind = old.Commit, old.Kind
		} else {
			res, err := r.gitPin(ctx, x.ID, src.Git, src.Ref)
			if err != nil {
				return fail(InputEngine, err)
			}
			el.Commit, el.Kind = res.Commit, res.Kind
		}
		patches, err := r.hashPatches(s.Patches)
		if err != nil {
			return fail(InputPatches, err)
		}
		el.Patches = patches
		proven := keep && el.Commit == old.Commit && reflect.DeepEqual(old.Patches, patches) && !r.opts.Update.Patches
		if len(patches) > 0 && !proven {
			if err := r.checkPatches(ctx, src.Git, el.Commit, patches); err != nil {
				return fail(InputPatches, err)
			}
		}
	case "npm":
		if keep && old.NPM != nil {
			el.NPM, el.Version = old.NPM, old.Version
			break
		}
		n, err := r.npmResolve(ctx, s)
		if err != nil {
			p, aerr := r.fromArchive(ctx, x.ID, InputEngine, NodeLlamaPackage+"@"+s.Source.NPM, NPMKey(NodeLlamaPackage, s.Source.NPM, r.npmPlatform(s)), err)
			if aerr != nil {
				return fail(InputEngine, aerr)
			}
			n = p.NPM
		}
		el.NPM, el.Version = n, n.Version
	case "path":
		files, shown, err := r.prebuilt(src.Path)
		if err != nil {
			return fail(InputEngine, err)
		}
		bins, err := r.hashFiles(ctx, files, shown)
		if err != nil {
			return fail(InputEngine, err)
		}
		el.Binaries = bins
	case "python":
		py, err := r.python(src.Python)
		if err != nil {
			return fail(InputEngine, err)
		}
		bins, err := r.hashFiles(ctx, []string{py}, []string{py})
		if err != nil {
			return fail(InputEngine, err)
		}
		el.Binaries = bins
	case "url":
		// A server rigor did not start: there is nothing to resolve
		// (lock needs neither the server nor its key), and nothing to
		// pin. The spec refused credentials in the URL.
		el.Unpinned = EndpointUnpinned
	default:
		return fail(InputEngine, errors.New("the engine has no source (git, npm, python, path or url)"))
	}
	return el, nil
}

// abs makes a path of the experiment absolute against the module root.
func (r *Resolver) abs(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(r.opts.Root, filepath.FromSlash(p))
}

// gitURL turns a git source as written into what gitsrc takes: URLs stay,
// relative local paths become absolute.
func (r *Resolver) gitURL(u string) string {
	if strings.Contains(u, "://") || strings.HasPrefix(u, "git@") || filepath.IsAbs(u) {
		return u
	}
	return r.abs(u)
}

func (r *Resolver) gitOptions() gitsrc.Options {
	return gitsrc.Options{Cache: r.opts.Cache, Offline: r.opts.Offline, Timeout: r.opts.GitTimeout, Moved: r.moved.add}
}

// gitPin resolves a git ref of the engine of experiment id upstream, or
// from the archive when upstream is gone.
func (r *Resolver) gitPin(ctx context.Context, id, src, ref string) (gitsrc.Resolution, error) {
	res, err := r.gitResolve(ctx, src, ref)
	if err == nil {
		return res, nil
	}
	what := gitsrc.StripUserinfo(src) + "@" + ref
	if ref == "" {
		what = gitsrc.StripUserinfo(src)
	}
	p, err := r.fromArchive(ctx, id, InputEngine, what, GitKey(src, ref), err)
	if err != nil {
		return gitsrc.Resolution{}, err
	}
	return gitsrc.Resolution{Commit: p.Commit, Kind: p.Kind, Ref: ref}, nil
}

func (r *Resolver) gitResolve(ctx context.Context, src, ref string) (gitsrc.Resolution, error) {
	v, err := r.once("git\x00"+src+"\x00"+ref, func() (any, error) {
		if ref == "" {
			ref = "HEAD"
		}
		return gitsrc.Resolve(ctx, r.gitURL(src), ref, r.gitOptions())
	})
	if err != nil {
		return gitsrc.Resolution{}, err
	}
	return v.(gitsrc.Resolution), nil
}

// hashPatches hashes the patch files, refusing files outside the module
// and files that hold no hunk.
func (r *Resolver) hashPatches(patches []string) ([]PatchLock, error) {
	var out []PatchLock
	for _, p := range patches {
		clean := path.Clean(filepath.ToSlash(p))
		if filepath.IsAbs(p) || clean == ".." || strings.HasPrefix(clean, "../") {
			return nil, fmt.Errorf("patch %s is outside the module: patches are paths relative to the module root", p)
		}
		b, err := os.ReadFile(r.abs(p))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("patch %s does not exist", p)
		}
		if err != nil {
			return nil, fmt.Errorf("patch %s: %w", p, err)
		}
		if !hasHunk(b) {
			return nil, fmt.Errorf("patch %s holds no hunks", p)
		}
		sum, size, _ := hashBytes(b)
		out = append(out, PatchLock{Path: p, SHA256: sum, Size: size})
	}
	return out, nil
}

// hasHunk reports whether a patch holds at least one hunk (or a binary
// patch, or a pure rename or mode change that git applies).
func hasHunk(b []byte) bool {
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "@@ -") || strings.HasPrefix(line, "GIT binary patch") ||
			strings.HasPrefix(line, "rename from ") || strings.HasPrefix(line, "new mode ") {
			return true
		}
	}
	return false
}

// checkPatches proves the patches apply strictly at commit, in a scratch
// checkout from the mirror of src.
func (r *Resolver) checkPatches(ctx context.Context, src, commit string, patches []PatchLock) error {
	key := "patches\x00" + src + "\x00" + commit
	abs := make([]string, len(patches))
	for i, p := range patches {
		key += "\x00" + p.Path + "\x00" + p.SHA256
		abs[i] = r.abs(p.Path)
	}
	_, err := r.once(key, func() (any, error) {
		u := r.gitURL(src)
		// Resolving the full commit makes sure the mirror holds it; when
		// the remote is gone, the archive's source may bring it.
		if _, err := gitsrc.Resolve(ctx, u, commit, r.gitOptions()); err != nil {
			ok, aerr := r.restoreSource(ctx, u, commit, err)
			if aerr != nil {
				return nil, aerr
			}
			if !ok {
				return nil, err
			}
		}
		mirror := gitsrc.MirrorPath(r.opts.Cache, u)
		_, err := gitsrc.CheckPatches(ctx, mirror, commit, abs)
		var pe *gitsrc.PatchError
		if errors.As(err, &pe) {
			c := *pe
			for i, a := range abs {
				if c.Patch == a {
					c.Patch = patches[i].Path
				}
			}
			return nil, &c
		}
		if err != nil {
			for i, a := range abs {
				err = replaceErr(err, a, patches[i].Path)
			}
		}
		return nil, err
	})
	return err
}

// replaceErr rewrites absolute paths in an error message.
func replaceErr(err error, old, new string) error {
	if !strings.Contains(err.Error(), old) {
		return err
	}
	return &rewritten{msg: strings.ReplaceAll(err.Error(), old, new), err: err}
}

type rewritten struct {
	msg string
	err error
}

func (e *rewritten) Error() string { return e.msg }
func (e *rewritten) Unwrap() error { return e.err }

// prebuilt lists the files of a path source: the regular files of a
// directory, a file, or an executable found on PATH. It returns their
// absolute paths and the paths a lock shows: relative to the module root
// as the experiment wrote them, absolute for what PATH found.
func (r *Resolver) prebuilt(p string) (files, shown []string, err error) {
	if !strings.ContainsRune(p, '/') && !strings.ContainsRune(p, filepath.Separator) {
		if _, err := os.Stat(r.abs(p)); err != nil {
			exe, err := lookPath(p)
			if err != nil {
				return nil, nil, fmt.Errorf("engine executable %q is not on PATH", p)
			}
			exe, err = filepath.Abs(exe)
			if err != nil {
				return nil, nil, err
			}
			return []string{exe}, []string{exe}, nil
		}
	}
	a := r.abs(p)
	fi, err := os.Stat(a)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("engine path %s does not exist", p)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("engine path %s: %w", p, err)
	}
	if !fi.IsDir() {
		return []string{a}, []string{p}, nil
	}
	ents, err := os.ReadDir(a)
	if err != nil {
		return nil, nil, fmt.Errorf("engine path %s: %w", p, err)
	}
	for _, d := range ents {
		full := filepath.Join(a, d.Name())
		if st, err := os.Stat(full); err == nil && st.Mode().IsRegular() && !strings.HasPrefix(d.Name(), ".") {
			files = append(files, full)
			shown = append(shown, path.Join(filepath.ToSlash(p), d.Name()))
		}
	}
	if len(files) == 0 {
		return nil, nil, fmt.Errorf("engine path %s holds no files", p)
	}
	return files, shown, nil
}

// python finds the interpreter of a python source: an interpreter path or
// name, or a virtual environment directory.
func (r *Resolver) python(p string) (string, error) {
	if !strings.ContainsRune(p, '/') {
		exe, err := lookPath(p)
		if err != nil {
			return "", fmt.Errorf("python interpreter %q is not on PATH", p)
		}
		return exe, nil
	}
	a := r.abs(p)
	fi, err := os.Stat(a)
	if err != nil {
		return "", fmt.Errorf("python %s: %w", p, err)
	}
	if fi.IsDir() {
		a = filepath.Join(a, "bin", "python")
		if _, err := os.Stat(a); err != nil {
			return "", fmt.Errorf("python %s: not a virtual environment (no bin/python)", p)
		}
	}
	return filepath.EvalSymlinks(a)
}

// hashFiles hashes files (absolute) and names them as shown.
func (r *Resolver) hashFiles(ctx context.Context, files, shown []string) ([]FileLock, error) {
	hs, err := r.hasher.Hash(ctx, files)
	if err != nil {
		return nil, err
	}
	out := make([]FileLock, len(hs))
	for i, h := range hs {
		out[i] = FileLock{Path: filepath.ToSlash(shown[i]), Size: h.Size, SHA256: h.SHA256, GGUF: ggufFacts(files[i])}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// ggufFacts reads the header facts of a .gguf file, or returns nil.
func ggufFacts(p string) map[string]any {
	if !strings.HasSuffix(strings.ToLower(p), ".gguf") {
		return nil
	}
	f, err := gguf.ReadFile(p)
	if err != nil {
		return nil
	}
	return normalize(f.Facts().Map())
}

// ggufFactsFrom reads the header facts of a GGUF stream of size bytes,
// or returns nil when it is not GGUF.
func ggufFactsFrom(r io.Reader, size int64) map[string]any {
	f, err := gguf.ReadWith(r, gguf.ReadOptions{Size: size})
	if err != nil {
		return nil
	}
	return normalize(f.Facts().Map())
}

// normalize round-trips a map through JSON (numbers as json.Number), so a
// fresh entry equals one read back from a lockfile.
func normalize(m map[string]any) map[string]any {
	b, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var out map[string]any
	if dec.Decode(&out) != nil {
		return nil
	}
	return out
}

// probeHub dials the hub once per run so an unreachable hub fails at once
// rather than after the client's retries.
func (r *Resolver) probeHub(ctx context.Context) error {
	_, err := r.once("probe\x00"+r.hf.Endpoint(), func() (any, error) {
		u, err := url.Parse(r.hf.Endpoint())
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("HF_ENDPOINT %q is not a URL", r.hf.Endpoint())
		}
		host := u.Host
		if u.Port() == "" {
			if u.Scheme == "http" {
				host = net.JoinHostPort(u.Hostname(), "80")
			} else {
				host = net.JoinHostPort(u.Hostname(), "443")
			}
		}
		d := net.Dialer{Timeout: r.opts.ProbeTimeout}
		c, err := d.DialContext(ctx, "tcp", host)
		if err != nil {
			return nil, &hf.UnreachableError{Endpoint: r.hf.Endpoint(), Attempts: 1, Err: err}
		}
		c.Close()
		return nil, nil
	})
	return err
}

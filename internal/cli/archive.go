package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rigorbench/rigor/internal/archive"
	"github.com/rigorbench/rigor/internal/buildcache"
	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/gitsrc"
	"github.com/rigorbench/rigor/internal/hf"
	"github.com/rigorbench/rigor/internal/lock"
	"github.com/rigorbench/rigor/internal/run"
	"github.com/rigorbench/rigor/internal/spec"
)

type archiveCmd struct {
	Push  archivePushCmd  `cmd:"" help:"Archive every input the locks of experiments pin (model files, the engine install or build) into the OCI archive."`
	Pull  archivePullCmd  `cmd:"" help:"Bring the archived inputs of locked experiments into this machine's caches, verified against the lock."`
	Check archiveCheckCmd `cmd:"" help:"Say what of each lock the archive holds and what it lacks."`
}

func (archiveCmd) Help() string {
	return `The archive is one repository of any OCI registry (distribution, zot,
Harbor, GHCR, Docker Hub), addressed as oci://host[:port]/repository and
given with --archive or RIGOR_ARCHIVE. Credentials come from the docker
credential store (docker login; ~/.docker/config.json, or DOCKER_CONFIG),
never from the address. A registry on this machine's loopback is spoken to
over plain HTTP.

Each input is an artifact under a tag derived from what the lock pins,
its layers content-addressed by the sha256 the lock or the build recorded:
model-<sha256> (a model file, a GGUF with Docker Model Runner's media
types, or a hub corpus),
build-<build id> (a build cache entry), install-<key> (an npm engine
install), source-<commit> (the engine's git source), and pin-<sha256> (what
a request, a git ref, a hub revision, a hub corpus or an npm range,
resolved to: 'rigor lock' takes it when upstream is gone). What the registry holds is not sent
again.

Once pushed, 'rigor build' and 'rigor run' with the same --archive take a
build or install from the archive before building or installing (the build
id is the key; every binary is checked against the hashes its build
recorded), and the record says "from": "archive".

Examples:
  rigor archive push example/smoke --archive oci://registry.lab:5000/rigor  # needs an OCI registry: --archive or RIGOR_ARCHIVE
  RIGOR_ARCHIVE=oci://registry.lab:5000/rigor rigor archive check --json  # needs an OCI registry: --archive or RIGOR_ARCHIVE
  rigor archive pull example/smoke  # needs an OCI registry: --archive or RIGOR_ARCHIVE`
}

type archivePushCmd struct {
	IDs []string `arg:"" optional:"" name:"id" help:"Experiment ids (default: every locked experiment of the module)."`
}

type archivePullCmd struct {
	IDs []string `arg:"" optional:"" name:"id" help:"Experiment ids (default: every locked experiment of the module)."`
}

type archiveCheckCmd struct {
	IDs  []string `arg:"" optional:"" name:"id" help:"Experiment ids (default: every locked experiment of the module)."`
	JSON bool     `help:"Print what is archived as JSON."`
}

// openArchive opens the archive the configuration names; required says
// whether none is an error (the archive verbs) or nil (build, run).
func (e *env) openArchive(required bool) (*archive.Archive, error) {
	c := e.cfg()
	url, from := c.Archive, c.ArchiveFrom
	if url == "" {
		if root, err := spec.FindRoot(e.wd); err == nil {
			if url, err = moduleArchive(root); err != nil {
				return nil, err
			}
			from = moduleSettingsFile + " archive"
		}
	} else {
		e.sayOverride(url, from)
	}
	if url == "" {
		if required {
			return nil, withHint(errors.New("no archive is set"), "give one with --archive oci://host[:port]/repository or RIGOR_ARCHIVE, or set archive: \"oci://…\" in the module's rigor.cue")
		}
		return nil, nil
	}
	addr, err := archive.ParseAddress(url)
	if err != nil {
		return nil, withHint(fmt.Errorf("%s: %w", from, err), "write it as oci://host[:port]/repository; log in with docker login")
	}
	a, err := archive.Open(addr, archive.Options{DockerConfig: c.DockerConfig, StateDir: filepath.Join(c.Cache, "archive-uploads")})
	if err != nil {
		return nil, err
	}
	a.Resumed = func(what string, off, size int64) {
		if off < 0 {
			fmt.Fprintf(e.stderr, "rigor: %s: the registry no longer holds the interrupted upload: sending it again from the start\n", what)
			return
		}
		fmt.Fprintf(e.stderr, "rigor: %s: resuming the interrupted upload at byte %d of %d (%s left)\n", what, off, size, humanBytes(size-off))
	}
	return a, nil
}

// sayOverride says when --archive or RIGOR_ARCHIVE names another archive
// than the module's rigor.cue: the override wins, and the user should
// know that the committed setting is not the one in use. A rigor.cue that
// cannot be read is not this call's error (the override does not need it).
func (e *env) sayOverride(url, from string) {
	root, err := spec.FindRoot(e.wd)
	if err != nil {
		return
	}
	if m, err := moduleArchive(root); err == nil && m != "" && m != url {
		fmt.Fprintf(e.stderr, "rigor: archive %s (%s), not %s's %s\n", url, from, moduleSettingsFile, m)
	}
}

// withArchive returns ctx carrying the archive as the substituter of
// builds and installs, when one is set. Offline, only an archive on this
// machine's loopback is used.
func (e *env) withArchive(ctx context.Context, offline bool, say func(string)) (context.Context, error) {
	a, err := e.openArchive(false)
	if err != nil || a == nil {
		return ctx, err
	}
	if offline && !a.Addr.Loopback() {
		say(fmt.Sprintf("offline: the archive %s is not on this machine's loopback, so it is not used", a.Addr))
		return ctx, nil
	}
	s := &archive.Substituter{A: a, TmpDir: e.cfg().Cache, Warn: func(m string) { say("warning: " + m) },
		Fetching: func(kind, key string) {
			if kind == "model" && strings.HasPrefix(key, "corpus ") {
				say(fmt.Sprintf("fetching %s from the archive %s", key, a.Addr))
				return
			}
			if kind == "model" {
				say(fmt.Sprintf("fetching model file %s from the archive %s", key, a.Addr))
				return
			}
			say(fmt.Sprintf("fetching %s %.12s from the archive %s", kind, key, a.Addr))
		}}
	if err := os.MkdirAll(s.TmpDir, 0o755); err != nil {
		return ctx, err
	}
	return gitsrc.WithSourceArchive(buildcache.WithSubstituter(ctx, s), s), nil
}

// The archive brings model files to a run too.
var _ run.ModelSubstituter = (*archive.Substituter)(nil)

// archiveItem is one input of a lock, as push, pull and check see it.
type archiveItem struct {
	ID   string `json:"id"`
	Kind string `json:"kind"` // model, build, install
	// What names the input: a model file's path, an engine's family and version.
	What string `json:"what"`
	Tag  string `json:"tag,omitempty"`
	// Archived says whether the archive holds it; Note why it cannot be
	// told or archived.
	Archived bool   `json:"archived"`
	Size     int64  `json:"size,omitempty"`
	SHA256   string `json:"sha256,omitempty"`
	Note     string `json:"note,omitempty"`
	// Differs says what of the artifact under the tag is not what the
	// lock pins (a model file's layer of other bytes): not archived.
	Differs string `json:"differs,omitempty"`
	// Outside is an input the archive does not keep (a prebuilt engine
	// directory, an endpoint): not counted as missing.
	Outside bool `json:"outside,omitempty"`
	path    string
	// blob is where a hub file's bytes go in the Hugging Face cache (path
	// is the snapshot's link to it); empty for any other file.
	blob    string
	key     string // a build id or install key
	patches []archive.SourceFile
}

// archiveExperiments are the locked experiments ids name, or every locked
// one of the module.
func (e *env) archiveExperiments(ids []string, missingOK bool) ([]*archiveTarget, error) {
	if len(ids) == 0 {
		set, err := e.loadSet(nil)
		if err != nil {
			return nil, err
		}
		for _, x := range set.Experiments {
			if f, err := lock.Read(set.Root, x.Package); err == nil && f.Experiments[x.ID] != nil {
				ids = append(ids, x.ID)
			} else {
				fmt.Fprintf(e.stderr, "rigor: %s is not locked: left out (rigor lock %s)\n", x.ID, x.ID)
			}
		}
		if len(ids) == 0 {
			return nil, withHint(errors.New("no experiment of this module is locked"), "run 'rigor lock' first")
		}
	}
	var out []*archiveTarget
	for _, id := range ids {
		set, x, _, entry, err := e.lockedExperimentStale(id, false, missingOK)
		if err != nil {
			return nil, err
		}
		out = append(out, &archiveTarget{root: set.Root, x: x, entry: entry})
	}
	return out, nil
}

type archiveTarget struct {
	root  string
	x     *spec.Experiment
	entry *lock.Entry
}

// modelItems are the model files of a lock that carry a sha256, with
// where this machine keeps them.
func (e *env) modelItems(t *archiveTarget) []*archiveItem {
	m := t.entry.Model
	c := e.cfg()
	var items []*archiveItem
	switch {
	case m.Synthetic != nil:
		items = append(items, &archiveItem{ID: t.x.ID, Kind: "model", What: "synthetic model", SHA256: m.Synthetic.SHA256, Size: m.Synthetic.Size,
			path: lock.SyntheticPath(c.Cache, m.Synthetic.SHA256)})
	case m.Requested.HF != "" && m.Requested.Path == "":
		for _, f := range m.Files {
			it := &archiveItem{ID: t.x.ID, Kind: "model", What: m.Requested.HF + "/" + f.Path, SHA256: f.SHA256, Size: f.Size,
				path: hf.SnapshotPath(c.HFCache, m.Requested.HF, m.Commit, f.Path),
				blob: hf.BlobPath(c.HFCache, m.Requested.HF, hf.FileInfo{SHA256: f.SHA256, LFS: true})}
			if f.SHA256 == "" {
				it.Note = "the lock holds no sha256 of this small git file: not archived"
			}
			items = append(items, it)
		}
	case m.Requested.Path != "":
		for _, f := range m.Files {
			items = append(items, &archiveItem{ID: t.x.ID, Kind: "model", What: f.Path, SHA256: f.SHA256, Size: f.Size,
				path: filepath.Join(t.root, filepath.FromSlash(f.Path))})
		}
	}
	for _, it := range items {
		if it.SHA256 != "" {
			it.Tag = archive.ModelTag(it.SHA256)
		}
	}
	return items
}

// fileItems are the model files of a lock that carry a sha256 and its hub
// corpus, if any.
func (e *env) fileItems(t *archiveTarget) []*archiveItem {
	items := e.modelItems(t)
	if it := e.corpusItem(t); it != nil {
		items = append(items, it)
	}
	return items
}

// corpusItem is the hub corpus a lock pins (quality.measure.corpus), nil
// for none or a corpus of the module. It is archived as a hub model file
// is, content-addressed: model-<sha256>.
func (e *env) corpusItem(t *archiveTarget) *archiveItem {
	cl := t.entry.Corpus
	if cl == nil || cl.HF == "" || cl.Commit == "" || cl.SHA256 == "" {
		return nil
	}
	c := e.cfg()
	return &archiveItem{ID: t.x.ID, Kind: "corpus", What: "corpus " + cl.HF + "/" + cl.Path, SHA256: cl.SHA256, Size: cl.Size,
		Tag: archive.ModelTag(cl.SHA256), path: hf.SnapshotPath(c.HFCache, cl.HF, cl.Commit, cl.Path),
		blob: hf.BlobPath(c.HFCache, cl.HF, hf.FileInfo{SHA256: cl.SHA256, BlobID: cl.BlobID, LFS: cl.BlobID == ""})}
}

// engineItem describes the prepared engine of a lock as an archive item:
// a build cache entry or an engine install, by its key; nil for a
// prebuilt directory or an endpoint.
func (e *env) engineItem(t *archiveTarget, p *engine.Prepared) *archiveItem {
	if p == nil || p.Engine.BuildID == "" || p.Engine.BuildID == "prebuilt" || p.Engine.Unpinned != "" {
		return nil
	}
	key := p.Engine.BuildID
	it := &archiveItem{ID: t.x.ID, What: engineLabel(t.x, t.entry)}
	if ent, err := e.buildCache().Lookup(key); err == nil {
		it.Kind, it.path = archive.KindBuild, ent.Dir
	} else if filepath.Base(p.BinDir) == key {
		it.Kind, it.path = archive.KindInstall, p.BinDir
	} else {
		return nil
	}
	it.Tag, it.key = archive.Tag(it.Kind, key), key
	return it
}

// installItem is the install a build was made from, which a rerun needs
// beside the build (node-llama-cpp's localBuild), as an archive item;
// nil when the build needs none.
func installItem(t *archiveTarget, p *engine.Prepared) *archiveItem {
	if p == nil || p.InstallDir == "" {
		return nil
	}
	key := filepath.Base(p.InstallDir)
	return &archiveItem{ID: t.x.ID, Kind: archive.KindInstall, What: engineLabel(t.x, t.entry) + " (the install its build was made from)",
		Tag: archive.Tag(archive.KindInstall, key), key: key, path: p.InstallDir}
}

// sourceItem describes the git source of a lock's engine as an archive
// item: the locked commit (a bundle made from this machine's mirror) and
// the patches by the sha256 the lock holds; nil when the engine is not
// built from git.
func (e *env) sourceItem(t *archiveTarget) *archiveItem {
	eng := t.entry.Engine
	if eng.Requested.Git == "" || eng.Commit == "" {
		return nil
	}
	what := fmt.Sprintf("%s at %.12s", gitsrc.StripUserinfo(eng.Requested.Git), eng.Commit)
	if n := len(eng.Patches); n > 0 {
		what += fmt.Sprintf(" + %d %s", n, plural(n, "patch", "patches"))
	}
	return &archiveItem{ID: t.x.ID, Kind: archive.KindSource, What: what, Tag: archive.SourceTag(eng.Commit),
		path: gitsrc.MirrorFor(e.cfg().Cache, sourceURL(t))}
}

// sourceURL is the engine's git source as a build fetches it: the
// experiment's URL (which may carry credentials) or the lock's, a local
// path made absolute against the module root.
func sourceURL(t *archiveTarget) string {
	url := t.x.Spec.Engine.Source.Git
	if url == "" {
		url = t.entry.Engine.Requested.Git
	}
	if !strings.Contains(url, "://") && !strings.HasPrefix(url, "git@") && !filepath.IsAbs(url) {
		url = filepath.Join(t.root, filepath.FromSlash(url))
	}
	return url
}

// sourcePatches are the lock's patches with where the module keeps them.
func sourcePatches(t *archiveTarget) []archive.SourceFile {
	var out []archive.SourceFile
	for _, p := range t.entry.Engine.Patches {
		out = append(out, archive.SourceFile{Path: p.Path, SHA256: p.SHA256, Size: p.Size, File: filepath.Join(t.root, filepath.FromSlash(p.Path))})
	}
	return out
}

// archiveSession is what push, pull and check start from: the archive
// (required), the experiments' targets, and a context that an interrupt
// cancels, in which the registry answered a ping. stop releases the
// signal handler.
type archiveSession struct {
	a       *archive.Archive
	targets []*archiveTarget
	ctx     context.Context
	stop    context.CancelFunc
}

// interrupted makes err, when Ctrl-C or SIGTERM stopped the session, an
// interruption (exit 130, as rigor build's) with hint, not a failure
// that ends in "context canceled".
func (s *archiveSession) interrupted(err error, hint string) error {
	if err == nil || s.ctx.Err() == nil {
		return err
	}
	var h *hintError
	if errors.As(err, &h) {
		err = h.err
	}
	return withHint(&interruptedError{err}, hint)
}

// startArchive opens the archive, reads the experiments (missingOK: a
// lock stale only because its local model files are missing is accepted,
// for pull and check) and pings the registry.
func (e *env) startArchive(ids []string, missingOK bool) (*archiveSession, error) {
	a, err := e.openArchive(true)
	if err != nil {
		return nil, err
	}
	ts, err := e.archiveExperiments(ids, missingOK)
	if err != nil {
		return nil, err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if err := a.Ping(ctx); err != nil {
		stop()
		return nil, archiveError(err)
	}
	return &archiveSession{a: a, targets: ts, ctx: ctx, stop: stop}, nil
}

func (c *archivePushCmd) Run(e *env) (err error) {
	s, err := e.startArchive(c.IDs, false)
	if err != nil {
		return err
	}
	defer s.stop()
	defer func() {
		err = s.interrupted(err, "run 'rigor archive push' again: what the registry holds is not sent again, and a model file's upload resumes from the last chunk it acknowledged")
	}()
	a, ts, ctx := s.a, s.targets, s.ctx
	var sent, had int
	var bytes int64
	start := time.Now()
	for _, t := range ts {
		// The engine as the lock pins it: built or installed now if this
		// machine does not have it yet (an archive holds what ran).
		r := e.runner(t.root)
		prog := newPrepareProgress(e.stderr, engineLabel(t.x, t.entry))
		pctx := prog.attach(ctx, r)
		prog.run()
		p, err := r.PrepareEngine(pctx, t.x, t.entry)
		prog.close()
		if err != nil {
			return explain(err, t.x.ID)
		}
		var installs []string
		if it := e.engineItem(t, p); it != nil {
			// A build made from an install (node-llama-cpp's localBuild)
			// needs the install too: it is archived first.
			for _, it := range []*archiveItem{installItem(t, p), it} {
				if it == nil {
					continue
				}
				if it.Kind == archive.KindInstall {
					installs = append(installs, it.Tag)
				}
				bar := newByteProgress(e.stderr, fmt.Sprintf("%s %s", it.Kind, it.What), 0)
				ok, n, err := a.PushDir(ctx, it.Kind, it.key, it.path, markerOf(it.Kind, it.path), e.cfg().Cache, bar.update)
				bar.done()
				if err != nil {
					return archiveError(err)
				}
				e.pushed(it, ok, n, &sent, &had, &bytes)
			}
		} else {
			fmt.Fprintf(e.stderr, "rigor: %s: the engine is %s: nothing of it to archive\n", t.x.ID, engineNothing(p))
		}
		if it := e.sourceItem(t); it != nil {
			if err := e.pushSource(ctx, a, t, it, &sent, &had, &bytes); err != nil {
				return err
			}
		}
		for _, it := range e.fileItems(t) {
			if it.SHA256 == "" {
				fmt.Fprintf(e.stderr, "rigor: %s: %s: %s\n", t.x.ID, it.What, it.Note)
				continue
			}
			if _, err := os.Stat(it.path); err != nil {
				if it.What == "synthetic model" {
					fmt.Fprintf(e.stderr, "rigor: %s: the synthetic model is not written yet (rigor writes it again from the lock): not archived\n", t.x.ID)
					continue
				}
				if it.Kind == "corpus" {
					return withHint(fmt.Errorf("%s: the %s is not on this machine (%s)", t.x.ID, it.What, it.path), "run 'rigor run "+t.x.ID+"' first: it downloads the corpus")
				}
				return withHint(fmt.Errorf("%s: model file %s is not on this machine (%s)", t.x.ID, it.What, it.path), "run 'rigor pull "+t.x.ID+"' first")
			}
			bar := newByteProgress(e.stderr, "model "+it.What, it.Size)
			ok, err := a.PushModelFile(ctx, it.What, it.path, it.SHA256, it.Size, archArch(t.entry), bar.update)
			bar.done()
			if err != nil {
				return archiveError(err)
			}
			e.pushed(it, ok, it.Size, &sent, &had, &bytes)
		}
		if err := e.pushPins(ctx, a, t, installs, &sent, &had); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.stderr, "rigor: archived in %s: %d %s sent (%s), %d already there (%s)\n", a.Addr, sent, plural(sent, "artifact", "artifacts"),
		humanBytes(bytes), had, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// pushSource archives the engine's git source at the locked commit, with
// its patches. A mirror that lacks the commit (the engine came from the
// archive or the cache on a machine that never fetched it) is said, and
// is an error only when the archive does not hold the source already.
func (e *env) pushSource(ctx context.Context, a *archive.Archive, t *archiveTarget, it *archiveItem, sent, had *int, bytes *int64) error {
	patches := sourcePatches(t)
	if has, _ := gitsrc.HasCommit(ctx, it.path, t.entry.Engine.Commit); !has {
		ok, lacking, err := a.SourceHas(ctx, t.entry.Engine.Commit, patches)
		if err != nil {
			return archiveError(err)
		}
		if ok {
			e.pushed(it, false, 0, sent, had, bytes)
			return nil
		}
		if len(lacking) == 0 {
			fmt.Fprintf(e.stderr, "rigor: %s: the source at %.12s is not in this machine's git mirror (the build came from the archive or the cache): not archived\n", t.x.ID, t.entry.Engine.Commit)
			return nil
		}
	}
	bar := newByteProgress(e.stderr, "source "+it.What, 0)
	ok, n, err := a.PushSource(ctx, t.entry.Engine.Requested.Git, it.path, t.entry.Engine.Commit, patches, e.cfg().Cache, bar.update)
	bar.done()
	if err != nil {
		return archiveError(err)
	}
	e.pushed(it, ok, n, sent, had, bytes)
	return nil
}

// pushPins archives the pins of the requests of t's lock (a git ref, a hub
// revision, an npm range), each once the archive holds its content (an
// npm range's with the installs of installs), so that 'rigor lock' can
// take them when upstream is gone.
func (e *env) pushPins(ctx context.Context, a *archive.Archive, t *archiveTarget, installs []string, sent, had *int) error {
	for _, p := range archive.PinsOf(t.entry) {
		what := p.Request + " → " + shortValue(p.Commit)
		if p.NPM != nil {
			if len(installs) == 0 {
				fmt.Fprintf(e.stderr, "rigor: %s: the pin of %s is not archived: the engine's install is not (not installed on this machine)\n", t.x.ID, p.Request)
				continue
			}
			what, p.Artifacts = p.Request+" → "+p.NPM.Version, installs
		}
		ok, missing, err := a.PushPin(ctx, p)
		if err != nil {
			return archiveError(err)
		}
		if len(missing) > 0 {
			fmt.Fprintf(e.stderr, "rigor: %s: the pin of %s is not archived: the archive lacks %s\n", t.x.ID, p.Request, strings.Join(missing, ", "))
			continue
		}
		e.pushed(&archiveItem{Tag: archive.PinTag(p.Request), What: what}, ok, 0, sent, had, new(int64))
	}
	return nil
}

func (e *env) pushed(it *archiveItem, ok bool, n int64, sent, had *int, bytes *int64) {
	if ok {
		*sent++
		*bytes += n
		fmt.Fprintf(e.stdout, "pushed  %s  %s\n", it.Tag, it.What)
	} else {
		*had++
		fmt.Fprintf(e.stdout, "present %s  %s\n", it.Tag, it.What)
	}
}

// markerOf is the completion marker of a build entry or an install,
// which the artifact's config holds.
func markerOf(kind, dir string) string {
	if kind == archive.KindBuild {
		return buildcache.MarkerFile
	}
	// An install's marker is the only dot-file at its top that is JSON.
	entries, _ := os.ReadDir(dir)
	for _, d := range entries {
		if strings.HasPrefix(d.Name(), ".") && strings.HasSuffix(d.Name(), ".json") && !d.IsDir() {
			return d.Name()
		}
	}
	return "package.json"
}

func engineNothing(p *engine.Prepared) string {
	if p != nil && p.Engine.Unpinned != "" {
		return "an endpoint"
	}
	return "prebuilt (a local path)"
}

// archArch is the GGUF architecture a lock recorded, for the model
// artifact's config.
func archArch(entry *lock.Entry) string {
	if s := entry.Model.Synthetic; s != nil {
		if a, ok := s.GGUF["architecture"].(string); ok {
			return a
		}
	}
	for _, f := range entry.Model.Files {
		if a, ok := f.GGUF["architecture"].(string); ok {
			return a
		}
	}
	return ""
}

func archiveError(err error) error {
	var h interface{ Hint() string }
	if errors.As(err, &h) && h.Hint() != "" {
		return withHint(err, h.Hint())
	}
	return err
}

func (c *archivePullCmd) Run(e *env) (err error) {
	s, err := e.startArchive(c.IDs, true)
	if err != nil {
		return err
	}
	defer s.stop()
	defer func() {
		err = s.interrupted(err, "nothing half-written was kept; run 'rigor archive pull' again")
	}()
	a, ts, ctx := s.a, s.targets, s.ctx
	start := time.Now()
	for _, t := range ts {
		if it := e.sourceItem(t); it != nil {
			if err := e.pullSource(ctx, a, t, it); err != nil {
				return err
			}
		}
		r := e.runner(t.root)
		r.Offline = true
		prog := newPrepareProgress(e.stderr, engineLabel(t.x, t.entry))
		pctx := prog.attach(ctx, r)
		s := &archive.Substituter{A: a, TmpDir: e.cfg().Cache}
		pctx = buildcache.WithSubstituter(pctx, s)
		prog.run()
		p, err := r.PrepareEngine(pctx, t.x, t.entry)
		prog.close()
		if err != nil {
			return withHint(fmt.Errorf("%s: the engine could not be brought from the archive or the cache: %w", t.x.ID, err),
				"push it from a machine that has it: rigor archive push "+t.x.ID)
		}
		if it := e.engineItem(t, p); it != nil {
			for _, it := range []*archiveItem{installItem(t, p), it} {
				if it == nil {
					continue
				}
				state := "cached "
				if buildcache.Substituted(pctx, it.key) {
					state = "pulled "
				}
				fmt.Fprintf(e.stdout, "%s %s  %s\n", state, it.Tag, it.What)
			}
		}
		for _, it := range e.fileItems(t) {
			if it.SHA256 == "" {
				continue
			}
			if sum, _, err := lock.HashFile(ctx, it.path); err == nil && sum == it.SHA256 {
				fmt.Fprintf(e.stdout, "cached  %s  %s\n", it.Tag, it.What)
				continue
			}
			bar := newByteProgress(e.stderr, "model "+it.What, it.Size)
			err := e.fetchModel(ctx, a, t, it, bar.update)
			bar.done()
			if errors.Is(err, archive.ErrNotArchived) {
				fmt.Fprintf(e.stdout, "missing %s  %s\n", it.Tag, it.What)
				continue
			}
			if err != nil {
				return archiveError(err)
			}
			fmt.Fprintf(e.stdout, "pulled  %s  %s\n", it.Tag, it.What)
		}
	}
	fmt.Fprintf(e.stderr, "rigor: pulled from %s in %s\n", a.Addr, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// pullSource brings the engine's archived git source into this machine's
// git mirror (and any patch file the module lacks), unless the mirror
// holds the commit already.
func (e *env) pullSource(ctx context.Context, a *archive.Archive, t *archiveTarget, it *archiveItem) error {
	patches := sourcePatches(t)
	missingPatch := false
	for _, p := range patches {
		if _, err := os.Stat(p.File); err != nil {
			missingPatch = true
		}
	}
	if has, _ := gitsrc.HasCommit(ctx, it.path, t.entry.Engine.Commit); has && !missingPatch {
		fmt.Fprintf(e.stdout, "cached  %s  %s\n", it.Tag, it.What)
		return nil
	}
	bar := newByteProgress(e.stderr, "source "+it.What, 0)
	err := a.FetchSource(ctx, e.cfg().Cache, sourceURL(t), t.entry.Engine.Commit, patches, e.cfg().Cache, bar.update)
	bar.done()
	if errors.Is(err, archive.ErrNotArchived) {
		fmt.Fprintf(e.stdout, "missing %s  %s\n", it.Tag, it.What)
		return nil
	}
	if err != nil {
		return archiveError(err)
	}
	fmt.Fprintf(e.stdout, "pulled  %s  %s\n", it.Tag, it.What)
	return nil
}

// fetchModel brings one model file from the archive to where this
// machine keeps it: a hub file into the Hugging Face cache's layout (the
// blob by its sha256, the snapshot's link to it), any other at its path.
func (e *env) fetchModel(ctx context.Context, a *archive.Archive, t *archiveTarget, it *archiveItem, progress func(int64)) error {
	if it.blob == "" {
		return a.FetchModelFile(ctx, it.What, it.SHA256, it.Size, it.path, progress)
	}
	blob := it.blob
	if err := a.FetchModelFile(ctx, it.What, it.SHA256, it.Size, blob, progress); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(it.path), 0o755); err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(it.path), blob)
	if err != nil {
		return err
	}
	os.Remove(it.path)
	return os.Symlink(rel, it.path)
}

func (c *archiveCheckCmd) Run(e *env) error {
	s, err := e.startArchive(c.IDs, true)
	if err != nil {
		return err
	}
	defer s.stop()
	a, ts, ctx := s.a, s.targets, s.ctx
	var items []*archiveItem
	for _, t := range ts {
		r := e.runner(t.root)
		var it *archiveItem
		if p, err := r.LocateEngine(ctx, t.x, t.entry); err == nil && p != nil {
			it = e.engineItem(t, p)
			if it == nil && (p.Engine.BuildID == "prebuilt" || p.Engine.Unpinned != "") {
				it = &archiveItem{ID: t.x.ID, Kind: "engine", What: engineLabel(t.x, t.entry), Outside: true,
					Note: "the engine is " + engineNothing(p) + ": nothing of it to archive"}
			}
		}
		if it == nil {
			if key, ok := r.BuildKey(ctx, t.x, t.entry); ok {
				it = &archiveItem{ID: t.x.ID, Kind: archive.KindBuild, What: engineLabel(t.x, t.entry), Tag: archive.Tag(archive.KindBuild, key)}
			}
		}
		if it == nil {
			it = &archiveItem{ID: t.x.ID, Kind: "engine", What: engineLabel(t.x, t.entry),
				Note: "its key is not known on this machine (not built or installed here, or prebuilt): build it, or check from a machine that has it"}
		}
		if p, err := r.LocateEngine(ctx, t.x, t.entry); err == nil && p != nil {
			if in := installItem(t, p); in != nil {
				items = append(items, in)
			}
		}
		items = append(items, it)
		if src := e.sourceItem(t); src != nil {
			src.patches = sourcePatches(t)
			items = append(items, src)
		}
		items = append(items, e.fileItems(t)...)
		for _, p := range archive.PinsOf(t.entry) {
			items = append(items, &archiveItem{ID: t.x.ID, Kind: archive.KindPin, What: p.Request, Tag: archive.PinTag(p.Request)})
		}
	}
	var missing, kept int
	for _, it := range items {
		if it.Outside {
			continue
		}
		kept++
		if it.Tag == "" {
			missing++
			continue
		}
		var ok bool
		if it.Kind == archive.KindSource {
			var lacking []string
			ok, lacking, err = a.SourceHas(ctx, strings.TrimPrefix(it.Tag, archive.KindSource+"-"), it.patches)
			if len(lacking) > 0 {
				it.Note = "the archived source lacks " + strings.Join(lacking, ", ")
			}
		} else if it.Kind == "model" || it.Kind == "corpus" {
			var held bool
			held, it.Differs, err = a.ModelHas(ctx, it.SHA256, it.Size)
			ok = held && it.Differs == ""
		} else {
			ok, err = a.HasArtifact(ctx, it.Tag)
		}
		if err != nil {
			return archiveError(err)
		}
		it.Archived = ok
		if !ok {
			missing++
		}
	}
	if c.JSON {
		if err := e.printJSON(items); err != nil {
			return err
		}
	} else {
		for _, it := range items {
			state := "archived"
			if it.Outside {
				state = "outside "
			} else if it.Differs != "" {
				state = "differs "
				it.Note = it.Differs
			} else if !it.Archived {
				state = "missing "
			}
			tag := it.Tag
			if tag == "" {
				tag = "-"
			}
			line := fmt.Sprintf("%s  %s  %-8s %s  %s", it.ID, state, it.Kind, tag, it.What)
			if it.Note != "" {
				line += "  (" + it.Note + ")"
			}
			fmt.Fprintln(e.stdout, line)
		}
	}
	if missing > 0 {
		return withHint(fmt.Errorf("%d of %d %s not archived in %s", missing, kept, plural(kept, "input is", "inputs are"), a.Addr),
			"push them from a machine whose caches hold them: rigor archive push")
	}
	fmt.Fprintf(e.stderr, "rigor: all %d %s archived in %s\n", kept, plural(kept, "input is", "inputs are"), a.Addr)
	return nil
}

// byteProgress shows an upload or download on a terminal, at most every
// 200 ms; off a terminal it prints nothing.
type byteProgress struct {
	w     io.Writer
	label string
	total int64 // 0: not known
	mu    sync.Mutex
	last  time.Time
	shown bool
	start time.Time
}

// newByteProgress shows progress on a terminal, of total bytes when it is
// known (a model file's size from the lock); nil (nothing) when w is not one.
func newByteProgress(w io.Writer, label string, total int64) *byteProgress {
	if _, tty := termFile(w); !tty {
		return nil
	}
	return &byteProgress{w: w, label: label, total: total, start: time.Now()}
}

func (b *byteProgress) update(n int64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if time.Since(b.last) < 200*time.Millisecond {
		return
	}
	b.last = time.Now()
	rate := float64(n) / time.Since(b.start).Seconds()
	done := humanBytes(n)
	if b.total > 0 {
		done = fmt.Sprintf("%s of %s, %d%%", done, humanBytes(b.total), n*100/b.total)
	}
	fmt.Fprintf(b.w, "\r\033[Krigor: %s: %s (%s/s)", b.label, done, humanBytes(int64(rate)))
	b.shown = true
}

func (b *byteProgress) done() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.shown {
		fmt.Fprint(b.w, "\r\033[K")
	}
}

func (archivePushCmd) Help() string {
	return `Archives what the locks of the experiments pin: the engine as it is in
this machine's caches (a build cache entry by its build id, or an npm
install such as node-llama-cpp's by its key; built or installed first if it
is not there yet) and every model file with a sha256 in the lock (hub
files from the Hugging Face cache, local files, the synthetic model) and
the hub corpus of a quality measurement. Each
blob is content-addressed and sent only when the registry lacks it; a file
that no longer hashes to the lock is not archived.

Examples:
  rigor archive push example/smoke --archive oci://127.0.0.1:5000/lab/rigor  # needs an OCI registry: --archive or RIGOR_ARCHIVE
  RIGOR_ARCHIVE=oci://registry.lab/rigor rigor archive push  # needs an OCI registry: --archive or RIGOR_ARCHIVE`
}

func (archivePullCmd) Help() string {
	return `Brings the archived inputs of the experiments into this machine's caches
without building, installing or downloading from upstream: the engine's
build or install (checked against the hashes its build or npm recorded)
and the model files and hub corpus (checked against the lock's sha256; a hub file goes
into the Hugging Face cache's layout). A blob whose bytes do not match is
refused, naming the artifact.

Examples:
  rigor archive pull example/smoke --archive oci://127.0.0.1:5000/lab/rigor  # needs an OCI registry: --archive or RIGOR_ARCHIVE
  RIGOR_ARCHIVE=oci://registry.lab/rigor rigor archive pull  # needs an OCI registry: --archive or RIGOR_ARCHIVE`
}

func (archiveCheckCmd) Help() string {
	return `Lists each input of the experiments' locks with whether the archive holds
it (and the pin of each request, which 'rigor lock' takes when upstream is
gone), and exits 1 when something is missing. The engine's key is known when
its build or install is in this machine's cache, or (for builds) computed
from the lock and the toolchain.

Examples:
  rigor archive check example/smoke --archive oci://127.0.0.1:5000/lab/rigor  # needs an OCI registry: --archive or RIGOR_ARCHIVE
  rigor archive check --json  # needs an OCI registry: --archive or RIGOR_ARCHIVE`
}

// pullFromArchive brings every model file of a hub lock from the archive
// into the Hugging Face cache, verified against the lock: the number of
// files it brought, 0 when no archive is set. A file the lock holds no
// sha256 of must already be in the cache.
func (e *env) pullFromArchive(ctx context.Context, root string, x *spec.Experiment, entry *lock.Entry) (int, error) {
	a, err := e.openArchive(false)
	if err != nil || a == nil {
		return 0, err
	}
	t := &archiveTarget{root: root, x: x, entry: entry}
	n := 0
	for _, it := range e.fileItems(t) {
		if sum, _, err := lock.HashFile(ctx, it.path); err == nil && (it.SHA256 == "" || sum == it.SHA256) {
			continue
		}
		if it.SHA256 == "" {
			return n, fmt.Errorf("%s: %s", it.What, it.Note)
		}
		if err := e.fetchModel(ctx, a, t, it, nil); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// archivedGone asks the archive, when one is set, whether it holds each
// input that is gone upstream or whose upstream could not be asked (the
// engine's source with its patches, every model file with a sha256, the
// engine install), and fills in Archived and Archive. It says whether an
// archive is set.
func (e *env) archivedGone(ctx context.Context, set *spec.Set, gone []*lock.Gone) (bool, error) {
	a, err := e.openArchive(false)
	if err != nil || a == nil {
		return false, err
	}
	if err := a.Ping(ctx); err != nil {
		return true, archiveError(err)
	}
	for _, g := range gone {
		g.Archive = a.Addr.String()
		var x *spec.Experiment
		for _, y := range set.Experiments {
			if y.ID == g.ID {
				x = y
			}
		}
		if x == nil {
			continue
		}
		f, err := lock.Read(set.Root, x.Package)
		if err != nil || f.Experiments[x.ID] == nil {
			continue
		}
		t := &archiveTarget{root: set.Root, x: x, entry: f.Experiments[x.ID]}
		switch g.Input {
		case lock.DriftEngine:
			g.Archived, _, err = a.SourceHas(ctx, g.Locked, sourcePatches(t))
		case lock.DriftModel:
			g.Archived = false
			for _, it := range e.modelItems(t) {
				if it.Tag == "" {
					continue
				}
				if g.Archived, err = a.HasArtifact(ctx, it.Tag); err != nil || !g.Archived {
					break
				}
			}
		case lock.DriftModelFile, lock.DriftCorpus:
			if g.SHA256 == "" {
				g.Why += "; the lock holds no sha256 of this small git file, so no archive holds it"
				break
			}
			g.Archived, err = a.HasArtifact(ctx, archive.ModelTag(g.SHA256))
		case lock.DriftNPM:
			known := false
			if p, lerr := e.runner(t.root).LocateEngine(ctx, t.x, t.entry); lerr == nil && p != nil {
				if it := e.engineItem(t, p); it != nil {
					known = true
					g.Archived, err = a.HasArtifact(ctx, it.Tag)
				}
			}
			if !known {
				g.Why += "; the archive's install of it is not known on this machine (rigor archive check names it)"
			}
		}
		if err != nil {
			return true, archiveError(err)
		}
	}
	return true, nil
}

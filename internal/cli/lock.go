package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rigorbench/rigor/internal/archive"
	"github.com/rigorbench/rigor/internal/gitrepo"
	"github.com/rigorbench/rigor/internal/hf"
	"github.com/rigorbench/rigor/internal/lock"
	"github.com/rigorbench/rigor/internal/spec"
)

type lockCmd struct {
	Args    []string `arg:"" optional:"" name:"pattern" help:"Experiment ids, packages or globs (default: all); with --update, also the inputs to re-resolve: engine, model, patches, all."`
	Update  bool     `help:"Re-resolve the named inputs (engine, model, patches; all when none is named) even where the experiment did not change."`
	Check   bool     `help:"Check without the network that every experiment is locked and its lock is current; exit 1 listing the others."`
	Online  bool     `help:"With --check, also ask every upstream (git remotes, the hub, the npm registry) whether each locked ref still resolves to the pinned commit or version; exit 1 naming each one that moved."`
	Offline bool     `help:"Use only caches (hub cache, git mirrors, npm cache) and say what they cannot resolve." env:"RIGOR_OFFLINE"`
	JSON    bool     `help:"Print the changes (or, with --check, the stale experiments) as JSON."`
	Commit  bool     `help:"Commit the selected packages' lockfiles, as run commits its records (no git identity needed: the author is RIGOR_GIT_AUTHOR, git config, or rigor@localhost)."`
}

func (lockCmd) Help() string {
	return `Resolves every input of the selected experiments and pins it in
lockfiles/<package>.lock.json: the Hugging Face repo's commit and each
file's size and sha256, the engine's git commit and the sha256 of each
patch (proven to apply strictly at that commit), local model files,
synthetic models, npm versions with their integrity, prebuilt binaries.
Only what is missing or stale is resolved; an input keeps its pin until
its request changes or --update names it. Each change is printed on
stdout as "id: input: old → new". A lock that fails leaves the lockfile of
that package as it was. The lockfile is JSON: byte-for-byte the same when
nothing changed, readable by any tool. HF_ENDPOINT, HF_TOKEN and
HF_HUB_OFFLINE are honoured; RIGOR_HF_MAX_RETRIES bounds the hub retries.

Examples:
  rigor lock
  rigor lock example
  rigor lock --update engine example/smoke
  rigor lock --check
  rigor lock --check --online
  rigor lock --offline
  rigor lock --commit

--check alone never opens a connection: it compares the lockfiles with
the experiments and the local files. --check --online also asks each
upstream whether a locked request moved since it was pinned (a tag
force-moved, a branch or a hub revision with new commits, a new npm
version within a range) and prints one line per moved input:
  bench/a: engine ref b4747: 28165161ffe1 → 2e41d733a5ce (moved upstream; the lock still pins 28165161ffe1)
The lock keeps pinning the old value, so a rerun runs what it ran
before; 'rigor lock --update engine ID' (or model) moves the pin. It
also names each input upstream no longer has (a deleted remote or hub
repository, a commit no branch or tag holds any more, even one pinned
by its sha, a hub file deleted, an npm version unpublished), and
whether the archive holds it:
  bench/a: model file org/m@main: m.gguf: gone upstream, archived in oci://…
An upstream that cannot be asked (unreachable, timing out) fails the
check: each question is asked once, however many experiments share it,
and each failure is said once, naming the experiments it concerns and
whether the archive holds their inputs. --json gives
  {"stale": […], "moved": […], "gone": […], "unasked": […]}
where "unasked" lists each input that could not be asked, as "gone"
does ("id", "input", "source", "ref", "locked", "why", "archived").

With an archive set (--archive, RIGOR_ARCHIVE or the module's rigor.cue),
an input whose upstream is gone or cannot be reached (a git remote or ref
not found, a hub repository or revision not found, an npm version
unpublished; offline, a cache that misses) is locked from the pin 'rigor
archive push' archived for its request, and said on stderr with what
upstream answered. An upstream that answers is never replaced; an input
neither upstream nor archived is an error. Offline, only an archive on
this machine's loopback is used.`
}

func (c *lockCmd) Run(e *env) error {
	patterns, inputs := c.args()
	if err := c.checkFlags(); err != nil {
		return err
	}
	set, err := e.loadSet(patterns)
	if err != nil {
		return err
	}
	if c.Check {
		return c.check(e, set)
	}
	var broken []string
	for _, x := range set.Experiments {
		if x.Broken {
			broken = append(broken, x.ID)
		}
	}
	if len(broken) > 0 {
		if err := e.problemsError(set); err != nil {
			return err
		}
	}
	update := lock.Update{}
	if c.Update {
		update, err = lock.ParseUpdate(inputs)
		if err != nil {
			return err
		}
	}
	opts, err := c.options(e, set.Root)
	if err != nil {
		return err
	}
	opts.Update = update
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if opts.Archive, err = e.lockArchive(c.Offline); err != nil {
		return err
	}
	if p := newProgress(e.stderr); p != nil {
		opts.Progress = p.update
		defer p.done()
	}
	res, err := lock.NewResolver(opts).Lock(ctx, set, Version)
	if err != nil {
		var pe *lock.ParseError
		if errors.As(err, &pe) {
			return withHint(err, pe.Hint())
		}
		return err
	}
	if err := c.printResult(e, set, res, inputs, opts.HFToken); err != nil {
		return err
	}
	if c.Commit {
		return e.commitLockfiles(set, res.Changes)
	}
	return nil
}

// args splits the arguments: with --update, the inputs to re-resolve
// (engine, model, patches, all) from the experiment patterns.
func (c *lockCmd) args() (patterns, inputs []string) {
	if !c.Update {
		return c.Args, nil
	}
	for _, a := range c.Args {
		switch a {
		case lock.InputEngine, lock.InputModel, lock.InputPatches, lock.InputAll:
			inputs = append(inputs, a)
		default:
			patterns = append(patterns, a)
		}
	}
	return patterns, inputs
}

func (c *lockCmd) checkFlags() error {
	if c.Check && c.Update {
		return withHint(errors.New("--check and --update exclude each other"), "run 'rigor lock --update' first, then 'rigor lock --check'")
	}
	if c.Online && !c.Check {
		return withHint(errors.New("--online goes with --check"), "run 'rigor lock --check --online'")
	}
	if c.Commit && c.Check {
		return withHint(errors.New("--commit and --check exclude each other"), "run 'rigor lock --commit', then 'rigor lock --check'")
	}
	if c.Online && c.Offline {
		return withHint(errors.New("--online and --offline exclude each other"), "'rigor lock --check' alone needs no network")
	}
	return nil
}

// printResult prints what the lock changed, what moved upstream and what
// could not be resolved (the hub token redacted), or says that nothing
// changed; unresolved inputs are the error.
func (c *lockCmd) printResult(e *env, set *spec.Set, res *lock.LockResult, inputs []string, token string) error {
	if c.JSON {
		out := struct {
			Changes     []lock.Change      `json:"changes"`
			Written     []string           `json:"written"`
			Moved       []lock.Drift       `json:"moved"`
			FromArchive []lock.FromArchive `json:"fromArchive"`
		}{res.Changes, res.Written, res.Moved, res.FromArchive}
		if out.Moved == nil {
			out.Moved = []lock.Drift{}
		}
		if out.FromArchive == nil {
			out.FromArchive = []lock.FromArchive{}
		}
		if out.Changes == nil {
			out.Changes = []lock.Change{}
		}
		if out.Written == nil {
			out.Written = []string{}
		}
		if err := e.printJSON(out); err != nil {
			return err
		}
	} else {
		for _, ch := range res.Changes {
			fmt.Fprintf(e.stdout, "%s: %s: %s → %s\n", ch.ID, ch.Input, shortValue(ch.Old), shortValue(ch.New))
		}
	}
	for _, f := range res.FromArchive {
		fmt.Fprintf(e.stderr, "rigor: %s: %s %s → %s from the archive %s: upstream could not be asked (%s)\n",
			f.ID, f.Input, f.Request, shortValue(f.Pinned), f.Archive, redacted{errors.New(f.Why), token}.Error())
	}
	for _, d := range res.Moved {
		fmt.Fprintf(e.stderr, "rigor: warning: %s: %s\n", d.ID, d)
	}
	if len(res.Moved) > 0 {
		fmt.Fprintf(e.stderr, "rigor: hint: 'rigor lock --update engine ID' moves a pin to the upstream commit; until then runs keep using the locked one\n")
	}
	for _, err := range res.Errors {
		var hints []string
		var h interface{ Hint() string }
		if errors.As(err, &h) && h.Hint() != "" {
			hints = append(hints, h.Hint())
		}
		printError(e.stderr, redacted{withHint(err, hints...), token})
	}
	if n := len(res.Errors); n > 0 {
		return fmt.Errorf("%d %s could not be resolved; no lockfile was written for %s", n, plural(n, "input", "inputs"), plural(n, "its package", "their packages"))
	}
	if !c.JSON && len(res.Changes) == 0 && len(res.Moved) == 0 {
		n := len(set.Experiments)
		if c.Update {
			what := "every input"
			if len(inputs) > 0 && !slices.Contains(inputs, lock.InputAll) {
				what = strings.Join(inputs, ", ")
			}
			if k := len(res.FromArchive); k > 0 {
				fmt.Fprintf(e.stderr, "rigor: re-resolved %s of %d %s: %d from the archive, whose pins are the lock's (whether upstream moved is not known)\n",
					what, n, plural(n, "experiment", "experiments"), k)
				return nil
			}
			fmt.Fprintf(e.stderr, "rigor: re-resolved %s of %d %s upstream: nothing moved, the lock is unchanged\n", what, n, plural(n, "experiment", "experiments"))
		} else {
			fmt.Fprintf(e.stderr, "rigor: %d %s locked and current: nothing changed ('rigor lock --update' re-resolves what moved upstream)\n", n, plural(n, "experiment is", "experiments are"))
		}
	}
	return nil
}

// pinnedNote explains an online check that asked nothing: every input is
// a local path, a synthetic model or a server rigor did not start.
func pinnedNote(asked int) string {
	if asked == 0 {
		return " (no input has an upstream to ask: local paths and synthetic models)"
	}
	return ""
}

// commitLockfiles commits the lockfiles of the set's packages (those that
// exist), with the changes in the message: lock --commit.
func (e *env) commitLockfiles(set *spec.Set, changes []lock.Change) error {
	seen := map[string]bool{}
	var paths, rel []string
	for _, x := range set.Experiments {
		if seen[x.Package] {
			continue
		}
		seen[x.Package] = true
		p := lock.Path(set.Root, x.Package)
		if _, err := os.Stat(p); err == nil {
			paths = append(paths, p)
			rel = append(rel, lock.Dir+"/"+x.Package+lock.Ext)
		}
	}
	if len(paths) == 0 {
		return withHint(errors.New("--commit: no lockfile to commit"), "'rigor lock' writes them first")
	}
	sort.Strings(rel)
	sort.Strings(paths)
	msg := "rigor lock: " + strings.Join(rel, ", ")
	if len(changes) > 0 {
		msg += "\n"
		for _, ch := range changes {
			msg += fmt.Sprintf("\n%s: %s: %s → %s", ch.ID, ch.Input, shortValue(ch.Old), shortValue(ch.New))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hash, err := e.store(set.Root).Commit(ctx, paths, msg)
	switch {
	case errors.Is(err, gitrepo.ErrNothingToCommit):
		fmt.Fprintf(e.stderr, "rigor: %s already committed as %s\n", strings.Join(rel, ", "), plural(len(rel), "it is", "they are"))
		return nil
	case errors.Is(err, gitrepo.ErrNotRepository):
		return withHint(fmt.Errorf("--commit: the module is not in a git repository; %s written, not committed", strings.Join(rel, ", ")), "'git init' to keep their history, or leave out --commit")
	case err != nil:
		return withHint(err, "the lockfiles are written; commit them yourself with git")
	}
	fmt.Fprintf(e.stderr, "rigor: committed %s (%s)\n", strings.Join(rel, ", "), hash[:min(7, len(hash))])
	return nil
}

// options are the resolver's options from the flags and the environment.
func (c *lockCmd) options(e *env, root string) (lock.Options, error) {
	cfg := e.cfg()
	gitTimeout, err := cfg.gitTimeout()
	if err != nil {
		return lock.Options{}, err
	}
	hopts, err := e.cfg().hfOptions()
	if err != nil {
		return lock.Options{}, err
	}
	if c.Offline {
		hopts.Offline = true
	}
	return lock.Options{
		Root:       root,
		Cache:      cfg.Cache,
		HFCache:    cfg.HFCache,
		HF:         hf.NewClient(hopts),
		HFToken:    hopts.Token,
		Offline:    c.Offline,
		GitTimeout: gitTimeout,
	}, nil
}

// lockArchive is the archive a lock takes pins from when upstream is gone,
// nil when none is set. Offline, only an archive on this machine's
// loopback is used, as run and build do.
func (e *env) lockArchive(offline bool) (lock.Archive, error) {
	a, err := e.openArchive(false)
	if err != nil || a == nil {
		return nil, err
	}
	if offline && !a.Addr.Loopback() {
		fmt.Fprintf(e.stderr, "rigor: offline: the archive %s is not on this machine's loopback, so it is not used\n", a.Addr)
		return nil, nil
	}
	if err := os.MkdirAll(e.cfg().Cache, 0o755); err != nil {
		return nil, err
	}
	return &archive.Substituter{A: a, TmpDir: e.cfg().Cache,
		Warn: func(m string) { fmt.Fprintf(e.stderr, "rigor: warning: %s\n", m) },
		Fetching: func(kind, key string) {
			fmt.Fprintf(e.stderr, "rigor: fetching %s %.12s from the archive %s\n", kind, key, a.Addr)
		}}, nil
}

// redacted hides a token in an error's text, as a last line of defence:
// the hub client already keeps it out of its errors.
type redacted struct {
	err   error
	token string
}

func (r redacted) Error() string {
	if len(r.token) < 4 {
		return r.err.Error()
	}
	return strings.ReplaceAll(r.err.Error(), r.token, "<HF_TOKEN>")
}
func (r redacted) Unwrap() error { return r.err }

// shortValue abbreviates hashes and commits for the change lines.
func shortValue(v string) string {
	switch {
	case v == "":
		return "none"
	case strings.HasPrefix(v, "sha256:") && len(v) == 71:
		return v[:19]
	case len(v) == 40 || len(v) == 64:
		if strings.Trim(v, "0123456789abcdef") == "" {
			return v[:12]
		}
	}
	return v
}

func (c *lockCmd) check(e *env, set *spec.Set) error {
	stale := lock.CheckWith(set, lock.CheckOptions{Cache: e.cfg().Cache})
	if stale == nil {
		stale = []lock.Stale{}
	}
	var on onlineCheck
	if c.Online {
		var err error
		if on, err = c.checkOnline(e, set); err != nil {
			return err
		}
	}
	if err := c.printCheck(e, stale, &on); err != nil {
		return err
	}
	return c.checkVerdict(e, set, stale, &on)
}

// onlineCheck is what 'lock --check --online' found upstream, with what
// the archive holds of the inputs gone or not asked.
type onlineCheck struct {
	lock.Online
	// archiveSet says whether an archive was asked; token is the hub
	// token, kept out of every message.
	archiveSet bool
	token      string
}

// checkOnline asks the upstreams, then the archive about every input gone
// upstream or not asked.
func (c *lockCmd) checkOnline(e *env, set *spec.Set) (onlineCheck, error) {
	opts, err := c.options(e, set.Root)
	if err != nil {
		return onlineCheck{}, err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	on := onlineCheck{Online: lock.NewResolver(opts).CheckOnline(ctx, set), token: opts.HFToken}
	if on.Moved == nil {
		on.Moved = []lock.Drift{}
	}
	if on.Gone == nil {
		on.Gone = []lock.Gone{}
	}
	if on.Unasked == nil {
		on.Unasked = []lock.Unasked{}
	}
	var ask []*lock.Gone
	for i := range on.Gone {
		ask = append(ask, &on.Gone[i])
	}
	for i := range on.Unasked {
		u := &on.Unasked[i]
		u.Why = redacted{errors.New(u.Why), on.token}.Error()
		ask = append(ask, &u.Gone)
	}
	if len(ask) > 0 {
		on.archiveSet, err = e.archivedGone(ctx, set, ask)
		switch {
		case err != nil && len(on.Gone) > 0:
			return on, err
		case err != nil:
			// Only inputs not asked: the check fails anyway; say
			// both what upstream and what the archive answered, and
			// nothing of what the archive holds.
			on.Errs = append(on.Errs, err)
			for _, g := range ask {
				g.Archived, g.Archive = false, ""
			}
		}
	}
	return on, nil
}

// printCheck prints what is stale, what moved and what is gone upstream
// (on stdout, or as JSON), then each upstream failure once (on stderr).
func (c *lockCmd) printCheck(e *env, stale []lock.Stale, on *onlineCheck) error {
	switch {
	case c.JSON && c.Online:
		out := struct {
			Stale   []lock.Stale   `json:"stale"`
			Moved   []lock.Drift   `json:"moved"`
			Gone    []lock.Gone    `json:"gone"`
			Unasked []lock.Unasked `json:"unasked"`
		}{stale, on.Moved, on.Gone, on.Unasked}
		if err := e.printJSON(out); err != nil {
			return err
		}
	case c.JSON:
		if err := e.printJSON(stale); err != nil {
			return err
		}
	default:
		for _, s := range stale {
			for _, r := range s.Reasons {
				fmt.Fprintf(e.stdout, "%s: %s\n", s.ID, r)
			}
		}
		for _, d := range on.Moved {
			fmt.Fprintf(e.stdout, "%s: %s\n", d.ID, d)
		}
		for _, g := range on.Gone {
			switch {
			case g.Archived:
				fmt.Fprintf(e.stdout, "%s: %s: gone upstream, archived in %s (%s)\n", g.ID, g, g.Archive, g.Why)
			case g.Archive != "":
				fmt.Fprintf(e.stdout, "%s: %s: gone upstream, NOT archived in %s (%s)\n", g.ID, g, g.Archive, g.Why)
			default:
				fmt.Fprintf(e.stdout, "%s: %s: gone upstream, NOT archived: no archive is set (%s)\n", g.ID, g, g.Why)
			}
		}
	}
	for _, err := range on.Errs {
		var hints []string
		var h interface{ Hint() string }
		if errors.As(err, &h) && h.Hint() != "" {
			hints = append(hints, h.Hint())
		}
		printError(e.stderr, redacted{withHint(err, hints...), on.token})
	}
	printUnasked(e, on)
	return nil
}

// printUnasked says each upstream failure once, naming the experiments
// whose locked inputs asked that question (the resolver asked it once for
// all of them), and whether the archive holds those inputs.
func printUnasked(e *env, on *onlineCheck) {
	type failure struct {
		u                  lock.Unasked
		ids, archived, not []string
	}
	var causes []string
	byCause := map[string]*failure{}
	for _, u := range on.Unasked {
		f := byCause[u.Cause()]
		if f == nil {
			f = &failure{u: u}
			byCause[u.Cause()] = f
			causes = append(causes, u.Cause())
		}
		f.ids = appendNew(f.ids, u.ID)
		if u.Archived {
			f.archived = appendNew(f.archived, u.ID)
		} else {
			f.not = appendNew(f.not, u.ID)
		}
	}
	sort.Strings(causes)
	for _, cause := range causes {
		f := byCause[cause]
		msg := idList(f.ids) + ": " + cause
		switch a := f.u.Archive; {
		case a == "":
		case len(f.not) == 0:
			msg += "; archived in " + a
		case len(f.archived) == 0:
			msg += "; NOT archived in " + a
		default:
			msg += fmt.Sprintf("; archived in %s for %s, NOT for %s", a, idList(f.archived), idList(f.not))
		}
		var hints []string
		if h := f.u.Hint(); h != "" {
			hints = append(hints, h)
		}
		printError(e.stderr, redacted{withHint(errors.New(msg), hints...), on.token})
	}
}

// appendNew appends s to list unless list ends with it (the inputs come
// sorted by experiment).
func appendNew(list []string, s string) []string {
	if len(list) > 0 && list[len(list)-1] == s {
		return list
	}
	return append(list, s)
}

// idList names experiments: every one up to eight, else the first six
// and "and 94 more" ('--json' lists every one).
func idList(ids []string) string {
	if len(ids) <= 8 {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:6], ", "), len(ids)-6)
}

// checkVerdict is the check's exit: an error for anything stale, gone and
// not archived, moved or not asked, else what was checked, on stderr.
func (c *lockCmd) checkVerdict(e *env, set *spec.Set, stale []lock.Stale, on *onlineCheck) error {
	var lost []lock.Gone
	for _, g := range on.Gone {
		if !g.Archived {
			lost = append(lost, g)
		}
	}
	n, asked, gone := len(set.Experiments), on.Asked, on.Gone
	switch {
	case len(stale) > 0:
		return withHint(fmt.Errorf("%d of %d %s not locked or stale", len(stale), n, plural(n, "experiment is", "experiments are")), "run 'rigor lock' to lock them")
	case len(lost) > 0 && !on.archiveSet:
		return withHint(fmt.Errorf("%d locked %s gone upstream and no archive is set", len(lost), plural(len(lost), "input is", "inputs are")),
			"a rerun needs them from this machine's caches or an archive: set one (--archive, RIGOR_ARCHIVE or archive: in the module's rigor.cue) and run 'rigor archive push' from a machine whose caches hold them")
	case len(lost) > 0:
		return withHint(fmt.Errorf("%d locked %s gone upstream and not archived", len(lost), plural(len(lost), "input is", "inputs are")),
			"run 'rigor archive push' from a machine whose caches hold them")
	case len(on.Moved) > 0:
		return withHint(fmt.Errorf("%d locked %s moved upstream", len(on.Moved), plural(len(on.Moved), "input", "inputs")),
			"a rerun still uses what the lock pins; 'rigor lock --update engine ID' (or model) moves a pin to the upstream value")
	case len(on.Unasked) > 0:
		return unaskedError(on)
	case len(on.Errs) > 0:
		return fmt.Errorf("%d %s could not be asked", len(on.Errs), plural(len(on.Errs), "upstream", "upstreams"))
	case !c.Online && !c.JSON:
		fmt.Fprintf(e.stderr, "rigor: %d %s locked and current (checked offline; 'rigor lock --check --online' also asks upstream whether a locked ref moved)\n", n, plural(n, "experiment is", "experiments are"))
	case !c.JSON && len(gone) > 0:
		fmt.Fprintf(e.stderr, "rigor: %d %s locked and current; %d %s checked upstream: none moved, %d gone upstream and archived in %s\n", n, plural(n, "experiment is", "experiments are"), asked, plural(asked, "input", "inputs"), len(gone), gone[0].Archive)
	case !c.JSON:
		fmt.Fprintf(e.stderr, "rigor: %d %s locked and current; %d %s checked upstream: none moved%s\n", n, plural(n, "experiment is", "experiments are"), asked, plural(asked, "input", "inputs"), pinnedNote(asked))
	}
	return nil
}

// unaskedError is the check's failure when upstreams could not be asked:
// how many locked inputs are in doubt, and, when the archive holds them
// all, that a rerun has them whatever upstream answers.
func unaskedError(on *onlineCheck) error {
	n, archived := len(on.Unasked), 0
	for _, u := range on.Unasked {
		if u.Archived {
			archived++
		}
	}
	err := fmt.Errorf("%d locked %s could not be checked upstream: whether %s is not known", n, plural(n, "input", "inputs"), plural(n, "it moved or is gone", "they moved or are gone"))
	hint := "run the check again once upstream answers"
	if archived == n {
		hint = fmt.Sprintf("the archive %s holds %s, so a rerun has %s whatever upstream answers; %s", on.Unasked[0].Archive, plural(n, "it", "them all"), plural(n, "it", "them"), hint)
	}
	return withHint(err, hint)
}

// progress draws hashing progress on a terminal, once hashing has taken
// more than a second.
type progress struct {
	w     io.Writer
	start time.Time
	mu    sync.Mutex
	last  time.Time
	drawn bool
}

func newProgress(w io.Writer) *progress {
	if _, ok := termFile(w); !ok {
		return nil
	}
	return &progress{w: w, start: time.Now()}
}

func (p *progress) update(done, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if now.Sub(p.start) < time.Second || now.Sub(p.last) < 200*time.Millisecond && done < total {
		return
	}
	p.last = now
	p.drawn = true
	rate := float64(done) / now.Sub(p.start).Seconds() / 1e6
	fmt.Fprintf(p.w, "\rrigor: hashing %.1f / %.1f GB (%.0f MB/s)\x1b[K", float64(done)/1e9, float64(total)/1e9, rate)
}

func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

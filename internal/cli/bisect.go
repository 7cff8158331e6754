package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/rigorbench/rigor/internal/bisect"
	"github.com/rigorbench/rigor/internal/gitsrc"
	"github.com/rigorbench/rigor/internal/lock"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/run"
	"github.com/rigorbench/rigor/internal/spec"
)

type bisectCmd struct {
	ID        string        `arg:"" name:"id" help:"The locked experiment whose engine history is bisected."`
	Good      string        `placeholder:"REF" help:"The engine commit, tag or branch the figure was good at, or a run of the experiment."`
	Bad       string        `placeholder:"REF" help:"The engine commit, tag or branch the figure was bad at, or a run of the experiment."`
	Metric    string        `default:"tokSOut" help:"The metric bisected (the first test of the point that reports it)."`
	Point     string        `placeholder:"P" help:"The sweep point bisected, when the experiment has several."`
	MaxRounds int           `default:"100" help:"The most rounds of the endpoints, and of each commit, before it stops with the range it could not split."`
	MinRounds int           `default:"8" help:"The rounds before a commit's first verdict."`
	Continue  bool          `help:"Resume the experiment's bisect where its last committed round left it."`
	Log       bool          `help:"Print the bisect's steps: each commit's verdict, intervals and run ids."`
	JSON      bool          `help:"With --log, print the bisect's state as JSON."`
	Offline   bool          `help:"Use only what is cached (git mirrors)."`
	Timeout   time.Duration `help:"Bound one bench process (default: the experiment's timeoutSeconds, else 1h)."`
}

func (bisectCmd) Help() string {
	return `Finds the engine commit that changed a figure. It walks the first-parent
history of the engine's git source from --good to --bad (a merge stands for
the commits it brought in) and measures commits in rounds: each round runs
the two endpoints and the commit under test once, in a shuffled order, so
that load that comes and goes falls on all three alike. First the endpoints
alone, until they differ significantly (else: no change); then each commit
until the paired t-test of log ratios (diff's) puts it with the good or the
bad endpoint, adding rounds up to --max-rounds, then stopping with the range
it could not split rather than guessing. --good and --bad take a commit,
tag or branch of the engine's source, or the id of a run of the experiment
whose lock differs from the experiment's only in the engine commit.

Every commit runs with the experiment's lock (model, flags, patches) at its
own commit; a commit where a patch does not apply, that does not build, or
whose runs fail is skipped and named. Builds are cached: a commit is built
once. Every run is an ordinary record (log, diff and report show them), and
the bisect's state is committed with each round's records in
results/.bisect/<experiment>.json: --continue resumes after a crash or on
another day; --log prints the steps.

Exit status: 0 when it names the first bad commit; 4 when the endpoints
did not differ in --max-rounds rounds (nothing to bisect); 5 when it could
not split the range (a commit stayed undecided); 6 when every commit in
the range was skipped. The outcome is printed and committed in each case.

Examples:
  rigor bisect bench/tg --good b4700 --bad b4747  # needs an engine from git: a llama.cpp experiment, not rigor init's npm one
  rigor bisect bench/tg --continue  # needs an engine from git: a llama.cpp experiment, not rigor init's npm one
  rigor bisect bench/tg --log  # needs an engine from git: a llama.cpp experiment, not rigor init's npm one`
}

func (c *bisectCmd) Run(e *env) error {
	if c.MinRounds < 2 || c.MaxRounds < c.MinRounds {
		return withHint(fmt.Errorf("--min-rounds=%d --max-rounds=%d: want 2 ≤ min ≤ max", c.MinRounds, c.MaxRounds), "the defaults are --min-rounds 8 --max-rounds 100")
	}
	// The engine's kind first: an experiment that cannot be bisected is
	// refused as such, locked or not.
	// A package that does not load is reported here, once: loading it
	// again below would print its errors twice.
	_, fx, _, err := e.findOne(c.ID)
	if err != nil {
		return err
	}
	if !c.Log {
		if src := fx.Spec.Engine.Source; src.Kind() != "git" {
			return withHint(fmt.Errorf("%s: rigor bisect walks the git history of an engine it builds, and this engine comes from %s", fx.ID, describeSource(src)),
				"bisect an experiment whose engine.source is git (llama.cpp, ik_llama.cpp); for two npm versions, lock each in an experiment and compare them with 'rigor run A B --rounds 5' and 'rigor diff A B'")
		}
	}
	set, x, points, entry, err := e.lockedExperiment(c.ID, true)
	if err != nil {
		return err
	}
	store := e.store(set.Root)
	path := filepath.Join(store.Dir, ".bisect", filepath.FromSlash(x.ID)+".json")
	rel := filepath.ToSlash(relTo(path, e.wd))
	if c.Log {
		f, err := bisect.Read(path)
		if errors.Is(err, os.ErrNotExist) {
			return withHint(fmt.Errorf("%s has no bisect (no %s)", x.ID, rel), "start one with 'rigor bisect "+x.ID+" --good REF --bad REF'")
		}
		if err != nil {
			return err
		}
		if c.JSON {
			return e.printJSON(f)
		}
		c.printLog(e, f)
		return nil
	}
	src := x.Spec.Engine.Source
	point, err := c.pickPoint(x, points)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	cfg := e.cfg()
	gitTimeout, err := cfg.gitTimeout()
	if err != nil {
		return err
	}
	url := src.Git
	if !strings.Contains(url, "://") && !strings.HasPrefix(url, "git@") && !filepath.IsAbs(url) {
		url = filepath.Join(set.Root, filepath.FromSlash(url))
	}
	gopts := gitsrc.Options{Cache: cfg.Cache, Offline: c.Offline, Timeout: gitTimeout}

	f, err := bisect.Read(path)
	switch {
	case c.Continue && errors.Is(err, os.ErrNotExist):
		return withHint(fmt.Errorf("--continue: %s has no bisect to resume (no %s)", x.ID, rel), "start one with 'rigor bisect "+x.ID+" --good REF --bad REF'")
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return err
	case c.Continue:
		if c.Good != "" || c.Bad != "" {
			return withHint(errors.New("--continue resumes the bisect as it was started: --good and --bad are its own"), "leave out --good and --bad")
		}
		if f.Point != point.ID {
			return fmt.Errorf("--continue: the bisect in %s is of %s, not %s", rel, f.Point, point.ID)
		}
	case err == nil && f.Outcome == nil:
		return withHint(fmt.Errorf("a bisect of %s is under way (%s)", x.ID, rel), "'rigor bisect "+x.ID+" --continue' resumes it; 'rigor bisect "+x.ID+" --log' shows it; remove the file to start again")
	default:
		if c.Good == "" || c.Bad == "" {
			return withHint(errors.New("rigor bisect needs --good REF and --bad REF (a commit, tag or branch of the engine's source)"), "rigor bisect "+x.ID+" --good v1 --bad v2")
		}
		if f, err = c.start(ctx, e, store, x, entry, point, url, gopts); err != nil {
			return err
		}
	}
	mirror := gitsrc.MirrorPath(cfg.Cache, url)
	if _, err := os.Stat(mirror); err != nil {
		if _, err := gitsrc.Resolve(ctx, url, f.BadCommit, gopts); err != nil {
			return err
		}
	}
	b := &bisector{c: c, e: e, x: x, point: point, entry: entry, f: f, path: path, rel: rel, root: set.Root, store: store,
		prepared: map[string]*run.Prepared{}}
	// Records made from an experiment or lock no commit holds say so, as
	// run's do.
	dirty := map[string][]string{x.ID: uncommittedFiles(store, set.Root, x)}
	warnUncommitted(e, dirty[x.ID])
	b.rec = &results.Recorder{Store: store, Fallback: results.Fallback(cfg.FallbackDir), Dirty: dirty}
	return b.loop(ctx)
}

// describeSource names where a non-git engine comes from.
func describeSource(src spec.Source) string {
	switch src.Kind() {
	case "npm":
		return "npm (" + src.NPM + ")"
	case "url":
		return "an endpoint rigor does not start (" + src.URL + ")"
	case "path":
		return "prebuilt binaries (" + src.Path + ")"
	case "python":
		return "a Python environment (" + src.Python + ")"
	}
	return src.Kind()
}

// pickPoint is the point bisected: --point, or the experiment's only one.
func (c *bisectCmd) pickPoint(x *spec.Experiment, points []*spec.Point) (*spec.Point, error) {
	var ids []string
	for _, p := range points {
		if c.Point == "" || p.ID == c.Point || strings.TrimPrefix(p.ID, x.ID) == c.Point || strings.TrimPrefix(p.ID, x.ID) == "["+c.Point+"]" {
			ids = append(ids, p.ID)
		}
	}
	switch {
	case len(ids) == 1:
		for _, p := range points {
			if p.ID == ids[0] {
				return p, nil
			}
		}
	case c.Point != "":
		return nil, withHint(fmt.Errorf("--point %q: %s has no such point", c.Point, x.ID), "its points: "+bisectPointIDs(points))
	}
	return nil, withHint(fmt.Errorf("%s has %d points: a bisect follows one", x.ID, len(points)), "name it with --point, one of "+bisectPointIDs(points))
}

func bisectPointIDs(points []*spec.Point) string {
	var s []string
	for _, p := range points {
		s = append(s, p.ID)
	}
	return strings.Join(s, ", ")
}

// start resolves the endpoints and walks the history between them.
func (c *bisectCmd) start(ctx context.Context, e *env, store *results.Store, x *spec.Experiment, entry *lock.Entry, point *spec.Point, url string, gopts gitsrc.Options) (*bisect.File, error) {
	good, err := c.endpoint(ctx, store, x, entry, "--good", c.Good, url, gopts)
	if err != nil {
		return nil, err
	}
	bad, err := c.endpoint(ctx, store, x, entry, "--bad", c.Bad, url, gopts)
	if err != nil {
		return nil, err
	}
	if good.Commit == bad.Commit {
		return nil, withHint(fmt.Errorf("--good %s and --bad %s are the same commit %.12s", c.Good, c.Bad, good.Commit), "name two commits, the good one older")
	}
	log, err := gitsrc.FirstParents(gitsrc.MirrorPath(e.cfg().Cache, url), good.Commit, bad.Commit, 0)
	var nf *gitsrc.NotFirstParentError
	if errors.As(err, &nf) {
		return nil, withHint(fmt.Errorf("--good %s: %w", c.Good, err), "rigor bisect walks first parents from --bad; name a good commit on that line ('git log --first-parent "+c.Bad+"')")
	}
	if err != nil {
		return nil, err
	}
	f := &bisect.File{Experiment: x.ID, Point: point.ID, Metric: c.Metric, Good: c.Good, Bad: c.Bad,
		GoodCommit: good.Commit, BadCommit: bad.Commit, MinRounds: c.MinRounds, MaxRounds: c.MaxRounds,
		Seed: mrand.Uint64N(1 << 53), Invocation: results.NewRunID(time.Now())}
	merges := 0
	for _, lc := range log {
		f.Commits = append(f.Commits, bisect.Commit{Hash: lc.Hash, Subject: lc.Subject, Date: lc.Date.UTC().Format(time.RFC3339), Merge: lc.Parents > 1})
		if lc.Parents > 1 {
			merges++
		}
	}
	fmt.Fprintf(e.stderr, "rigor: bisecting %s (%s) over %d first-parent commits from %.12s (%s) to %.12s (%s)\n",
		point.ID, c.Metric, len(log)-2, good.Commit, c.Good, bad.Commit, c.Bad)
	if merges > 0 {
		fmt.Fprintf(e.stderr, "rigor: the walk follows first parents: %d merge %s each stand for the commits they brought in\n", merges, plural(merges, "commit", "commits"))
	}
	return f, nil
}

// endpoint resolves --good or --bad: a commit, tag or branch of the
// engine's source, or the id of a run of the experiment whose lock
// differs from the experiment's only in the engine commit.
func (c *bisectCmd) endpoint(ctx context.Context, store *results.Store, x *spec.Experiment, entry *lock.Entry, flag, ref, url string, gopts gitsrc.Options) (gitsrc.Resolution, error) {
	srcHint := "name a commit, tag or branch of " + gitsrc.StripUserinfo(x.Spec.Engine.Source.Git) + ", or a run id of 'rigor results " + x.ID + "'"
	if results.IsRunID(ref) {
		r, err := results.Load(store.RecordPath(x.ID, ref))
		if err != nil {
			return gitsrc.Resolution{}, withHint(fmt.Errorf("%s %s: no run %s of %s", flag, ref, ref, x.ID), srcHint)
		}
		if r.Engine.Commit == "" {
			return gitsrc.Resolution{}, withHint(fmt.Errorf("%s %s: the run names no engine commit", flag, ref), srcHint)
		}
		if d := lockDiffers(r, entry); d != "" {
			return gitsrc.Resolution{}, withHint(fmt.Errorf("%s %s: the run's lock differs from the experiment's in more than the engine commit: %s", flag, ref, d),
				"bisect from the run's commit instead: "+flag+" "+r.Engine.Commit[:12])
		}
		ref = r.Engine.Commit
	}
	res, err := gitsrc.Resolve(ctx, url, ref, gopts)
	if err != nil {
		return gitsrc.Resolution{}, withHint(fmt.Errorf("%s %s: %w", flag, ref, err), srcHint)
	}
	return res, nil
}

// lockDiffers says how a run's locked inputs differ from the lock entry's
// beyond the engine commit: family, model files, patches; "" when they
// do not.
func lockDiffers(r *results.Run, entry *lock.Entry) string {
	if r.Engine.Family != entry.Engine.Family {
		return "engine family " + r.Engine.Family + ", locked " + entry.Engine.Family
	}
	files := map[string]string{}
	for _, f := range entry.Model.Files {
		files[f.Path] = f.SHA256
	}
	for _, f := range r.Model.Files {
		if want, ok := files[f.Path]; !ok || (want != "" && f.SHA256 != "" && want != f.SHA256) {
			return "model file " + f.Path
		}
	}
	if len(r.Model.Files) != len(entry.Model.Files) {
		return "the model's files"
	}
	if len(r.Engine.Patches) != len(entry.Engine.Patches) {
		return "the patches"
	}
	for i, p := range r.Engine.Patches {
		if p.Path != entry.Engine.Patches[i].Path || p.SHA256 != entry.Engine.Patches[i].SHA256 {
			return "patch " + p.Path
		}
	}
	return ""
}

// bisector runs a bisect's rounds.
type bisector struct {
	c        *bisectCmd
	e        *env
	x        *spec.Experiment
	point    *spec.Point
	entry    *lock.Entry
	f        *bisect.File
	path     string
	rel      string
	root     string
	store    *results.Store
	rec      *results.Recorder
	runner   *run.Runner
	prepared map[string]*run.Prepared
	built    int
}

func (b *bisector) loop(ctx context.Context) error {
	e, f := b.e, b.f
	rule := f.Rule()
	if b.c.Continue {
		rule.MaxRounds = b.c.MaxRounds
		if b.c.MaxRounds == 100 { // the default: the bisect's own
			rule.MaxRounds = f.MaxRounds
		}
		f.MaxRounds = rule.MaxRounds
		fmt.Fprintf(e.stderr, "rigor: resuming the bisect of %s: %d %s done\n", f.Point, len(f.Steps), plural(len(f.Steps), "step", "steps"))
		if n := b.adoptInterrupted(); n > 0 {
			fmt.Fprintf(e.stderr, "rigor: %d %s of the interrupted round %s kept and committed with the next round\n", n, plural(n, "record", "records"), plural(n, "is", "are"))
		}
	}
	for {
		if ctx.Err() != nil {
			return &runFailedError{interrupted: true}
		}
		a := bisect.Next(&f.State, rule)
		if a.Kind == bisect.Done {
			return b.finish(a.Outcome)
		}
		items := []string{f.GoodCommit, f.BadCommit}
		phase, k := 0, len(f.Endpoints)+1
		if a.Kind == bisect.MeasureStep {
			hash := f.Commits[a.Index].Hash
			last := len(f.Steps) - 1
			if last < 0 || f.Steps[last].Commit != hash || f.Steps[last].Verdict != "" {
				f.Steps = append(f.Steps, bisect.Step{Commit: hash})
				last++
			}
			// A step resumed by --continue is prepared again (found built).
			if reason := b.prepareCommit(ctx, hash); reason != "" {
				if ctx.Err() != nil {
					return &runFailedError{interrupted: true}
				}
				f.Steps[last].Verdict, f.Steps[last].Reason = bisect.Skip, reason
				fmt.Fprintf(e.stderr, "rigor: skip %.12s: %s\n", hash, reason)
				if err := b.save(fmt.Sprintf("rigor bisect %s: skip %.12s", f.Point, hash)); err != nil {
					return err
				}
				continue
			}
			items = append(items, hash)
			phase, k = last+1, len(f.Steps[last].Rounds)+1
		}
		round, failed, err := b.round(ctx, items, phase, k)
		if err != nil {
			return err
		}
		what := "endpoints"
		switch {
		case failed != "" && phase == 0:
			return fmt.Errorf("an endpoint's run failed, so nothing can be compared: %s", failed)
		case failed != "":
			s := &f.Steps[phase-1]
			s.Verdict, s.Reason = bisect.Skip, failed
			fmt.Fprintf(e.stderr, "rigor: skip %.12s: %s\n", s.Commit, failed)
			what = "skip " + s.Commit[:12]
		case phase == 0:
			f.Endpoints = append(f.Endpoints, round)
		default:
			s := &f.Steps[phase-1]
			s.Rounds = append(s.Rounds, round)
			what = s.Commit[:12]
		}
		before := verdicts(f)
		next := bisect.Next(&f.State, rule) // records a verdict the round decided
		for i, s := range f.Steps {
			if i < len(before) && before[i] == "" && s.Verdict != "" && s.Verdict != bisect.Skip {
				d := bisect.DecideStep(s.Rounds, endpointsUp(f), rule)
				fmt.Fprintf(e.stderr, "rigor: %.12s is %s after %d %s (against good %s, against bad %s)\n", s.Commit, s.Verdict,
					len(s.Rounds), plural(len(s.Rounds), "round", "rounds"), fmtChange(d.VsGood), fmtChange(d.VsBad))
			}
		}
		_ = next
		if err := b.save(fmt.Sprintf("rigor bisect %s: round %d of %s", f.Point, k, what)); err != nil {
			return err
		}
	}
}

// adoptInterrupted finds the records of this bisect that a killed rigor
// wrote and did not commit (the round it was in), and adds them to the
// next commit: they are ordinary records, and the module stays clean.
// It returns how many.
func (b *bisector) adoptInterrupted() int {
	dir := filepath.Join(b.store.Dir, filepath.FromSlash(b.f.Experiment))
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	since, _, _ := strings.Cut(b.f.Invocation, "-")
	var paths []string
	for _, d := range ents {
		id, ok := strings.CutSuffix(d.Name(), ".json")
		if ok && !d.IsDir() && results.IsRunID(id) && id >= since {
			paths = append(paths, filepath.Join(dir, d.Name()))
		}
	}
	un, err := b.store.Uncommitted(paths)
	if err != nil {
		return 0
	}
	n := 0
	for _, p := range un {
		r, err := results.Load(p)
		if err != nil || !strings.HasPrefix(r.Invocation, b.f.Invocation+"-") {
			continue
		}
		b.rec.Add(p, b.store.RawDir(r.Experiment, r.ID))
		n++
	}
	return n
}

func verdicts(f *bisect.File) []bisect.Verdict {
	var v []bisect.Verdict
	for _, s := range f.Steps {
		v = append(v, s.Verdict)
	}
	return v
}

func endpointsUp(f *bisect.File) bool { return bisect.EndpointChange(f.Rounds()).MeanLog > 0 }

// derived is the experiment's lock at another engine commit: the same
// model, flags and patches.
func (b *bisector) derived(hash string) *lock.Entry {
	d := *b.entry
	d.Engine.Commit, d.Engine.Kind = hash, gitsrc.KindCommit
	return &d
}

// prepareCommit builds (or finds built) the engine at hash, and returns
// why the commit is skipped, or "".
func (b *bisector) prepareCommit(ctx context.Context, hash string) string {
	if _, ok := b.prepared[hash]; ok {
		return ""
	}
	if err := b.ensureRunner(ctx); err != nil {
		return err.Error()
	}
	entry := b.derived(hash)
	prog := newPrepareProgress(b.e.stderr, engineLabel(b.x, entry))
	pctx := prog.attach(ctx, b.runner)
	prog.run()
	prep, err := b.runner.Prepare(pctx, b.x, entry)
	prog.close()
	b.runner.Progress = func(msg string) { fmt.Fprintf(b.e.stderr, "rigor: %s\n", msg) }
	b.runner.BuildProgress, b.runner.BuildLog = nil, nil
	if err != nil {
		var pe *gitsrc.PatchError
		if errors.As(err, &pe) {
			c := *pe
			if r, rerr := filepath.Rel(b.root, c.Patch); rerr == nil && filepath.IsAbs(c.Patch) {
				c.Patch = filepath.ToSlash(r)
			}
			return c.Error()
		}
		msg, _, _ := strings.Cut(err.Error(), "\n")
		return "it does not build: " + msg
	}
	b.prepared[hash] = prep
	if hash != b.f.GoodCommit && hash != b.f.BadCommit {
		b.built++
	}
	return ""
}

func (b *bisector) ensureRunner(ctx context.Context) error {
	if b.runner != nil {
		return nil
	}
	detected, err := b.e.detectRig(ctx)
	if err != nil {
		return fmt.Errorf("detecting the rig: %w", err)
	}
	r := b.e.runner(b.root)
	if fp, err := results.LoadFingerprinter(b.e.cfg().Cache); err == nil {
		r.Fingerprinter, b.store.Fingerprinter = fp, fp
	}
	r.Rig, r.Timeout, r.Offline = detected, b.c.Timeout, b.c.Offline
	b.runner = r
	return nil
}

// round runs one round of the commits (the endpoints first in the list;
// the order they run in is shuffled) and returns their values, or why a
// run failed.
func (b *bisector) round(ctx context.Context, hashes []string, phase, k int) (bisect.Round, string, error) {
	for _, h := range hashes[:2] {
		if reason := b.prepareCommit(ctx, h); reason != "" {
			if ctx.Err() != nil {
				return bisect.Round{}, "", &runFailedError{interrupted: true}
			}
			return bisect.Round{}, "", withHint(fmt.Errorf("the endpoint %.12s cannot be measured: %s", h, reason), "a bisect needs both endpoints built and running")
		}
	}
	var items []run.Item
	for _, h := range hashes {
		items = append(items, run.Item{Prep: b.prepared[h], Points: []*spec.Point{b.point}})
	}
	vals := map[string]float64{}
	ids := map[string]string{}
	failed := ""
	sink := func(pr *run.PointRun) error {
		if _, err := b.rec.Record(pr.Record, pr.Raw); err != nil {
			return fmt.Errorf("writing the record of %s: %w", pr.Point.ID, err)
		}
		commit := pr.Record.Engine.Commit
		ids[commit] = pr.Record.ID
		v, ok := b.value(pr.Record)
		switch {
		case pr.Record.Status != results.StatusOK:
			failed = fmt.Sprintf("its run %s %s", pr.Record.ID, describe(pr.Record))
		case !ok:
			failed = fmt.Sprintf("its run %s reports no %s", pr.Record.ID, b.f.Metric)
		default:
			vals[commit] = v
			return nil
		}
		if commit == b.f.GoodCommit || commit == b.f.BadCommit {
			failed = fmt.Sprintf("%.12s: %s", commit, failed)
		}
		return nil
	}
	inv := fmt.Sprintf("%s-%d", b.f.Invocation, phase)
	err := b.runner.RunRounds(ctx, items, run.Rounds{Invocation: inv, Count: 1, Seed: b.f.Seed + uint64(phase), Start: k}, sink)
	if ctx.Err() != nil {
		b.commit(fmt.Sprintf("rigor bisect %s: interrupted", b.f.Point))
		return bisect.Round{}, "", &runFailedError{interrupted: true}
	}
	if err != nil {
		return bisect.Round{}, "", err
	}
	r := bisect.Round{Good: vals[b.f.GoodCommit], Bad: vals[b.f.BadCommit], Runs: []string{ids[b.f.GoodCommit], ids[b.f.BadCommit]}}
	if len(hashes) > 2 {
		r.Commit = vals[hashes[2]]
		r.Runs = append(r.Runs, ids[hashes[2]])
	}
	return r, failed, nil
}

// value is the bisected figure of a record: its metric, of the test the
// bisect's first run reported.
func (b *bisector) value(r *results.Run) (float64, bool) {
	for _, m := range r.Metrics {
		if m.Name != b.f.Metric || (b.f.Test != "" && m.Test != b.f.Test) {
			continue
		}
		if b.f.Test == "" {
			b.f.Test = m.Test
		}
		return m.Value, m.Value > 0
	}
	return 0, false
}

// save writes the state and commits it with the round's records.
func (b *bisector) save(msg string) error {
	if err := bisect.Write(b.path, b.f); err != nil {
		return err
	}
	b.rec.Add(b.path)
	return b.commit(msg)
}

func (b *bisector) commit(msg string) error {
	if err := b.e.commitRecorded(b.rec, msg, "the bisect's records are"); err != nil {
		return notCommitted("the bisect's records and state are", err)
	}
	return nil
}

// finish prints the outcome and keeps it in the state.
func (b *bisector) finish(o bisect.Outcome) error {
	e, f := b.e, b.f
	short := func(i int) string { return f.Commits[i].Hash[:12] }
	sum := &bisect.Summary{Ending: o.Ending, LastGood: f.Commits[o.LastGood].Hash, FirstBad: f.Commits[o.FirstBad].Hash}
	for _, i := range o.Skipped {
		sum.Skipped = append(sum.Skipped, f.Commits[i].Hash)
	}
	figure := f.Metric
	if f.Test != "" {
		figure += " " + f.Test
	}
	ch := o.Change
	builds := 0
	for _, s := range f.Steps {
		if s.Verdict != bisect.Skip || !strings.HasPrefix(s.Reason, "patch ") {
			builds++
		}
	}
	rounds := len(f.Rounds())
	switch o.Ending {
	case bisect.Found:
		sum.First = f.Commits[o.First].Hash
		cm := f.Commits[o.First]
		fmt.Fprintf(e.stdout, "first bad commit: %s %s\n", cm.Hash[:12], cm.Subject)
		fmt.Fprintf(e.stdout, "  author date %s\n", cm.Date)
		if cm.Merge {
			fmt.Fprintf(e.stdout, "  a merge: the walk followed first parents, so the change is one of the commits it brought in\n")
		}
		at := bisect.ChangeAt(&f.State, o.LastGood, o.First)
		fmt.Fprintf(e.stdout, "  %s: %s at this commit, from %s (the last good) to it over %d rounds; the endpoints: %s over %d paired rounds\n",
			figure, fmtChange(at), short(o.LastGood), at.Rounds, fmtChange(ch), ch.Rounds)
	case bisect.CouldNotSplit:
		fmt.Fprintf(e.stdout, "could not split %s..%s: the change lies in this range of %d %s\n", short(o.LastGood), short(o.FirstBad),
			o.FirstBad-o.LastGood, plural(o.FirstBad-o.LastGood, "commit", "commits"))
		if o.Undecided >= 0 {
			sum.Undecided = f.Commits[o.Undecided].Hash
			for _, s := range f.Steps {
				if s.Commit == sum.Undecided {
					d := bisect.DecideStep(s.Rounds, ch.MeanLog > 0, f.Rule())
					why := fmt.Sprintf("not told from either endpoint in %d rounds", len(s.Rounds))
					if d.Between {
						why = "it measures between the endpoints (a part of the change)"
					}
					fmt.Fprintf(e.stdout, "  %s %s: %s (against good %s, against bad %s)\n", short(o.Undecided), f.Commits[o.Undecided].Subject, why, fmtChange(d.VsGood), fmtChange(d.VsBad))
				}
			}
		} else {
			fmt.Fprintf(e.stdout, "  every commit between them was skipped\n")
		}
		fmt.Fprintf(e.stdout, "  %s: %s from good to bad over %d paired rounds\n", figure, fmtChange(ch), ch.Rounds)
	case bisect.NoChangeEnding:
		fmt.Fprintf(e.stdout, "could not split %s..%s: no change between the endpoints that %d rounds could tell from the noise\n", short(o.LastGood), short(o.FirstBad), len(f.Endpoints))
		fmt.Fprintf(e.stdout, "  %s: %s from good to bad (p %.3f); --max-rounds adds rounds\n", figure, fmtChange(ch), ch.P)
	}
	for _, i := range o.Skipped {
		for _, s := range f.Steps {
			if s.Commit == f.Commits[i].Hash {
				fmt.Fprintf(e.stdout, "skipped %s %s: %s\n", short(i), f.Commits[i].Subject, s.Reason)
			}
		}
	}
	fmt.Fprintf(e.stdout, "%d %s measured between the endpoints (%d built), %d rounds; 'rigor bisect %s --log' shows the steps\n",
		len(f.Steps), plural(len(f.Steps), "commit", "commits"), builds, rounds, f.Experiment)
	f.Outcome = sum
	if err := b.save(fmt.Sprintf("rigor bisect %s: %s", f.Point, o.Ending)); err != nil {
		return err
	}
	return bisectEnd(f, o)
}

// bisectEndError is a bisect that named no commit: its outcome is
// printed and committed, and it exits with the ending's own code.
type bisectEndError struct {
	msg  string
	code int
}

func (e *bisectEndError) Error() string { return e.msg }
func (e *bisectEndError) ExitCode() int { return e.code }

// bisectEnd is nil for a bisect that found the first bad commit, else the
// error (and exit code) of its ending: no change between the endpoints,
// a range it could not split, a range whose every commit was skipped.
func bisectEnd(f *bisect.File, o bisect.Outcome) error {
	short := func(i int) string { return f.Commits[i].Hash[:12] }
	log := "'rigor bisect " + f.Experiment + " --log' shows the steps"
	var err *bisectEndError
	switch {
	case o.Ending == bisect.Found:
		return nil
	case o.Ending == bisect.NoChangeEnding:
		err = &bisectEndError{fmt.Sprintf("the endpoints %s and %s did not differ in %d %s", short(o.LastGood), short(o.FirstBad),
			len(f.Endpoints), plural(len(f.Endpoints), "round", "rounds")), ExitBisectNoChange}
		return withHint(fmt.Errorf("rigor bisect named no commit: %w", err), "a larger --max-rounds tells a smaller change from the noise; "+log)
	case o.Undecided >= 0:
		err = &bisectEndError{fmt.Sprintf("it could not split %s..%s: %s stayed undecided", short(o.LastGood), short(o.FirstBad), short(o.Undecided)), ExitBisectUnsplit}
		return withHint(fmt.Errorf("rigor bisect named no commit: %w", err), "the change lies in that range; "+log)
	default:
		err = &bisectEndError{fmt.Sprintf("every commit between %s and %s was skipped", short(o.LastGood), short(o.FirstBad)), ExitBisectSkipped}
		return withHint(fmt.Errorf("rigor bisect named no commit: %w", err), "each skipped commit is named above with why; "+log)
	}
}

// fmtChange is a change with its 95% interval.
func fmtChange(c bisect.Change) string {
	if math.IsNaN(c.Percent) {
		return "no figure"
	}
	if math.IsNaN(c.Low) {
		return fmt.Sprintf("%+.1f%%", c.Percent)
	}
	return fmt.Sprintf("%+.1f%% (95%% CI %+.1f%% to %+.1f%%)", c.Percent, c.Low, c.High)
}

// printLog prints the steps of a bisect.
func (c *bisectCmd) printLog(e *env, f *bisect.File) {
	fmt.Fprintf(e.stdout, "bisect of %s, %s %s, from %s (%.12s) to %s (%.12s), %d commits between\n", f.Point, f.Metric, f.Test, f.Good, f.GoodCommit, f.Bad, f.BadCommit, len(f.Commits)-2)
	ep := bisect.DecideEndpoints(f.Endpoints, f.Rule())
	fmt.Fprintf(e.stdout, "endpoints: %s after %d rounds: bad against good %s\n", ep.Verdict, len(f.Endpoints), fmtChange(ep.Change))
	printRuns(e, f.Endpoints, 2)
	up := endpointsUp(f)
	for i, s := range f.Steps {
		idx := f.Index(s.Commit)
		subj := ""
		if idx >= 0 {
			subj = f.Commits[idx].Subject
		}
		verdict := string(s.Verdict)
		if verdict == "" {
			verdict = "running"
		}
		fmt.Fprintf(e.stdout, "step %d: %.12s %s: %s", i+1, s.Commit, subj, verdict)
		if s.Verdict == bisect.Skip {
			fmt.Fprintf(e.stdout, " (%s)\n", s.Reason)
			continue
		}
		d := bisect.DecideStep(s.Rounds, up, f.Rule())
		fmt.Fprintf(e.stdout, " after %d %s: against good %s, against bad %s\n", len(s.Rounds), plural(len(s.Rounds), "round", "rounds"), fmtChange(d.VsGood), fmtChange(d.VsBad))
		printRuns(e, s.Rounds, 3)
	}
	if o := f.Outcome; o != nil {
		fmt.Fprintf(e.stdout, "outcome: %s", o.Ending)
		if o.First != "" {
			fmt.Fprintf(e.stdout, ": first bad commit %.12s", o.First)
		} else {
			fmt.Fprintf(e.stdout, ": %.12s..%.12s", o.LastGood, o.FirstBad)
		}
		fmt.Fprintln(e.stdout)
	}
}

// printRuns prints the run ids of rounds, one line per round.
func printRuns(e *env, rounds []bisect.Round, n int) {
	names := []string{"good", "bad", "commit"}
	for k, r := range rounds {
		var parts []string
		for i, id := range r.Runs[:min(n, len(r.Runs))] {
			parts = append(parts, names[i]+" "+id)
		}
		fmt.Fprintf(e.stdout, "  round %d: %s\n", k+1, strings.Join(parts, ", "))
	}
}

// bisectOrders reads the bisects kept under results/.bisect and returns,
// per experiment, the commits of its bisect in history order, for the
// report's view over commits. A file that cannot be read is left out.
func bisectOrders(resultsDir string) map[string][]string {
	out := map[string][]string{}
	_ = filepath.WalkDir(filepath.Join(resultsDir, ".bisect"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
			return nil
		}
		f, err := bisect.Read(p)
		if err != nil {
			return nil
		}
		for _, c := range f.Commits {
			out[f.Experiment] = append(out[f.Experiment], c.Hash)
		}
		return nil
	})
	return out
}

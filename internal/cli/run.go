package cli

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rigorbench/rigor/internal/compare"
	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/hoststate"
	"github.com/rigorbench/rigor/internal/lock"
	"github.com/rigorbench/rigor/internal/report/text"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/rig"
	"github.com/rigorbench/rigor/internal/run"
	"github.com/rigorbench/rigor/internal/spec"
)

type runCmd struct {
	IDs            []string      `arg:"" name:"id" help:"Experiment or point ids (several with --rounds: each round runs each once)."`
	RequireQuiet   bool          `help:"Refuse to start while other processes take more than --busy-share of the cores; wait up to --quiet-wait for the machine to settle first."`
	QuietWait      time.Duration `default:"2m" help:"How long --require-quiet waits for the machine to settle."`
	BusyShare      float64       `default:"0.25" help:"The share of the cores other processes may take before the machine counts as busy (a warning in the record; --require-quiet refuses)."`
	OrderSeed      *uint64       `name:"order-seed" placeholder:"N" help:"Shuffle the rounds' orders from N (recorded as roundsSeed) to repeat an invocation's order; default: a random seed."`
	DryRun         bool          `help:"Print the plan and stop: nothing is built, started or recorded."`
	IgnoreRequires bool          `help:"Run even when the rig does not meet #requires; the record says so."`
	NoCommit       bool          `help:"Write the records but do not commit them to git."`
	CommitEach     bool          `help:"Commit each point's record as soon as it is written (default: one commit for the whole invocation)."`
	Explain        bool          `help:"Print each warning whole (by default one short line per kind after the result; the record holds them whole either way)."`
	Timeout        time.Duration `help:"Bound one bench process (default: the experiment's timeoutSeconds, else 1h)."`
	Offline        bool          `help:"Use only what is cached (git mirrors, engine installs)."`
	Verify         bool          `help:"Read every model file and engine binary again to hash it, trusting nothing from the stat cache; the record says hashes: read."`
	JSON           bool          `help:"Print the records written, as JSON."`
	Yes            bool          `help:"Start without asking even when the run is large (more than 1000 runs or an ETA over 24h: RIGOR_CONFIRM_RUNS, RIGOR_CONFIRM_ETA); off a terminal such a run is refused without it."`

	slurmFlags // --slurm and its options: run_slurm.go
}

func (runCmd) Help() string {
	return `Runs a locked experiment (every point of a sweep) exactly as locked: it refuses
an unlocked or stale experiment, a rig that does not meet #requires and model
files that differ from the lock; builds or installs the engine (cached by
content); starts the rpc-server workers and waits until each accepts
connections; runs the bench with the locked argv and a controlled environment;
stops every process it started on success, failure, timeout and Ctrl-C; and
records every run, failures included, as results/<experiment>/<run id>.json,
committed to git: one commit for the whole invocation (every point of a
sweep, and the runs an interruption cut short), or one per point with
--commit-each. Running from an experiment or lockfile that differs from the
last commit warns: the records would name a spec no commit holds.

Model files and engine binaries are hashed and compared with the lock and
the build. A file whose size, mtime, ctime, inode and device are those it
had when it was last read is trusted from the stat cache (the record says
"hashes": "cached"); --verify reads every file again ("hashes": "read"),
and 'rigor cache verify' re-hashes everything the cache vouches for.

When every swept flag is one llama-bench sweeps itself, the sweep runs as one
llama-bench process (the model loads once) and its rows are split into the
points' records.

--rounds K runs every listed experiment or point K times, in rounds: each
round runs each execution once, in an order shuffled per round from a
recorded seed (a randomized block design), so that load that comes and goes
falls on every experiment alike; rigor diff then compares the rounds, as
pairs where they ran in the same round. Every record holds the machine's
state while its engine ran (load, the CPU other processes took, clocks,
temperatures, memory, GPUs) and warns when the machine was busy.

A run larger than 1000 runs (points × rounds) or with an ETA over 24h
(each execution's latest earlier ok run, times the rounds) asks before it
starts on a terminal, and off one (a pipe, CI) is refused unless --yes;
RIGOR_CONFIRM_RUNS and RIGOR_CONFIRM_ETA change the limits.

Examples:
  rigor run example/smoke
  rigor run 'example/smokeBatch[b=16]' --dry-run
  rigor run example/smokeLong --no-commit
  rigor run example/smokeBatch --commit-each
  rigor run example/smoke example/smokeLong --rounds 3`
}

// runFailedError reports runs that were recorded but did not succeed.
type runFailedError struct {
	failed, total int
	interrupted   bool
}

func (e *runFailedError) Error() string {
	if e.interrupted {
		return "interrupted: the runs so far are recorded"
	}
	return fmt.Sprintf("%d of %d %s did not succeed (recorded)", e.failed, e.total, plural(e.total, "run", "runs"))
}

func (e *runFailedError) ExitCode() int {
	if e.interrupted {
		return ExitInterrupted
	}
	return ExitRunFailed
}

func (c *runCmd) Run(e *env) error {
	if err := c.checkFlags(); err != nil {
		return err
	}
	if c.Slurm {
		return c.submitSlurm(e)
	}
	root, xs, err := c.load(e)
	if err != nil {
		return err
	}
	if c.DryRun {
		return c.dryRuns(e, root, xs)
	}
	store := e.store(root)
	previous := latestRuns(store, xs)
	if err := c.confirmSize(e, xs, previous); err != nil {
		return err
	}
	if err := checkWritable(store, xs); err != nil {
		return err
	}
	// Records made from an experiment or lock that no commit holds say
	// so: months later, that is what makes a rerun impossible.
	dirty := map[string][]string{}
	for _, ex := range xs {
		dirty[ex.x.ID] = uncommittedFiles(store, root, ex.x)
		if !c.NoCommit {
			warnUncommitted(e, dirty[ex.x.ID])
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	r, items, err := c.prepare(ctx, e, root, store, xs)
	if err != nil {
		return err
	}
	if c.RequireQuiet {
		if err := c.waitQuiet(ctx, e); err != nil {
			return err
		}
	}
	rounds := c.rounds()
	s := &runSink{c: c, e: e, rec: &results.Recorder{Store: store, Fallback: results.Fallback(e.cfg().FallbackDir), Dirty: dirty}}
	runErr := r.RunRounds(ctx, items, rounds, s.record)
	s.commitAll()
	written := s.written()
	c.printRuns(e, store, written, previous, rounds)
	printRunWarnings(e, s.warnings, c.Explain)
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return runErr
	}
	if ctx.Err() != nil {
		return &runFailedError{interrupted: true}
	}
	if s.commitErr != nil {
		return notCommitted("the records are", s.commitErr)
	}
	if s.failed > 0 {
		return &runFailedError{failed: s.failed, total: len(written)}
	}
	return nil
}

func (c *runCmd) checkFlags() error {
	if c.Rounds < 1 {
		return withHint(fmt.Errorf("--rounds=%d: want 1 or more", c.Rounds), "--rounds 5 runs every listed experiment five times, interleaved")
	}
	if c.BusyShare <= 0 || c.BusyShare > 1 {
		return withHint(fmt.Errorf("--busy-share=%g: want a share of the cores above 0 and at most 1", c.BusyShare), "0.25 lets other processes take a quarter of the cores")
	}
	return nil
}

// runExperiment is one experiment of a run with the points listed of it.
type runExperiment struct {
	x      *spec.Experiment
	entry  *lock.Entry
	points []*spec.Point
}

// load loads, checks and locks each listed experiment once, however many
// of its points are listed.
func (c *runCmd) load(e *env) (string, []*runExperiment, error) {
	var xs []*runExperiment
	byID := map[string]*runExperiment{}
	var root string
	for _, id := range c.IDs {
		set, x, points, entry, err := e.lockedExperiment(id, true)
		if err != nil {
			return "", nil, err
		}
		root = set.Root
		ex := byID[x.ID]
		if ex == nil {
			ex = &runExperiment{x: x, entry: entry}
			byID[x.ID] = ex
			xs = append(xs, ex)
		}
		for _, p := range points {
			if !slices.ContainsFunc(ex.points, func(q *spec.Point) bool { return q.ID == p.ID }) {
				ex.points = append(ex.points, p)
			}
		}
	}
	return root, xs, nil
}

func (c *runCmd) dryRuns(e *env, root string, xs []*runExperiment) error {
	for i, ex := range xs {
		if i > 0 {
			fmt.Fprintln(e.stdout)
		}
		if err := c.dryRun(e, root, ex.x, ex.points, ex.entry); err != nil {
			return err
		}
	}
	return nil
}

// latestRuns returns the experiments' earlier runs, read before this one
// adds its own: for the estimate of how long it takes and the comparison
// printed at the end.
func latestRuns(store *results.Store, xs []*runExperiment) []*results.Run {
	var previous []*results.Run
	for _, ex := range xs {
		prev, _, _ := store.Latest(results.Filter{Experiment: ex.x.ID})
		previous = append(previous, prev...)
	}
	return previous
}

// checkWritable checks that each experiment's runs can be recorded: a run
// that cannot be is measured for nothing.
func checkWritable(store *results.Store, xs []*runExperiment) error {
	for _, ex := range xs {
		if err := store.CheckWritable(ex.x.ID); err != nil {
			return withHint(err, "make results/ writable and give it space, then run again; nothing was started")
		}
	}
	return nil
}

// prepare checks the rig against each experiment's #requires, configures
// the runner and prepares (builds or installs) each experiment's engine.
func (c *runCmd) prepare(ctx context.Context, e *env, root string, store *results.Store, xs []*runExperiment) (*run.Runner, []run.Item, error) {
	detected, err := e.detectRig(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("detecting the rig: %w", err)
	}
	ignored, err := c.checkRequires(e, detected, xs)
	if err != nil {
		return nil, nil, err
	}
	r := e.runner(root)
	// Secret passEnv values are recorded as fingerprints under this
	// machine's key, never in the clear.
	if fp, err := results.LoadFingerprinter(e.cfg().Cache); err == nil {
		r.Fingerprinter, store.Fingerprinter = fp, fp
	}
	r.Rig, r.IgnoredRequires, r.Timeout, r.Offline, r.BusyShare = detected, ignored, c.Timeout, c.Offline, c.BusyShare
	r.Verify = c.Verify
	var items []run.Item
	for _, ex := range xs {
		prog := newPrepareProgress(e.stderr, engineLabel(ex.x, ex.entry))
		actx, err := e.withArchive(ctx, c.Offline, prog.say)
		if err != nil {
			return nil, nil, err
		}
		pctx := prog.attach(actx, r)
		prog.run()
		prep, err := r.Prepare(pctx, ex.x, ex.entry)
		prog.close()
		if err != nil {
			return nil, nil, explain(err, ex.x.ID)
		}
		items = append(items, run.Item{Prep: prep, Points: ex.points})
	}
	if err := c.prepareBaselines(ctx, e, r, items); err != nil {
		return nil, nil, err
	}
	r.Progress = func(msg string) { fmt.Fprintf(e.stderr, "rigor: %s\n", msg) }
	r.BuildProgress, r.BuildLog = nil, nil
	return r, items, nil
}

// prepareBaselines prepares the baselines that the experiments'
// quality.measure names and that are not run themselves: each is loaded,
// must be locked and current, and its engine built and model verified, as
// for a run.
func (c *runCmd) prepareBaselines(ctx context.Context, e *env, r *run.Runner, items []run.Item) error {
	byID := map[string]*run.Prepared{}
	for _, it := range items {
		byID[it.Prep.Experiment.ID] = it.Prep
	}
	for _, it := range items {
		id := run.BaselineOf(it.Prep.Experiment)
		if id == "" || id == it.Prep.Experiment.ID {
			continue
		}
		if byID[id] == nil {
			_, bx, _, entry, err := e.lockedExperiment(id, false)
			if err != nil {
				return fmt.Errorf("the quality baseline of %s: %w", it.Prep.Experiment.ID, err)
			}
			prog := newPrepareProgress(e.stderr, engineLabel(bx, entry))
			pctx := prog.attach(ctx, r)
			prog.run()
			prep, err := r.Prepare(pctx, bx, entry)
			prog.close()
			if err != nil {
				return explain(err, bx.ID)
			}
			byID[id] = prep
		}
		if r.Baselines == nil {
			r.Baselines = map[string]*run.Prepared{}
		}
		r.Baselines[id] = byID[id]
	}
	return nil
}

// checkRequires refuses a rig that does not meet an experiment's
// #requires, or with --ignore-requires returns the requirements not met.
func (c *runCmd) checkRequires(e *env, detected *rig.Rig, xs []*runExperiment) ([]string, error) {
	var ignored []string
	for _, ex := range xs {
		mm := rig.Check(ex.x.Requires, detected)
		if len(mm) > 0 && !c.IgnoreRequires {
			for _, m := range mm {
				fmt.Fprintf(e.stderr, "rigor: error: %s: #requires.%s: %s\n", spec.FormatPos(m.Pos, e.wd), m.Path, m.String())
			}
			return nil, withHint(fmt.Errorf("this rig does not meet the #requires of %s", ex.x.ID), "'rigor rig' shows what was detected; --ignore-requires runs anyway and records that it did")
		}
		for _, m := range mm {
			ignored = append(ignored, m.Path+": "+m.String())
		}
	}
	return ignored, nil
}

// rounds is the invocation's rounds and the seed of their orders.
func (c *runCmd) rounds() run.Rounds {
	rounds := run.Rounds{Count: c.Rounds, Invocation: results.NewRunID(time.Now())}
	if c.OrderSeed != nil {
		rounds.Seed = *c.OrderSeed
	} else {
		// Below 2^53, so that the recorded seed survives JSON readers
		// that hold numbers as doubles.
		rounds.Seed = mrand.Uint64N(1 << 53)
	}
	return rounds
}

// runSink records each point's run as it ends, and commits.
type runSink struct {
	c         *runCmd
	e         *env
	rec       *results.Recorder
	warnings  []runWarning // printed after the result (printRunWarnings)
	failed    int
	commitErr error
}

// record records one point's run: written (or saved in the fallback
// directory, its samples printed), reported, and with --commit-each
// committed.
func (s *runSink) record(pr *run.PointRun) error {
	e, c := s.e, s.c
	path, err := s.rec.Record(pr.Record, pr.Raw)
	var fe *results.FallbackError
	if errors.As(err, &fe) {
		// Nothing measured is lost: the record goes to the fallback
		// directory, and its samples are printed.
		printSummary(e, []*results.Run{pr.Record})
		if fe.FallbackErr != nil {
			return fmt.Errorf("writing the record of %s: %w (and to the fallback directory: %v)", pr.Point.ID, fe.Err, fe.FallbackErr)
		}
		return withHint(fmt.Errorf("writing the record of %s: %w", pr.Point.ID, fe.Err),
			"the record is saved at "+fe.Saved+"; copy it into results/"+pr.Record.Experiment+"/ and commit it once the problem is fixed")
	}
	if err != nil {
		return fmt.Errorf("writing the record of %s: %w", pr.Point.ID, err)
	}
	rel, _ := filepath.Rel(e.wd, path)
	if pr.Record.Status != results.StatusOK {
		s.failed++
	}
	fmt.Fprintf(e.stderr, "rigor: %s: %s → %s\n", pr.Point.ID, describe(pr.Record), rel)
	// Warnings come after the result (printRunWarnings).
	if busy, why := pr.Record.Machine.Busy(c.BusyShare); busy && len(pr.Record.Metrics) > 0 {
		s.warnings = append(s.warnings, busyWarning(pr.Point.ID, why))
	}
	for _, w := range pr.EngineWarnings {
		s.warnings = append(s.warnings, engineWarning(pr.Point.ID, w))
	}
	if c.CommitEach && !c.NoCommit && s.commitErr == nil {
		if s.commitErr = e.commitRecorded(s.rec, commitMessage([]*results.Run{pr.Record}, pr.Point.ID), rel+" is"); s.commitErr != nil {
			fmt.Fprintf(e.stderr, "rigor: warning: the record is kept at %s but was not committed: %v\n", rel, s.commitErr)
		}
	}
	return nil
}

// commitAll makes the invocation's one commit (without --commit-each),
// even when it was interrupted: what was recorded is kept.
func (s *runSink) commitAll() {
	e, c := s.e, s.c
	recorded := s.rec.Recorded()
	if c.CommitEach || c.NoCommit || len(recorded) == 0 {
		return
	}
	what, kept := "the records are", "the records are kept in results/"
	if len(recorded) == 1 {
		rel := relTo(recorded[0].Path, e.wd)
		what, kept = rel+" is", "the record is kept at "+rel
	}
	if s.commitErr = e.commitRecorded(s.rec, commitMessage(s.written(), strings.Join(c.IDs, " ")), what); s.commitErr != nil {
		fmt.Fprintf(e.stderr, "rigor: warning: %s but was not committed: %v\n", kept, s.commitErr)
	}
}

// written returns the records written, in order.
func (s *runSink) written() []*results.Run {
	var out []*results.Run
	for _, r := range s.rec.Recorded() {
		out = append(out, r.Run)
	}
	return out
}

// printRuns prints the records written (as JSON with --json), and how
// they compare with the point's previous run.
func (c *runCmd) printRuns(e *env, store *results.Store, written, previous []*results.Run, rounds run.Rounds) {
	if c.JSON {
		if written == nil {
			written = []*results.Run{}
		}
		e.printJSON(written)
		return
	}
	printSummary(e, written)
	if c.Rounds > 1 {
		fmt.Fprintf(e.stdout, "\n%d %s of invocation %s (order seed %d); 'rigor diff' compares the experiments of one invocation round by round, as pairs\n",
			c.Rounds, plural(c.Rounds, "round", "rounds"), rounds.Invocation, rounds.Seed)
	} else {
		compareWithPrevious(e, store, previous, written)
	}
}

// commitMessage is the message of the commit of runs made by 'rigor run
// id': the status of a single run, else a count by status and one line
// per run.
func commitMessage(runs []*results.Run, id string) string {
	if len(runs) == 1 {
		return fmt.Sprintf("rigor run %s: %s\n\nrun %s", runs[0].Point, runs[0].Status, runs[0].ID)
	}
	count := map[string]int{}
	var order []string
	for _, r := range runs {
		if count[r.Status] == 0 {
			order = append(order, r.Status)
		}
		count[r.Status]++
	}
	var parts []string
	for _, st := range order {
		parts = append(parts, fmt.Sprintf("%d %s", count[st], st))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "rigor run %s: %d runs, %s\n\n", id, len(runs), strings.Join(parts, ", "))
	for _, r := range runs {
		fmt.Fprintf(&b, "run %s  %s  %s\n", r.ID, r.Point, r.Status)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// uncommittedFiles returns the files of the experiment's package and its
// lockfile that differ from the last commit, relative to the module root.
func uncommittedFiles(store *results.Store, root string, x *spec.Experiment) []string {
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(x.Pos.Filename()), "*.cue"))
	files = append(files, lock.Path(root, x.Package))
	var present []string
	for _, f := range files {
		if _, err := os.Stat(f); err == nil {
			present = append(present, f)
		}
	}
	dirty, err := store.Uncommitted(present)
	if err != nil {
		return nil
	}
	var out []string
	for _, f := range dirty {
		out = append(out, filepath.ToSlash(relTo(f, root)))
	}
	return out
}

// warnUncommitted warns when the experiment's package or its lockfile
// differs from the last commit: the records would name a spec and a lock
// that no commit holds, and a Slurm job or a colleague could not check
// them out.
func warnUncommitted(e *env, names []string) {
	if len(names) == 0 {
		return
	}
	fmt.Fprintf(e.stderr, "rigor: warning: %s %s not committed: the records will name a spec or lock that no commit holds\n",
		strings.Join(names, ", "), plural(len(names), "is", "are"))
	fmt.Fprintf(e.stderr, "rigor: hint: commit them first: git add %s && git commit\n", strings.Join(names, " "))
}

// waitQuiet waits up to --quiet-wait for other processes to take less than
// --busy-share of the cores, and refuses to start when they do not.
func (c *runCmd) waitQuiet(ctx context.Context, e *env) error {
	fmt.Fprintf(e.stderr, "rigor: waiting up to %s for the machine to be quiet (other processes under %s of the cores)\n",
		c.QuietWait, strconv.FormatFloat(c.BusyShare, 'f', -1, 64))
	err := hoststate.Quiet(ctx, hoststate.QuietOptions{Threshold: c.BusyShare, Wait: c.QuietWait})
	var busy *hoststate.ErrBusy
	switch {
	case errors.As(err, &busy):
		return withHint(fmt.Errorf("--require-quiet: %w; nothing was started", err),
			"stop what else runs here ('top' shows it), or wait longer with --quiet-wait, or run without --require-quiet and let --rounds spread the load over every experiment alike")
	case err != nil:
		return err
	}
	return nil
}

func describe(r *results.Run) string {
	s := r.Status
	if r.Error != "" {
		s += ": " + r.Error
	}
	return s
}

// printSummary writes each run's metrics with their spread: names
// left-aligned, values right-aligned.
func printSummary(e *env, runs []*results.Run) {
	for _, r := range runs {
		fmt.Fprintf(e.stdout, "%s  %s  %s\n", r.Point, r.ID, r.Status)
		type line struct{ name, value, spread string }
		var lines []line
		nw, vw := 0, 0
		for _, m := range r.Metrics {
			// ± is the 95% CI of the mean, the spread min–max apart;
			// engine* metrics are the engine's own counters.
			l := line{name: strings.TrimSpace(m.Name + " " + m.Test)}
			l.value, l.spread = text.RunLine(m)
			if l.spread != "" {
				l.spread = "  " + l.spread
			}
			nw, vw = max(nw, len(l.name)), max(vw, len(l.value))
			lines = append(lines, l)
		}
		for _, l := range lines {
			fmt.Fprintf(e.stdout, "  %-*s  %*s%s\n", nw, l.name, vw, l.value, l.spread)
		}
	}
}

// dryRun prints the plan of every point with the paths a run would use.
func (c *runCmd) dryRun(e *env, root string, x *spec.Experiment, points []*spec.Point, entry *lock.Entry) error {
	r := e.runner(root)
	r.Offline = true
	plans, err := r.DryPlans(context.Background(), x, entry, points)
	if err != nil {
		return err
	}
	for i, dp := range plans {
		if i > 0 {
			fmt.Fprintln(e.stdout)
		}
		if len(dp.Points) > 1 {
			var ids []string
			for _, p := range dp.Points {
				ids = append(ids, p.ID)
			}
			fmt.Fprintf(e.stdout, "# %s: %d points in one process (dry run: nothing is started)\n", x.ID, len(dp.Points))
			fmt.Fprintf(e.stdout, "# points: %s\n", strings.Join(ids, ", "))
		} else {
			fmt.Fprintf(e.stdout, "# %s (dry run: nothing is started)\n", dp.Points[0].ID)
		}
		if !dp.Located && usesBinDir(dp.Plan) {
			fmt.Fprintf(e.stdout, "# <engine> is built or installed by the run\n")
		}
		writePlan(e.stdout, dp.Plan)
	}
	return nil
}

// usesBinDir reports whether a plan names the engine's bin directory
// (an endpoint's plan starts only the load generator).
func usesBinDir(p *engine.Plan) bool {
	for _, pp := range p.Processes {
		if strings.Contains(pp.Shell(), engine.BinDirPlaceholder) {
			return true
		}
	}
	return false
}

// compareWithPrevious prints, for each point run now that ran before, the
// comparison of this run with the latest earlier ok run of the point.
func compareWithPrevious(e *env, store *results.Store, previous []*results.Run, now []*results.Run) {
	for _, cur := range now {
		if cur.Status != results.StatusOK {
			continue
		}
		var last *results.Run
		for _, p := range previous {
			if p.Point == cur.Point && p.Status == results.StatusOK && (last == nil || p.Start.After(last.Start)) {
				last = p
			}
		}
		if last == nil {
			continue
		}
		a := compare.Side{Label: "previous " + last.ID, Runs: []results.Run{*last}}
		b := compare.Side{Label: "this run " + cur.ID, Runs: []results.Run{*cur}}
		rep, err := compare.Compare(a, b, compare.Options{History: history(store, a, b)})
		if err != nil {
			continue
		}
		fmt.Fprintf(e.stdout, "\n%s against its previous run %s (%s):\n", cur.Point, last.ID, last.Start.Format("2006-01-02 15:04"))
		text.WriteText(e.stdout, rep, 100)
	}
}

package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/rigorbench/rigor/internal/buildcache"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/engine/all"
	"github.com/rigorbench/rigor/internal/gitsrc"
	"github.com/rigorbench/rigor/internal/hf"
	"github.com/rigorbench/rigor/internal/hoststate"
	"github.com/rigorbench/rigor/internal/lock"
	"github.com/rigorbench/rigor/internal/redact"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/rig"
	"github.com/rigorbench/rigor/internal/spec"
)

// Runner runs the points of locked experiments and turns each execution
// into a result record.
type Runner struct {
	// Root is the module root.
	Root string
	// Cache is rigor's cache directory (builds, engines, synthetic models,
	// the hash cache).
	Cache string
	// HFCache is the Hugging Face hub cache (models--org--name/…).
	HFCache string
	// Hub downloads a locked hub corpus missing from HFCache; nil
	// downloads nothing.
	Hub *hf.Client
	// Getenv reads the caller's environment (internal/cli passes
	// os.LookupEnv); nil reads nothing.
	Getenv func(string) (string, bool)
	// Rig is the machine, recorded with every run.
	Rig *rig.Rig
	// RigorVersion is recorded with every run.
	RigorVersion string
	// IgnoredRequires lists the #requires mismatches a run goes ahead
	// despite (--ignore-requires); they are recorded as warnings.
	IgnoredRequires []string
	// Timeout overrides the experiment's timeoutSeconds when non-zero.
	Timeout time.Duration
	// ReadyTimeout overrides engine.rpc.readyTimeoutSeconds when non-zero.
	ReadyTimeout time.Duration
	// Grace is the time between SIGTERM and SIGKILL when stopping.
	Grace time.Duration
	// Offline forbids network access (git fetches, npm).
	Offline bool
	// Progress receives one line per step.
	Progress func(string)
	// BuildProgress receives build percentages.
	BuildProgress func(pct int, line string)
	// BuildLog receives build output.
	BuildLog io.Writer
	// Fingerprinter, when set, records a secret passEnv value as a keyed
	// fingerprint (so that diff can say whether it changed) instead of a
	// plain <redacted>.
	Fingerprinter *results.Fingerprinter
	// Secrets are secret values rigor knows beyond those of the run's own
	// environment and spec (HF_TOKEN, even from its token file; .npmrc
	// tokens): each record and its raw outputs are scrubbed of them.
	Secrets *redact.Scrubber
	// SysRoot replaces /sys for the power sampler's RAPL tree (tests;
	// RIGOR_SYSFS_ROOT); "" reads /sys.
	SysRoot string
	// Rebuild discards a cached engine build and builds again.
	Rebuild bool
	// Verify reads every model file and engine binary again to hash it,
	// trusting nothing from the stat cache (rigor run --verify).
	Verify bool
	// Jobs bounds parallel compile jobs of a build; 0 means the CPUs.
	Jobs int
	// Now is the clock (tests fix it); nil means time.Now.
	Now func() time.Time
	// Baselines are the prepared baseline experiments that
	// quality.measure names, by id (an experiment that is its own
	// baseline needs none).
	Baselines map[string]*Prepared
	// BusyShare is the share of the cores other processes may take while
	// the engine runs before the record warns that the machine was busy;
	// 0 means [hoststate.DefaultBusyShare].
	BusyShare float64
}

// BusyWarning starts the warning a record carries when the machine was
// busy while its engine ran.
const BusyWarning = "busy machine: "

func (r *Runner) busyShare() float64 {
	if r.BusyShare > 0 {
		return r.BusyShare
	}
	return hoststate.DefaultBusyShare
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now().UTC()
	}
	return time.Now().UTC()
}

func (r *Runner) say(format string, args ...any) {
	if r.Progress != nil {
		r.Progress(fmt.Sprintf(format, args...))
	}
}

// Prepared is an experiment ready to run: its engine built or installed and
// its model files verified.
type Prepared struct {
	// Prepared is the engine's own account of itself.
	Built      *engine.Prepared
	Experiment *spec.Experiment
	Entry      *lock.Entry
	Inputs     engine.Inputs
	Engine     results.Engine
	Model      results.Model
	// Hashes says whether the model's and the engine's hashes were read
	// from their bytes or trusted from the stat cache (lock.HashesRead,
	// lock.HashesCached); recorded with every run.
	Hashes string
	// Warnings are recorded with every run of the experiment.
	Warnings []string
}

// Prepare builds or installs the engine and verifies the model of a locked
// experiment.
func (r *Runner) Prepare(ctx context.Context, x *spec.Experiment, entry *lock.Entry) (*Prepared, error) {
	p := &Prepared{Experiment: x, Entry: entry}
	ctx, hashes := lock.WithHashReport(ctx, r.Verify)
	if err := r.prepareModel(ctx, x, entry, p); err != nil {
		return nil, err
	}
	if m := x.Spec.Quality.Measure; m != nil && m.Corpus.Hub() {
		// A hub corpus is downloaded (and its bytes checked) before
		// anything runs, as the model's files are verified.
		r.say("checking the corpus %s", m.Corpus)
		if _, err := r.corpus(ctx, p); err != nil {
			return nil, fmt.Errorf("%s: %w", x.ID, err)
		}
	}
	if err := r.prepareEngine(ctx, x, entry, p); err != nil {
		return nil, err
	}
	p.Hashes = hashes.Summary()
	return p, nil
}

// request is what the engine of an experiment is prepared from.
func (r *Runner) request(x *spec.Experiment, entry *lock.Entry) engine.Request {
	return engine.Request{Experiment: x, Lock: entry, Root: r.Root, Cache: r.Cache, Offline: r.Offline, Getenv: r.Getenv,
		Rebuild: r.Rebuild, Jobs: r.Jobs, Progress: r.Progress, BuildProgress: r.BuildProgress, BuildLog: r.BuildLog}
}

// PrepareEngine builds, installs or describes the engine of a locked
// experiment (`rigor build`), without touching its model.
func (r *Runner) PrepareEngine(ctx context.Context, x *spec.Experiment, entry *lock.Entry) (*engine.Prepared, error) {
	e, err := all.Get(x.Spec.Engine.Family)
	if err != nil {
		return nil, err
	}
	return e.Prepare(ctx, r.request(x, entry))
}

// BuildKey is the build cache key the engine of a locked experiment is
// built under, and false for engines rigor does not build.
func (r *Runner) BuildKey(ctx context.Context, x *spec.Experiment, entry *lock.Entry) (string, bool) {
	e, err := all.Get(x.Spec.Engine.Family)
	if err != nil {
		return "", false
	}
	b, ok := engine.As[engine.Builder](e)
	if !ok {
		return "", false
	}
	key, err := b.BuildKey(ctx, r.request(x, entry))
	return key, err == nil && key != ""
}

func (r *Runner) prepareEngine(ctx context.Context, x *spec.Experiment, entry *lock.Entry, p *Prepared) error {
	ep, err := r.PrepareEngine(ctx, x, entry)
	if err != nil {
		return err
	}
	p.Built = ep
	p.Inputs.BinDir = ep.BinDir
	p.Engine = ep.Engine
	p.Engine.Binaries = ep.Binaries
	p.Engine.From = engineFrom(ctx, ep)
	if p.Engine.From == "upstream" && gitsrc.SourceRestored(ctx, ep.Engine.Commit) {
		p.Engine.SourceFrom = "archive"
	}
	p.Warnings = append(p.Warnings, ep.Warnings...)
	if r.Rig != nil && len(ep.Toolchain) > 0 {
		if r.Rig.Toolchain == nil {
			r.Rig.Toolchain = map[string]string{}
		}
		for k, v := range ep.Toolchain {
			r.Rig.Toolchain[k] = v
		}
	}
	return nil
}

// CachedInputs returns what a run would use without building or installing
// anything: the model path, and the engine's bin directory when the engine
// is already prepared (a cached build or install, a prebuilt directory).
// For --dry-run.
func (r *Runner) CachedInputs(ctx context.Context, x *spec.Experiment, entry *lock.Entry) engine.Inputs {
	in := engine.Inputs{Model: r.abs(entry.EntryModel(r.Cache, r.HFCache))}
	e, err := all.Get(x.Spec.Engine.Family)
	if err != nil {
		return in
	}
	if l, ok := engine.As[engine.Locator](e); ok {
		req := r.request(x, entry)
		req.Offline, req.Progress, req.BuildProgress, req.BuildLog = true, nil, nil, nil
		if p, err := l.Locate(ctx, req); err == nil && p != nil {
			in.BinDir = p.BinDir
		}
	}
	return in
}

// DryPlan is one execution a run would make: the points it serves (one, or
// a whole sweep the engine runs in one process) and the plan it starts.
type DryPlan struct {
	Points []*spec.Point
	Plan   *engine.Plan
	// Located is false when the engine is not prepared yet, so its bin
	// directory is a placeholder.
	Located bool
}

// DryPlans returns the executions a run of the points would make, exactly
// as Run groups and plans them, with the paths it would use; nothing is
// built, installed or started, and the run directory is the <run>
// placeholder, as records write it.
func (r *Runner) DryPlans(ctx context.Context, x *spec.Experiment, entry *lock.Entry, points []*spec.Point) ([]DryPlan, error) {
	e, err := all.Get(x.Spec.Engine.Family)
	if err != nil {
		return nil, err
	}
	return planGroups(e, points, r.CachedInputs(ctx, x, entry))
}

// PlanGroups returns the executions a run of the points would make with
// the inputs in, grouped and planned exactly as Run groups and plans them
// (a sweep the engine runs in one process is one plan), for show.
func PlanGroups(x *spec.Experiment, points []*spec.Point, in engine.Inputs) ([]DryPlan, error) {
	e, err := all.Get(x.Spec.Engine.Family)
	if err != nil {
		return nil, err
	}
	return planGroups(e, points, in)
}

func planGroups(e engine.Engine, points []*spec.Point, in engine.Inputs) ([]DryPlan, error) {
	var out []DryPlan
	for _, g := range Groups(e, points) {
		point := g.points[0]
		if g.combined != nil {
			point = g.combined
		}
		point, _ = Warmup(point)
		plan, err := e.Plan(point, in)
		if err != nil {
			return nil, fmt.Errorf("planning %s: %w", point.ID, err)
		}
		out = append(out, DryPlan{Points: g.points, Plan: plan, Located: in.BinDir != ""})
	}
	return out, nil
}

// abs makes a path of the experiment absolute against the module root.
// A bare name without a slash stays as it is (a command on PATH).
func (r *Runner) abs(p string) string {
	if p == "" || filepath.IsAbs(p) || !strings.Contains(p, "/") && !strings.Contains(p, ".") {
		return p
	}
	return filepath.Join(r.Root, p)
}

func (r *Runner) prepareModel(ctx context.Context, x *spec.Experiment, entry *lock.Entry, p *Prepared) error {
	m := entry.Model
	p.Model = results.Model{HF: m.Requested.HF, Revision: m.Requested.Revision, Commit: m.Commit, Path: m.Requested.Path, Quant: x.Spec.Model.Quant,
		Name: m.Requested.Name}
	p.Inputs.Model = r.abs(entry.EntryModel(r.Cache, r.HFCache))
	if m.Requested.HF == "" && m.Requested.Path == "" && m.Synthetic == nil {
		return nil // a model known by name only (an endpoint's): no bytes to verify
	}
	if m.Requested.Path != "" {
		if real, err := filepath.EvalSymlinks(p.Inputs.Model); err == nil {
			p.Model.RealPath = real
		}
	}
	if m.Synthetic != nil {
		r.say("checking the synthetic model")
		// Written now from the recipe the lock holds (its source), or
		// found in rigor's cache with the locked bytes.
		from := FromUpstream
		if _, err := os.Stat(lock.SyntheticPath(r.Cache, m.Synthetic.SHA256)); err == nil {
			from = FromCache
		}
		path, warning, err := lock.EnsureSynthetic(ctx, r.Cache, x.ID, x.Spec.Model.Synthetic, m.Synthetic)
		if err != nil {
			return err
		}
		if warning != "" {
			p.Warnings = append(p.Warnings, warning)
			r.say("the cached synthetic model does not match the lock: writing it again")
			from = FromUpstream
		}
		p.Model.Files = []results.File{{Path: filepath.Base(path), Size: m.Synthetic.Size, SHA256: m.Synthetic.SHA256, GGUF: m.Synthetic.GGUF, From: from}}
		return nil
	}
	r.say("verifying %d model %s", len(m.Files), plural(len(m.Files), "file", "files"))
	from, err := r.verifyModel(ctx, x.ID, entry)
	if err != nil {
		return err
	}
	for i, f := range m.Files {
		p.Model.Files = append(p.Model.Files, results.File{Path: f.Path, Size: f.Size, SHA256: f.SHA256, GGUF: f.GGUF, From: from[i]})
	}
	return nil
}

// PointRun is one recorded execution of one point.
type PointRun struct {
	Point  *spec.Point
	Record *results.Run
	// Raw are the raw outputs kept beside the record, by file name.
	Raw map[string][]byte
	// EngineWarnings are the warnings the engine's verdict gave about
	// this run (also in Record.Warnings), for the CLI to print: what the
	// figures mean, not how the experiment was set up.
	EngineWarnings []string
}

// Sink receives each record as soon as its execution ends, so that it is
// written before anything else happens.
type Sink func(*PointRun) error

// group is one execution: a single point, or the points of a sweep that
// the engine runs as one process.
type group struct {
	points []*spec.Point
	// combined is the point that runs them all, when there are several.
	combined *spec.Point
}

// Groups splits the points into executions. When the engine can run the
// whole sweep in one process (a [engine.Sweeper] whose Combine accepts
// them), it does: the model loads once. Otherwise each point runs on its
// own.
func Groups(e engine.Engine, points []*spec.Point) []group {
	if sw, ok := engine.As[engine.Sweeper](e); ok && len(points) > 1 {
		if c, ok := sw.Combine(points); ok {
			return []group{{points: points, combined: c}}
		}
	}
	var out []group
	for _, p := range points {
		out = append(out, group{points: []*spec.Point{p}})
	}
	return out
}

// Executions returns the points of each execution a run of the points
// would make, grouped exactly as Run groups them (a sweep the engine runs
// in one process is one execution) but not planned: for counting what a
// run starts before anything is prepared.
func Executions(x *spec.Experiment, points []*spec.Point) ([][]*spec.Point, error) {
	e, err := all.Get(x.Spec.Engine.Family)
	if err != nil {
		return nil, err
	}
	var out [][]*spec.Point
	for _, g := range Groups(e, points) {
		out = append(out, g.points)
	}
	return out, nil
}

// conclude is the engine's verdict on an execution, with the engine's
// build facts: those the bench (or the server) reported, kept for later
// runs of the same binaries, or else the last ones kept.
func (r *Runner) conclude(e engine.Engine, prep *Prepared, point *spec.Point, out *Outcome, outputs map[string][]byte) engine.Verdict {
	x := prep.Experiment
	fin := engine.Finished{Stdout: out.Stdout, Stderr: out.Stderr, ExitCode: out.ExitCode, Signaled: out.Signaled,
		Outputs: outputs, Stopped: stopOf[out.How], StopErr: out.Err, WorkerDeath: out.WorkerDeath}
	if x.Spec.Engine.Source.Git != "" {
		fin.Commit = prep.Engine.Commit
	}
	verdict := engine.Conclude(e, point, fin)
	reporter := "" // the bench program reports the build, or the server
	if x.Spec.Serve != nil {
		reporter = "server"
	}
	if verdict.Build != nil {
		keepBuildFacts(r.Cache, prep.Engine.Binaries, reporter, verdict.Build)
	} else {
		verdict.Build = keptBuildFacts(r.Cache, prep.Engine.Binaries, reporter)
	}
	return verdict
}

// measureQualities measures the quality of each point after its speed,
// with processes of its own, by point id; nothing when the experiment
// measures none, or the bench failed, or the run was stopped.
func (r *Runner) measureQualities(ctx context.Context, e engine.Engine, prep *Prepared, points []*spec.Point, verdict engine.Verdict, runDir string) map[string]*qualityRun {
	x := prep.Experiment
	quality := map[string]*qualityRun{}
	if x.Spec.Quality.Measure == nil || verdict.Status != results.StatusOK || ctx.Err() != nil {
		return quality
	}
	for _, p := range points {
		r.say("%s: measuring quality against %s", p.ID, BaselineOf(x))
		quality[p.ID] = r.measureQuality(ctx, e, prep, p, runDir)
	}
	return quality
}

// scratchRunDir makes an execution's run directory and claims it while
// the run lives, so that another rigor's cleanup (or 'cache prune') never
// removes it, and it is removed if this rigor dies; release removes it.
func (r *Runner) scratchRunDir() (dir string, release func(), err error) {
	dir, err = os.MkdirTemp(r.tmpDir(), "run-")
	if err != nil {
		return "", nil, err
	}
	unclaim := func() {}
	if rel, err := ClaimScratch(dir); err == nil {
		unclaim = rel
	}
	return dir, func() { unclaim(); os.RemoveAll(dir) }, nil
}

// execOptions are Execute's options for a plan of experiment x: its
// environment and secrets, the run directory and its logs, the bench's
// timeout and the workers' readiness timeout, the port locks in the cache.
func (r *Runner) execOptions(x *spec.Experiment, plan *engine.Plan, env []string, secrets map[string]string, runDir string) Options {
	timeout, ready := r.timeouts(x)
	opts := Options{Plan: plan, Env: env, Secrets: secrets, Dir: runDir, LogDir: filepath.Join(runDir, "logs"), Timeout: timeout,
		ReadyTimeout: ready, Grace: r.Grace, Progress: r.Progress}
	if r.Cache != "" {
		opts.LockDir = PortLockDir(r.Cache)
	}
	return opts
}

// planSecrets are the secrets a plan asks for (an endpoint's API key):
// they reach only the processes that name them, and not the record (they
// are not among the passed variables).
func planSecrets(getenv func(string) (string, bool), plan *engine.Plan) map[string]string {
	secrets := map[string]string{}
	for _, pp := range plan.Processes {
		for _, k := range pp.SecretEnv {
			if v, ok := getenv(k); ok {
				secrets[k] = v
			}
		}
	}
	return secrets
}

// timeouts are how long the bench may run (--timeout, else the
// experiment's timeoutSeconds, else an hour) and how long a worker may
// take to be ready (0: Execute's default).
func (r *Runner) timeouts(x *spec.Experiment) (timeout, ready time.Duration) {
	timeout = r.Timeout
	if timeout == 0 {
		timeout = time.Hour
		if x.Spec.TimeoutSeconds > 0 {
			timeout = time.Duration(x.Spec.TimeoutSeconds) * time.Second
		}
	}
	ready = r.ReadyTimeout
	if ready == 0 && x.Spec.Engine.RPC != nil && x.Spec.Engine.RPC.ReadyTimeoutSeconds > 0 {
		ready = time.Duration(x.Spec.Engine.RPC.ReadyTimeoutSeconds) * time.Second
	}
	return timeout, ready
}

// readOutputs reads what an execution left: every process's logs and the
// files the plan names as outputs (raw, kept beside the record), and the
// outputs alone, by name, for the engine to parse.
func readOutputs(out *Outcome, plan *engine.Plan, logDir, runDir string) (raw, outputs map[string][]byte) {
	raw, outputs = map[string][]byte{}, map[string][]byte{}
	for _, name := range out.Logs {
		if b, err := os.ReadFile(filepath.Join(logDir, name)); err == nil {
			raw[name] = b
		}
	}
	for _, pp := range plan.Processes {
		for _, o := range pp.Outputs {
			if b, err := os.ReadFile(filepath.Join(runDir, o)); err == nil {
				raw[o] = b
				outputs[o] = b
			}
		}
	}
	return raw, outputs
}

// knownSecrets are every secret value the processes had (their
// environment, the values they got through SecretEnv, their argv) and
// those rigor was told of: the record and raw outputs are scrubbed of
// each, wherever the engine printed it.
func (r *Runner) knownSecrets(env []string, secrets map[string]string, plan *engine.Plan) *redact.Scrubber {
	known := redact.NewScrubber()
	known.Merge(r.Secrets)
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			known.AddEnv(k, v)
		}
	}
	for _, v := range secrets {
		known.Add(v)
	}
	for _, pp := range plan.Processes {
		for k, v := range pp.Env {
			known.AddEnv(k, v)
		}
		known.AddArgv(pp.Argv)
	}
	return known
}

// sweptNames are the axes of a group, for the record's warning.
func sweptNames(points []*spec.Point) []string {
	seen := map[string]bool{}
	for _, p := range points {
		for _, a := range p.Axes {
			seen[a.Section+"."+a.Name] = true
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Run executes the points of a prepared experiment, calling sink with each
// record as soon as it exists. Interrupted runs are recorded too. It
// returns the context's error when the user interrupted it. It is
// [Runner.RunRounds] with one experiment and one round.
func (r *Runner) Run(ctx context.Context, prep *Prepared, points []*spec.Point, sink Sink) error {
	return r.RunRounds(ctx, []Item{{Prep: prep, Points: points}}, Rounds{}, sink)
}

// benchName is the name of the bench process of a point's plan.
func benchName(e engine.Engine, p *spec.Point) string {
	plan, err := e.Plan(p, engine.Inputs{})
	if err != nil || len(plan.Processes) == 0 {
		return "engine"
	}
	return plan.Processes[len(plan.Processes)-1].Name
}

// stopOf maps how an execution ended to the engine's terms.
var stopOf = map[string]engine.Stop{
	TimedOut: engine.StoppedTimeout, Interrupted: engine.StoppedInterrupt,
	WorkerFailed: engine.StoppedWorker, StartFailed: engine.StoppedStart,
}

func (r *Runner) runGroup(ctx context.Context, e engine.Engine, prep *Prepared, g group) ([]*PointRun, error) {
	x := prep.Experiment
	point := g.points[0]
	if g.combined != nil {
		point = g.combined
	}
	runDir, release, err := r.scratchRunDir()
	if err != nil {
		return nil, err
	}
	defer release()
	in := prep.Inputs
	in.RunDir = runDir
	point, warm := Warmup(point)
	plan, err := e.Plan(point, in)
	if err != nil {
		return nil, fmt.Errorf("planning %s: %w", point.ID, err)
	}
	getenv := r.Getenv
	if getenv == nil {
		getenv = func(string) (string, bool) { return "", false }
	}
	env, passed := Environment(getenv, nil, x.Spec.PassEnv)
	secrets := planSecrets(getenv, plan)
	// The machine's state around the engine's processes. They are rigor's
	// children and Execute reaps them all before it returns, so their CPU
	// time (and that of what they reaped) is in rigor's own cutime and
	// cstime, which the sampler counts as the engine's: their pids are not
	// passed, or their time would count twice.
	sampler := hoststate.StartWith(ctx, nil, hoststate.Options{SysRoot: r.SysRoot})
	opts := r.execOptions(x, plan, env, secrets, runDir)
	out, err := Execute(ctx, opts)
	state := sampler.Stop()
	if err != nil {
		return nil, err
	}
	raw, outputs := readOutputs(out, plan, opts.LogDir, runDir)
	verdict := r.conclude(e, prep, point, out, outputs)
	// The energy of the engine's timed section: its repetitions' time,
	// ending as it exited (else the whole run, and the record says so).
	var timed *hoststate.TimedEnergy
	if state.Energy != nil && prep.Engine.Unpinned != "" {
		// An endpoint rigor did not start may run on another machine:
		// this one's power says nothing of its tokens.
		state.Energy.Notes = append(state.Energy.Notes, "no tok/J: the server is an endpoint rigor did not start, perhaps on another machine, so this machine's power is not its power")
	} else if state.Energy != nil {
		secs, from := timedSeconds(verdict.Metrics), timedFrom
		if verdict.TimedSeconds > 0 {
			secs, from = verdict.TimedSeconds, timedFromEngine
		}
		timed = sampler.TimedEnergy(out.End, secs, from)
		state.Energy.Timed = timed
	}

	known := r.knownSecrets(env, secrets, plan)

	quality := r.measureQualities(ctx, e, prep, g.points, verdict, runDir)

	var runs []*PointRun
	for _, p := range g.points {
		rec := r.record(prep, p, plan, out, passed, runDir)
		rec.KnowSecrets(known)
		rec.Status, rec.Error, rec.LogTail = verdict.Status, verdict.Error, verdict.LogTail
		rec.Warnings = append(rec.Warnings, verdict.Warnings...)
		rec.Metrics = verdict.Metrics
		rec.Engine.Build = verdict.Build
		rec.Machine = state
		if g.combined != nil {
			rec.Warnings = append(rec.Warnings, fmt.Sprintf("ran as one %s process with %d points (swept %s); the raw output holds every point's rows",
				plan.Processes[len(plan.Processes)-1].Name, len(g.points), strings.Join(sweptNames(g.points), ", ")))
			sw, _ := engine.As[engine.Sweeper](e) // g.combined came from it
			rec.Metrics = sw.Split(verdict, p)
			if len(rec.Metrics) == 0 && rec.Status == results.StatusOK {
				rec.Status = results.StatusFailed
				rec.Error = "the engine printed no rows for this point"
			}
		}
		if warm > 0 {
			rec.Metrics = slices.Clone(rec.Metrics)
			rec.Warnings = append(rec.Warnings, dropWarmup(rec.Metrics, warm, repetitions(p))...)
		}
		rec.Metrics = append(slices.Clip(rec.Metrics), energyMetrics(rec.Metrics, timed)...)
		// A run that measured nothing has no figures the load could have
		// lowered (its state is recorded all the same).
		if busy, why := state.Busy(r.busyShare()); busy && len(rec.Metrics) > 0 {
			rec.Warnings = append(rec.Warnings, BusyWarning+why)
		}
		praw := raw
		if x.Spec.Quality.Measure != nil {
			rec.Quality = &results.Quality{Declared: declared(x.Spec.Quality)}
		}
		if qr := quality[p.ID]; qr != nil {
			rec.Quality.Measured = qr.measured
			rec.Processes = append(rec.Processes, qr.processes...)
			praw = maps.Clone(raw)
			maps.Copy(praw, qr.raw)
			if qr.err != nil && rec.Status == results.StatusOK {
				rec.Status = results.StatusFailed
				if errors.Is(qr.err, context.Canceled) {
					rec.Status = results.StatusInterrupted
				}
				rec.Error = "measuring quality: " + qr.err.Error()
			}
		}
		files := make([]string, 0, len(praw))
		for name := range praw {
			files = append(files, name)
		}
		sort.Strings(files)
		rec.Files = files
		results.RedactWith(rec, r.Fingerprinter)
		runs = append(runs, &PointRun{Point: p, Record: rec, Raw: praw, EngineWarnings: verdict.Warnings})
	}
	return runs, nil
}

func (r *Runner) tmpDir() string {
	dir := ScratchDir(r.Cache)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return os.TempDir()
	}
	return dir
}

func (r *Runner) record(prep *Prepared, p *spec.Point, plan *engine.Plan, out *Outcome, passed map[string]string, runDir string) *results.Run {
	x := prep.Experiment
	rec := &results.Run{
		Schema: results.SchemaVersion, RigorVersion: r.RigorVersion,
		ID: results.NewRunID(out.Start), Experiment: x.ID, Point: p.ID, Swept: p.SweptMap(),
		SpecDigest: p.Digest, LockDigest: prep.Entry.Digest(), Spec: p.SpecJSON(),
		Engine: prep.Engine, Model: prep.Model, Hashes: prep.Hashes, Rig: r.Rig,
		Start: out.Start, End: out.End, Labels: x.Spec.Labels,
	}
	if len(r.IgnoredRequires) > 0 {
		rec.IgnoredRequires = true
		for _, m := range r.IgnoredRequires {
			rec.Warnings = append(rec.Warnings, "requirement not met (--ignore-requires): "+m)
		}
	}
	rec.Warnings = append(rec.Warnings, prep.Warnings...)
	for _, pp := range plan.Processes {
		env := map[string]string{}
		for k, v := range pp.Env {
			env[k] = v
		}
		for k, v := range passed {
			env[k] = v
		}
		argv := make([]string, len(pp.Argv))
		for i, a := range pp.Argv {
			argv[i] = strings.ReplaceAll(a, runDir, engine.RunDirPlaceholder)
		}
		proc := results.Process{Role: pp.Role, Argv: argv, Env: env, Dir: pp.Dir}
		if code, ok := out.Exits[pp.Name]; ok {
			c := code
			proc.Exit = &c
			proc.Signal = out.Signals[pp.Name]
		}
		rec.Processes = append(rec.Processes, proc)
	}
	return rec
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// declared is an experiment's quality declaration without its measure
// request, for the record's quality.declared.
func declared(q spec.Quality) json.RawMessage {
	q.Measure = nil
	b, err := json.Marshal(q)
	if err != nil || string(b) == "{}" {
		return nil
	}
	return b
}

// engineFrom says where a prepared engine came from: "archive" (a
// substituter brought it, internal/archive), "cache", or "upstream"
// (built from its source or installed from its registry now); "" for a
// prebuilt directory or an endpoint, which rigor does not fetch.
func engineFrom(ctx context.Context, ep *engine.Prepared) string {
	switch {
	case ep.Engine.BuildID == "prebuilt" || ep.Engine.Unpinned != "" || ep.BinDir == "":
		return ""
	case buildcache.Substituted(ctx, ep.Engine.BuildID):
		return "archive"
	case ep.Cached:
		return "cache"
	}
	return "upstream"
}

// LocateEngine finds the engine of a locked experiment in the cache
// without building or installing it: nil when it is not there, or when
// the family cannot tell.
func (r *Runner) LocateEngine(ctx context.Context, x *spec.Experiment, entry *lock.Entry) (*engine.Prepared, error) {
	e, err := all.Get(x.Spec.Engine.Family)
	if err != nil {
		return nil, err
	}
	l, ok := engine.As[engine.Locator](e)
	if !ok {
		return nil, nil
	}
	return l.Locate(ctx, r.request(x, entry))
}

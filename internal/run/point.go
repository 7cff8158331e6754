package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/rigorbench/rigor/engine"
	"github.com/rigorbench/rigor/engine/all"
	"github.com/rigorbench/rigor/engine/llamacpp"
	"github.com/rigorbench/rigor/engine/nodellama"
	"github.com/rigorbench/rigor/engine/vllm"
	"github.com/rigorbench/rigor/internal/gguf"
	"github.com/rigorbench/rigor/internal/lock"
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
	// Getenv reads the caller's environment (os.LookupEnv).
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
	// Now is the clock (tests fix it); nil means time.Now.
	Now func() time.Time
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
	Experiment *spec.Experiment
	Entry      *lock.Entry
	Inputs     engine.Inputs
	Engine     results.Engine
	Model      results.Model
	// Warnings are recorded with every run of the experiment.
	Warnings []string
}

// ModelError reports a model file that is missing or differs from the
// lock.
type ModelError struct {
	Path       string
	Want, Got  string
	Missing    bool
	Experiment string
}

func (e *ModelError) Error() string {
	if e.Missing {
		return fmt.Sprintf("model file %s is missing", e.Path)
	}
	return fmt.Sprintf("model file %s does not match the lock: sha256 %s, locked %s", e.Path, e.Got, e.Want)
}

// Hint says how to get the right bytes.
func (e *ModelError) Hint() string {
	if e.Missing {
		return "fetch the locked files with 'rigor pull " + e.Experiment + "'"
	}
	return "the file changed since 'rigor lock': restore it ('rigor pull " + e.Experiment + "'), or lock the new bytes with 'rigor lock --update model " + e.Experiment + "'"
}

// Prepare builds or installs the engine and verifies the model of a locked
// experiment.
func (r *Runner) Prepare(ctx context.Context, x *spec.Experiment, entry *lock.Entry) (*Prepared, error) {
	p := &Prepared{Experiment: x, Entry: entry}
	if err := r.prepareModel(ctx, x, entry, p); err != nil {
		return nil, err
	}
	if err := r.prepareEngine(ctx, x, entry, p); err != nil {
		return nil, err
	}
	return p, nil
}

func (r *Runner) prepareEngine(ctx context.Context, x *spec.Experiment, entry *lock.Entry, p *Prepared) error {
	s := x.Spec
	el := entry.Engine
	p.Engine = results.Engine{
		Family: s.Engine.Family, Ref: s.Engine.Source.Ref, Commit: el.Commit,
		Version: el.Version, Backend: s.Engine.Build.BackendOrCPU(),
	}
	for _, pl := range el.Patches {
		p.Engine.Patches = append(p.Engine.Patches, results.Patch{Path: pl.Path, SHA256: pl.SHA256})
	}
	src := s.Engine.Source
	switch s.Engine.Family {
	case spec.FamilyLlamaCpp, spec.FamilyIkLlamaCpp:
		if src.Path != "" {
			p.Engine.Source = src.Path
			b, err := llamacpp.Prebuilt(r.abs(src.Path))
			if err != nil {
				return err
			}
			p.Inputs.BinDir = b.BinDir
			p.Engine.BuildID = "prebuilt"
			return nil
		}
		p.Engine.Source = src.Git
		bo := r.buildOptions(x, entry)
		b, err := llamacpp.LookupBuild(ctx, bo)
		if err != nil || b == nil {
			r.say("building %s at %s", s.Engine.Family, short(el.Commit))
			if b, err = llamacpp.Build(ctx, bo); err != nil {
				return err
			}
		} else {
			r.say("engine %s at %s: cached build %s", s.Engine.Family, short(el.Commit), short(b.ID))
		}
		p.Inputs.BinDir = b.BinDir
		p.Engine.BuildID = b.ID
	case spec.FamilyNodeLlama:
		p.Engine.Source = "npm:node-llama-cpp"
		if el.NPM == nil {
			return fmt.Errorf("the lock of %s has no npm package: run 'rigor lock --update engine %s'", x.ID, x.ID)
		}
		integ := map[string]string{el.NPM.Package: el.NPM.Integrity}
		platform := ""
		if el.NPM.Platform != nil {
			integ[el.NPM.Platform.Package] = el.NPM.Platform.Integrity
			platform = strings.TrimPrefix(el.NPM.Platform.Package, "@node-llama-cpp/")
		}
		r.say("engine node-llama-cpp %s", el.NPM.Version)
		inst, err := nodellama.Install(ctx, nodellama.InstallOptions{
			Cache: r.Cache, Version: el.NPM.Version, Platform: platform, Integrity: integ, Progress: r.Progress,
		})
		if err != nil {
			return err
		}
		p.Inputs.BinDir = inst.Dir
		p.Engine.Version = el.NPM.Version
		p.Engine.BuildID = inst.Key
		p.Warnings = append(p.Warnings, inst.Warnings...)
		if r.Rig != nil {
			if r.Rig.Toolchain == nil {
				r.Rig.Toolchain = map[string]string{}
			}
			r.Rig.Toolchain["node"] = inst.NodeVersion
		}
	case spec.FamilyVLLM:
		switch {
		case src.Python != "":
			p.Engine.Source = src.Python
		default:
			p.Engine.Source = src.Path
		}
		// What vLLM is this: `vllm --version`, and the digest of the
		// environment's installed packages as its build identity.
		facts, err := vllm.Describe(ctx, src)
		if err != nil {
			return err
		}
		p.Engine.Version = facts.Version
		p.Engine.BuildID = facts.PackagesDigest
		if p.Engine.BuildID == "" && facts.ExecutableSHA256 != "" {
			p.Engine.BuildID = "sha256:" + facts.ExecutableSHA256
		}
	default:
		return fmt.Errorf("unknown engine family %q", s.Engine.Family)
	}
	return nil
}

// buildOptions are the build inputs of a llama.cpp experiment built from
// git.
func (r *Runner) buildOptions(x *spec.Experiment, entry *lock.Entry) llamacpp.BuildOptions {
	s := x.Spec
	var patches []llamacpp.PatchInput
	for _, pl := range entry.Engine.Patches {
		patches = append(patches, llamacpp.PatchInput{Path: filepath.Join(r.Root, filepath.FromSlash(pl.Path)), SHA256: pl.SHA256})
	}
	return llamacpp.BuildOptions{
		Cache: r.Cache, URL: r.gitURL(s.Engine.Source.Git), Commit: entry.Engine.Commit, Patches: patches,
		Recipe: s.Engine.Build, Fork: s.Engine.Family, RPC: s.Engine.RPC != nil,
		Offline: r.Offline, Progress: r.BuildProgress, Log: r.BuildLog,
	}
}

// CachedInputs returns what a run would use without building or installing
// anything: the model path, and the engine's bin directory when a build is
// already cached or the engine is prebuilt. For --dry-run.
func (r *Runner) CachedInputs(ctx context.Context, x *spec.Experiment, entry *lock.Entry) engine.Inputs {
	in := engine.Inputs{Model: r.abs(entry.EntryModel(r.HFCache))}
	s := x.Spec
	switch s.Engine.Family {
	case spec.FamilyLlamaCpp, spec.FamilyIkLlamaCpp:
		if s.Engine.Source.Path != "" {
			if b, err := llamacpp.Prebuilt(r.abs(s.Engine.Source.Path)); err == nil {
				in.BinDir = b.BinDir
			}
		} else if b, err := llamacpp.LookupBuild(ctx, r.buildOptions(x, entry)); err == nil && b != nil {
			in.BinDir = b.BinDir
		}
	}
	return in
}

func (r *Runner) gitURL(u string) string {
	if strings.Contains(u, "://") || filepath.IsAbs(u) || strings.HasPrefix(u, "git@") {
		return u
	}
	return r.abs(u)
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
	p.Model = results.Model{HF: m.Requested.HF, Revision: m.Requested.Revision, Commit: m.Commit, Path: m.Requested.Path, Quant: x.Spec.Model.Quant}
	files := entry.ModelFiles(r.HFCache)
	for i, f := range files {
		files[i] = r.abs(f)
	}
	p.Inputs.Model = r.abs(entry.EntryModel(r.HFCache))
	if m.Synthetic != nil {
		path := files[0]
		if _, err := os.Stat(path); err != nil {
			r.say("writing the synthetic model")
			if err := writeSynthetic(path, x.Spec.Model.Synthetic); err != nil {
				return err
			}
		}
		h := &lock.Hasher{Cache: r.Cache}
		got, err := h.Hash(ctx, []string{path})
		if err != nil {
			return err
		}
		if got[0].SHA256 != m.Synthetic.SHA256 {
			// The file in the cache was damaged: the model is a pure
			// function of its spec, so write it again and check again.
			p.Warnings = append(p.Warnings, fmt.Sprintf("the cached synthetic model %s had sha256 %s; it was written again", path, got[0].SHA256))
			r.say("the cached synthetic model does not match the lock: writing it again")
			if err := writeSynthetic(path, x.Spec.Model.Synthetic); err != nil {
				return err
			}
			if got, err = h.Hash(ctx, []string{path}); err != nil {
				return err
			}
			if got[0].SHA256 != m.Synthetic.SHA256 {
				return &ModelError{Path: path, Want: m.Synthetic.SHA256, Got: got[0].SHA256, Experiment: x.ID}
			}
		}
		p.Model.Files = []results.File{{Path: filepath.Base(path), Size: m.Synthetic.Size, SHA256: m.Synthetic.SHA256, GGUF: m.Synthetic.GGUF}}
		return nil
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return &ModelError{Path: f, Missing: true, Experiment: x.ID}
		}
	}
	r.say("verifying %d model %s", len(files), plural(len(files), "file", "files"))
	h := &lock.Hasher{Cache: r.Cache}
	got, err := h.Hash(ctx, files)
	if err != nil {
		return err
	}
	for i, f := range m.Files {
		if i >= len(got) {
			break
		}
		want := f.SHA256
		if want != "" && got[i].SHA256 != want {
			return &ModelError{Path: files[i], Want: want, Got: got[i].SHA256, Experiment: x.ID}
		}
		p.Model.Files = append(p.Model.Files, results.File{Path: f.Path, Size: f.Size, SHA256: got[i].SHA256, GGUF: f.GGUF})
	}
	return nil
}

func writeSynthetic(path string, s *spec.Synthetic) error {
	if s == nil {
		return errors.New("the lock names a synthetic model but the experiment has none")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".synthetic-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	spec := gguf.SyntheticSpec{Arch: s.Arch, Layers: s.Layers, Embd: s.Embd, Heads: s.Heads, KVHeads: s.KVHeads,
		FF: s.FF, Vocab: s.Vocab, Ctx: s.Ctx, Type: s.Type, Seed: s.Seed}
	if err := gguf.WriteSynthetic(tmp, spec); err != nil {
		tmp.Close()
		return fmt.Errorf("writing the synthetic model: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// PointRun is one recorded execution of one point.
type PointRun struct {
	Point  *spec.Point
	Record *results.Run
	// Raw are the raw outputs kept beside the record, by file name.
	Raw map[string][]byte
}

// Sink receives each record as soon as its execution ends, so that it is
// written before anything else happens.
type Sink func(*PointRun) error

// group is one execution: a single point, or the points of a sweep that
// llama-bench runs as one process.
type group struct {
	points []*spec.Point
	// swept are the flags that the process sweeps itself (comma lists).
	swept []string
}

// Groups splits the points into executions. When every swept flag of a
// llama.cpp experiment is one llama-bench sweeps itself (a comma list) and
// nothing else varies, the whole sweep runs as one process: the model loads
// once. Otherwise each point runs on its own.
func Groups(set *spec.Set, x *spec.Experiment, points []*spec.Point) []group {
	fam := x.Spec.Engine.Family
	if len(points) > 1 && (fam == spec.FamilyLlamaCpp || fam == spec.FamilyIkLlamaCpp) {
		t := set.FlagTable(fam, "flags")
		ok := true
		names := map[string]bool{}
		for _, p := range points {
			for _, a := range p.Axes {
				var d spec.FlagDef
				var found bool
				// Only flags: a swept -p or -n would split a point's pp
				// and tg rows apart (a tg row reports n_prompt 0).
				if a.Section == "flags" {
					d, found = t.Lookup(a.Name)
				}
				if !found || !d.Sweep {
					ok = false
				}
				if _, has := llamacpp.FlagField[strings.TrimLeft(d.Spelling, "-")]; !has {
					ok = false
				}
				names[a.Section+"."+a.Name] = true
			}
		}
		if ok {
			var swept []string
			for n := range names {
				swept = append(swept, n)
			}
			sort.Strings(swept)
			return []group{{points: points, swept: swept}}
		}
	}
	var out []group
	for _, p := range points {
		out = append(out, group{points: []*spec.Point{p}})
	}
	return out
}

// Run executes the points of a prepared experiment, calling sink with each
// record as soon as it exists. Interrupted runs are recorded too. It
// returns the context's error when the user interrupted it.
func (r *Runner) Run(ctx context.Context, set *spec.Set, prep *Prepared, points []*spec.Point, sink Sink) error {
	groups := Groups(set, prep.Experiment, points)
	started := r.now()
	done := 0
	total := len(points)
	for gi, g := range groups {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		label := g.points[0].ID
		if len(g.points) > 1 {
			label = fmt.Sprintf("%s (%d points in one llama-bench process)", prep.Experiment.ID, len(g.points))
		}
		eta := ""
		if done > 0 {
			per := r.now().Sub(started) / time.Duration(done)
			eta = fmt.Sprintf(", ETA %s", (per * time.Duration(total-done)).Round(time.Second))
		}
		r.say("[%d/%d] %s%s", gi+1, len(groups), label, eta)
		runs, err := r.runGroup(ctx, prep, g)
		if err != nil {
			return err
		}
		for _, pr := range runs {
			if err := sink(pr); err != nil {
				return err
			}
		}
		done += len(g.points)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

func (r *Runner) runGroup(ctx context.Context, prep *Prepared, g group) ([]*PointRun, error) {
	x := prep.Experiment
	first := g.points[0]
	point := first
	if len(g.points) > 1 {
		point = combinedPoint(g)
	}
	runDir, err := os.MkdirTemp(r.tmpDir(), "run-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(runDir)
	in := prep.Inputs
	in.RunDir = runDir
	plan, err := all.Plan(point, in)
	if err != nil {
		return nil, fmt.Errorf("planning %s: %w", point.ID, err)
	}
	getenv := r.Getenv
	if getenv == nil {
		getenv = os.LookupEnv
	}
	env, passed := Environment(getenv, nil, x.Spec.PassEnv)
	timeout := r.Timeout
	if timeout == 0 {
		timeout = time.Hour
		if x.Spec.TimeoutSeconds > 0 {
			timeout = time.Duration(x.Spec.TimeoutSeconds) * time.Second
		}
	}
	ready := r.ReadyTimeout
	if ready == 0 && x.Spec.Engine.RPC != nil && x.Spec.Engine.RPC.ReadyTimeoutSeconds > 0 {
		ready = time.Duration(x.Spec.Engine.RPC.ReadyTimeoutSeconds) * time.Second
	}
	logDir := filepath.Join(runDir, "logs")
	out, err := Execute(ctx, Options{Plan: plan, Env: env, Dir: runDir, LogDir: logDir, Timeout: timeout,
		ReadyTimeout: ready, Grace: r.Grace, Progress: r.Progress})
	if err != nil {
		return nil, err
	}
	raw := map[string][]byte{}
	for _, name := range out.Logs {
		if b, err := os.ReadFile(filepath.Join(logDir, name)); err == nil {
			raw[name] = b
		}
	}
	for _, pp := range plan.Processes {
		for _, o := range pp.Outputs {
			if b, err := os.ReadFile(filepath.Join(runDir, o)); err == nil {
				raw[o] = b
			}
		}
	}
	verdict := r.judge(prep, point, out, raw)

	var runs []*PointRun
	for _, p := range g.points {
		rec := r.record(prep, p, plan, out, passed, runDir)
		rec.Status, rec.Error, rec.LogTail = verdict.status, verdict.err, verdict.logTail
		rec.Warnings = append(rec.Warnings, verdict.warnings...)
		if len(g.points) > 1 {
			rec.Warnings = append(rec.Warnings, fmt.Sprintf("ran as one llama-bench process with %d points (swept %s); the raw output holds every point's rows", len(g.points), strings.Join(g.swept, ", ")))
			rec.Metrics = verdict.metricsFor(p)
			if len(rec.Metrics) == 0 && rec.Status == results.StatusOK {
				rec.Status = results.StatusFailed
				rec.Error = "the engine printed no rows for this point"
			}
		} else {
			rec.Metrics = verdict.metrics
		}
		if rec.Status == results.StatusOK && len(rec.Metrics) == 0 {
			rec.Status = results.StatusFailed
			rec.Error = "the engine reported no measurements"
		}
		files := make([]string, 0, len(raw))
		for name := range raw {
			files = append(files, name)
		}
		sort.Strings(files)
		rec.Files = files
		results.Redact(rec)
		runs = append(runs, &PointRun{Point: p, Record: rec, Raw: raw})
	}
	return runs, nil
}

func (r *Runner) tmpDir() string {
	dir := filepath.Join(r.Cache, "runs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return os.TempDir()
	}
	return dir
}

// combinedPoint is the first point of a group with each swept flag given as
// the comma list of the group's values, in point order.
func combinedPoint(g group) *spec.Point {
	c := *g.points[0]
	lists := map[string][]string{}
	for _, p := range g.points {
		for _, a := range p.Axes {
			k := a.Section + "." + a.Name
			v := spec.RenderValue(a.Value)
			if !containsStr(lists[k], v) {
				lists[k] = append(lists[k], v)
			}
		}
	}
	rewrite := func(args []spec.Arg, section string) []spec.Arg {
		out := make([]spec.Arg, len(args))
		for i, a := range args {
			out[i] = a
			if l, ok := lists[section+"."+a.Def.Name]; ok {
				out[i].Values = []string{strings.Join(l, ",")}
			}
		}
		return out
	}
	c.Flags = rewrite(c.Flags, "flags")
	c.Bench = rewrite(c.Bench, "bench")
	c.ID = c.Experiment.ID
	return &c
}

func containsStr(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// verdict is an execution judged by its engine's parser.
type verdict struct {
	status, err, logTail string
	metrics              []results.Metric
	warnings             []string
	rows                 []llamacpp.Row
}

// metricsFor picks a point's rows out of a one-process sweep.
func (v verdict) metricsFor(p *spec.Point) []results.Metric {
	flags := map[string]any{}
	for _, a := range p.Axes {
		flags[a.Name] = spec.RenderValue(a.Value)
	}
	key, fields, err := llamacpp.FlagKey(flags)
	if err != nil {
		return nil
	}
	groups := llamacpp.SplitRows(v.rows, fields)
	var out []results.Metric
	for _, row := range groups[key].Rows {
		out = append(out, row.Metrics()...)
	}
	return out
}

func (r *Runner) judge(prep *Prepared, p *spec.Point, out *Outcome, raw map[string][]byte) verdict {
	x := prep.Experiment
	var v verdict
	switch out.How {
	case TimedOut:
		v.status, v.err = results.StatusTimeout, out.Err.Error()
	case Interrupted:
		v.status, v.err = results.StatusInterrupted, "interrupted by the user"
	case WorkerFailed:
		v.status, v.err = results.StatusFailed, out.Err.Error()
	case StartFailed:
		v.status, v.err = results.StatusFailed, out.Err.Error()
		return v
	}
	fam := x.Spec.Engine.Family
	switch fam {
	case spec.FamilyLlamaCpp, spec.FamilyIkLlamaCpp:
		o := llamacpp.Classify(out.Stdout, out.Stderr, out.ExitCode, out.Signaled)
		v.rows = o.Rows
		for _, row := range o.Rows {
			v.metrics = append(v.metrics, row.Metrics()...)
		}
		if v.status == "" {
			v.status, v.err, v.logTail = o.Status, o.Error, o.LogTail
		} else if len(o.Rows) > 0 && v.status != results.StatusInterrupted {
			v.warnings = append(v.warnings, fmt.Sprintf("%d rows were printed before the run stopped; they are kept", len(o.Rows)))
		}
		if v.logTail == "" && v.status != results.StatusOK {
			v.logTail = o.LogTail
		}
		// The binary must be the locked build: llama-bench reports the short
		// commit it was built from.
		if commit := prep.Engine.Commit; commit != "" && x.Spec.Engine.Source.Git != "" {
			for _, row := range o.Rows {
				if bc := strings.TrimSpace(row.BuildCommit); bc != "" && bc != "unknown" && !strings.HasPrefix(commit, bc) {
					v.status = results.StatusFailed
					v.err = fmt.Sprintf("the engine reports build_commit %s, but the lock pins %s", bc, commit)
					break
				}
			}
		}
		if v.status == results.StatusOK {
			single := map[string]any{}
			for k, val := range p.Spec.Flags {
				single[k] = val
			}
			if len(p.Axes) == 0 {
				if err := llamacpp.VerifyRows(o.Rows, single); err != nil {
					v.status = results.StatusFailed
					v.err = "engine did not apply the flags it was given: " + err.Error()
				}
			}
		}
	case spec.FamilyNodeLlama:
		o := nodellama.ParseOutput(out.Stdout, out.Stderr, out.ExitCode)
		v.rows = o.Rows
		v.metrics = o.Metrics
		if v.status == "" {
			v.status, v.err, v.logTail = o.Status, o.Error, o.LogTail
		}
	case spec.FamilyVLLM:
		mode, _ := p.Spec.Bench["mode"].(string)
		in := 0
		if n, ok := p.Spec.Bench["inputLen"]; ok {
			fmt.Sscan(spec.RenderValue(n), &in)
		}
		res, ok := raw[vllm.OutputFile]
		o := vllm.Classify(vllm.Output{Mode: mode, Result: res, ResultMissing: !ok, Stdout: out.Stdout, Stderr: out.Stderr,
			ExitCode: out.ExitCode, Signaled: out.Signaled, InputLen: in})
		v.metrics = o.Metrics
		v.warnings = append(v.warnings, o.Warnings...)
		if v.status == "" {
			v.status, v.err, v.logTail = o.Status, o.Error, o.LogTail
		}
	}
	if v.status == "" {
		v.status = results.StatusFailed
		v.err = "no verdict"
	}
	return v
}

func (r *Runner) record(prep *Prepared, p *spec.Point, plan *engine.Plan, out *Outcome, passed map[string]string, runDir string) *results.Run {
	x := prep.Experiment
	rec := &results.Run{
		Schema: results.SchemaVersion, RigorVersion: r.RigorVersion,
		ID: results.NewRunID(out.Start), Experiment: x.ID, Point: p.ID, Swept: p.SweptMap(),
		SpecDigest: p.Digest, LockDigest: prep.Entry.Digest(), Spec: p.SpecJSON(),
		Engine: prep.Engine, Model: prep.Model, Rig: r.Rig,
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
		}
		rec.Processes = append(rec.Processes, proc)
	}
	return rec
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

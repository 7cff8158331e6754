package llamacpp

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/rigorbench/rigor/internal/buildcache"
	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/engine/llamabench"
	"github.com/rigorbench/rigor/internal/gitsrc"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/spec"
)

// Engine is llama.cpp or ik_llama.cpp: llama-bench with rpc-server
// workers, built by rigor from the locked commit and patches (or prebuilt,
// source: path).
type Engine struct {
	// Fork is spec.FamilyLlamaCpp or spec.FamilyIkLlamaCpp.
	Fork string
}

var (
	_ engine.Engine  = Engine{}
	_ engine.Sweeper = Engine{}
	_ engine.Locator = Engine{}
	_ engine.Builder = Engine{}
)

// Family is the fork.
func (e Engine) Family() string { return e.Fork }

// Programs are the executables a build provides and a run may start.
var Programs = []string{"llama-bench", "rpc-server", "llama-server", PerplexityProgram}

// BuildOptionsOf returns the build of a locked experiment built from git.
func BuildOptionsOf(req engine.Request) (BuildOptions, error) {
	x, entry := req.Experiment, req.Lock
	if entry.Engine.Commit == "" {
		return BuildOptions{}, fmt.Errorf("%s: engine %s has no git source to build", x.ID, x.Spec.Engine.Family)
	}
	url := x.Spec.Engine.Source.Git
	if url == "" {
		url = entry.Engine.Requested.Git
	}
	if !strings.Contains(url, "://") && !strings.HasPrefix(url, "git@") {
		url = req.Abs(url)
	}
	opts := BuildOptions{
		Cache: req.Cache, URL: url, Commit: entry.Engine.Commit,
		Recipe: x.Spec.Engine.Build, Fork: x.Spec.Engine.Family, RPC: x.Spec.Engine.RPC != nil,
		Offline: req.Offline, Jobs: req.Jobs, Progress: req.BuildProgress, Log: req.BuildLog,
	}
	for _, p := range entry.Engine.Patches {
		opts.Patches = append(opts.Patches, PatchInput{Path: req.Abs(p.Path), SHA256: p.SHA256})
	}
	return opts, nil
}

// facts are what a record says of the engine before it is built.
func facts(req engine.Request) results.Engine {
	s, el := req.Experiment.Spec, req.Lock.Engine
	f := results.Engine{
		Family: s.Engine.Family, Ref: s.Engine.Source.Ref, Commit: el.Commit,
		Version: el.Version, Backend: s.Engine.Build.BackendOrCPU(),
	}
	for _, p := range el.Patches {
		f.Patches = append(f.Patches, results.Patch{Path: p.Path, SHA256: p.SHA256})
	}
	if src := s.Engine.Source; src.Path != "" {
		f.Source = src.Path
	} else {
		f.Source = gitsrc.StripUserinfo(src.Git)
	}
	return f
}

// Prepare builds the locked commit with its patches into the build cache,
// or finds the build there; a prebuilt engine (source: path) is located.
func (e Engine) Prepare(ctx context.Context, req engine.Request) (*engine.Prepared, error) {
	p := &engine.Prepared{Engine: facts(req)}
	var b *BuildInfo
	if src := req.Experiment.Spec.Engine.Source; src.Path != "" {
		var err error
		if b, err = Prebuilt(req.Abs(src.Path)); err != nil {
			return nil, err
		}
		p.Engine.BuildID = "prebuilt"
		p.Cached = true
	} else {
		opts, err := BuildOptionsOf(req)
		if err != nil {
			return nil, err
		}
		if req.Rebuild {
			in, _, err := BuildInputs(ctx, opts)
			if err != nil {
				return nil, err
			}
			req.Say("removing the cached build %.12s to build it again", in.Key())
			if err := cacheOf(opts).Remove(ctx, in.Key()); err != nil {
				return nil, err
			}
		} else {
			b, _ = LookupBuild(ctx, opts)
		}
		if b == nil {
			req.Say("building %s at %.12s", opts.Fork, opts.Commit)
			if b, err = Build(ctx, opts); err != nil {
				return nil, err
			}
		} else {
			req.Say("engine %s at %.12s: cached build %.12s", opts.Fork, opts.Commit, b.ID)
		}
		p.Engine.BuildID = b.ID
		p.Cached = b.Cached
	}
	p.BinDir, p.BuildCommit = b.BinDir, b.BuildCommit
	var names []string
	for _, n := range Programs {
		if _, ok := b.Bins[n]; ok {
			names = append(names, n)
		}
	}
	sums, err := engine.HashBinaries(ctx, req.Cache, b.BinDir, names...)
	if err != nil {
		return nil, err
	}
	// A cached program must still be the bytes its build made.
	for _, n := range names {
		if want, ok := b.SHA256[n]; ok && want != sums[n] {
			return nil, &buildcache.BinaryChangedError{Key: b.ID, Program: n, Path: b.Bins[n], Want: want, Got: sums[n]}
		}
	}
	p.Binaries = sums
	if err := checkLibraries(ctx, req.Cache, b, p); err != nil {
		return nil, err
	}
	return p, nil
}

// checkLibraries hashes the shared libraries of a cached build into
// p.Binaries, by their names ("bin/libllama.so", their paths in p.Paths),
// and checks each against the hash its
// build recorded. A library the build did not make (one added to bin/ or
// lib/ since, which the programs or ggml's backend loader may load) is an
// error too. A prebuilt engine's libraries are not the lock's to check.
func checkLibraries(ctx context.Context, cache string, b *BuildInfo, p *engine.Prepared) error {
	if b.ID == "" {
		return nil
	}
	var libs, paths []string
	for name := range b.Bins {
		if buildcache.IsLibrary(name) {
			libs = append(libs, name)
		}
	}
	sort.Strings(libs)
	for _, name := range slices.Sorted(maps.Keys(findLibraries(b.Dir))) {
		if _, ok := b.Bins[name]; !ok {
			return &buildcache.BinaryChangedError{Key: b.ID, Program: name, Path: filepath.Join(b.Dir, filepath.FromSlash("build/"+name)), Extra: true, Unrecorded: len(libs) == 0}
		}
	}
	for _, name := range libs {
		paths = append(paths, b.Bins[name])
	}
	got, err := engine.HashBinaries(ctx, cache, "", paths...)
	if err != nil {
		return err
	}
	for i, name := range libs {
		sum := got[paths[i]]
		if want, ok := b.SHA256[name]; !ok || want != sum {
			return &buildcache.BinaryChangedError{Key: b.ID, Program: name, Path: paths[i], Want: want, Got: sum}
		}
		p.Binaries[name] = sum
		if p.Paths == nil {
			p.Paths = map[string]string{}
		}
		p.Paths[name] = paths[i]
	}
	return nil
}

// Locate finds a prebuilt engine or a cached build without building.
func (e Engine) Locate(ctx context.Context, req engine.Request) (*engine.Prepared, error) {
	p := &engine.Prepared{Engine: facts(req), Cached: true}
	if src := req.Experiment.Spec.Engine.Source; src.Path != "" {
		b, err := Prebuilt(req.Abs(src.Path))
		if err != nil {
			return nil, err
		}
		p.BinDir, p.Engine.BuildID = b.BinDir, "prebuilt"
		return p, nil
	}
	opts, err := BuildOptionsOf(req)
	if err != nil {
		return nil, err
	}
	opts.Offline = true
	b, err := LookupBuild(ctx, opts)
	if errors.Is(err, buildcache.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	p.BinDir, p.Engine.BuildID, p.BuildCommit = b.BinDir, b.ID, b.BuildCommit
	return p, nil
}

// BuildKey is the cache key of the build Prepare would make.
func (e Engine) BuildKey(ctx context.Context, req engine.Request) (string, error) {
	if req.Experiment.Spec.Engine.Source.Path != "" {
		return "", nil // prebuilt: not built by rigor
	}
	opts, err := BuildOptionsOf(req)
	if err != nil {
		return "", err
	}
	in, _, err := BuildInputs(ctx, opts)
	if err != nil {
		return "", err
	}
	return in.Key(), nil
}

// Judge reads llama-bench's JSON rows and its exit; the binary must be the
// locked build (llama-bench reports its build commit), and, for a single
// point, every row must report the flags it was given.
func (e Engine) Judge(p *spec.Point, f engine.Finished) engine.Verdict {
	o := llamabench.Classify(f.Stdout, f.Stderr, f.ExitCode, f.Signaled)
	v := engine.Verdict{Status: o.Status, Error: o.Error, LogTail: o.LogTail, Detail: o.Rows, Build: llamabench.Build(o.Rows)}
	for _, row := range o.Rows {
		v.Metrics = append(v.Metrics, row.Metrics()...)
	}
	if f.Commit != "" {
		for _, row := range o.Rows {
			if bc := strings.TrimSpace(row.BuildCommit); bc != "" && bc != "unknown" && !strings.HasPrefix(f.Commit, bc) {
				v.Status = results.StatusFailed
				v.Error = fmt.Sprintf("the engine reports build_commit %s, but the lock pins %s", bc, f.Commit)
				break
			}
		}
	}
	if v.Status == results.StatusOK && len(p.Axes) == 0 {
		if err := llamabench.VerifyRows(o.Rows, p.Spec.Flags); err != nil {
			v.Status = results.StatusFailed
			v.Error = "engine did not apply the flags it was given: " + err.Error()
		}
	}
	return v
}

// Combine runs a sweep as one llama-bench process when every axis of every
// point is a flag llama-bench sweeps itself (a comma list) and reports in
// a JSON field, so the rows can be split back. Serve points never do
// (llama-server runs them, not llama-bench). Bench axes never combine:
// a swept -p or -n would split a point's pp and tg rows apart (a tg row
// reports n_prompt 0).
func (e Engine) Combine(points []*spec.Point) (*spec.Point, bool) {
	if len(points) < 2 || points[0].Spec.Serve != nil {
		return nil, false // each serve point is a server run of its own
	}
	lists := map[string][]string{}
	for _, p := range points {
		for _, a := range p.Axes {
			if a.Section != "flags" {
				return nil, false
			}
			d, ok := argDef(p.Flags, a.Name)
			if !ok || !d.Sweep || d.Field == "" {
				return nil, false
			}
			v := spec.RenderValue(a.Value)
			if !contains(lists[a.Name], v) {
				lists[a.Name] = append(lists[a.Name], v)
			}
		}
	}
	c := *points[0]
	c.Flags = make([]spec.Arg, len(points[0].Flags))
	for i, a := range points[0].Flags {
		c.Flags[i] = a
		if l, ok := lists[a.Def.Name]; ok {
			c.Flags[i].Values = []string{strings.Join(l, ",")}
		}
	}
	c.ID = c.Experiment.ID
	return &c, true
}

// Split picks a point's rows out of a combined process's verdict.
func (e Engine) Split(v engine.Verdict, p *spec.Point) []results.Metric {
	rows, _ := v.Detail.([]llamabench.Row)
	flags := map[string]any{}
	for _, a := range p.Axes {
		flags[a.Name] = spec.RenderValue(a.Value)
	}
	key, fields, err := llamabench.FlagKey(flags)
	if err != nil {
		return nil
	}
	var out []results.Metric
	for _, row := range llamabench.SplitRows(rows, fields)[key].Rows {
		out = append(out, row.Metrics()...)
	}
	return out
}

func argDef(args []spec.Arg, name string) (spec.FlagDef, bool) {
	for _, a := range args {
		if a.Def.Name == name {
			return a.Def, true
		}
	}
	return spec.FlagDef{}, false
}

func contains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

package nodellama

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/rigorbench/rigor/internal/buildcache"
	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/spec"
)

// Engine is node-llama-cpp: the locked npm packages installed into rigor's
// engine cache, run by rigor's bench runner.
type Engine struct{}

var (
	_ engine.Engine  = Engine{}
	_ engine.Locator = Engine{}
	_ engine.Builder = Engine{}
)

// Family is spec.FamilyNodeLlama.
func (Engine) Family() string { return spec.FamilyNodeLlama }

func installOptions(req engine.Request) (InstallOptions, error) {
	x, el := req.Experiment, req.Lock.Engine
	if el.NPM == nil {
		return InstallOptions{}, fmt.Errorf("the lock of %s has no npm package: run 'rigor lock --update engine %s'", x.ID, x.ID)
	}
	integ := map[string]string{el.NPM.Package: el.NPM.Integrity}
	platform := ""
	if el.NPM.Platform != nil {
		integ[el.NPM.Platform.Package] = el.NPM.Platform.Integrity
		platform = strings.TrimPrefix(el.NPM.Platform.Package, "@node-llama-cpp/")
	}
	return InstallOptions{Cache: req.Cache, Version: el.NPM.Version, Platform: platform, Integrity: integ,
		Progress: req.Progress, Offline: req.Offline}, nil
}

func facts(req engine.Request) results.Engine {
	s, el := req.Experiment.Spec, req.Lock.Engine
	return results.Engine{Family: s.Engine.Family, Source: "npm:" + Package, Ref: s.Engine.Source.Ref,
		Version: el.Version, Backend: s.Engine.Build.BackendOrCPU()}
}

// Prepare installs the locked packages into the engine cache, or finds
// them there, and writes the runner into the install. With
// engine.build.flavour "localBuild" it then compiles the bundled llama.cpp
// source into the build cache ([BuildNative]), or finds that build there,
// and the run starts in the build entry instead of the install.
func (Engine) Prepare(ctx context.Context, req engine.Request) (*engine.Prepared, error) {
	opts, err := installOptions(req)
	if err != nil {
		return nil, err
	}
	local := req.Experiment.Spec.Engine.Build.LocalBuild()
	if local {
		// Before installing anything: a build that cannot run fails now
		// (once installed, a cached build needs no build tools).
		o := opts
		o.Offline, o.Progress = true, nil
		if _, err := Install(ctx, o); errors.Is(err, ErrNotInstalled) {
			if err := CheckNativeTools(); err != nil {
				return nil, err
			}
		}
	}
	req.Say("engine node-llama-cpp %s", opts.Version)
	inst, err := Install(ctx, opts)
	if err != nil {
		return nil, err
	}
	if !local {
		return prepared(ctx, req, inst)
	}
	var nb *NativeBuild
	if req.Rebuild {
		key, _, _, err := NativeKey(ctx, req.Cache, inst)
		if err != nil {
			return nil, err
		}
		req.Say("removing the cached build %.12s to build it again", key)
		if err := (buildcache.Cache{Root: req.Cache}).Remove(ctx, key); err != nil {
			return nil, err
		}
	} else if nb, err = LookupNative(ctx, req.Cache, inst); err != nil && !errors.Is(err, buildcache.ErrNotFound) {
		return nil, err
	}
	if nb == nil {
		if buildcache.SubstituterOf(ctx) != nil {
			req.Say("node-llama-cpp %s's local build is not in the cache: asking the archive, else building its bundled llama.cpp for this CPU", inst.Version)
		} else {
			req.Say("building node-llama-cpp %s's bundled llama.cpp for this CPU", inst.Version)
		}
		nb, err = BuildNative(ctx, NativeOptions{Cache: req.Cache, Install: inst, Progress: req.BuildProgress, Log: req.BuildLog})
		if err != nil {
			return nil, err
		}
	} else {
		req.Say("node-llama-cpp %s: cached local build %.12s", inst.Version, nb.Key)
	}
	return preparedNative(ctx, req, inst, nb)
}

// preparedNative describes a native build: the entry is the bin
// directory (the runner is written into it), the build key is the build
// id, the bundle's commit is the engine's commit, and every native file
// must still hash to what its build recorded.
func preparedNative(ctx context.Context, req engine.Request, inst *Installation, nb *NativeBuild) (*engine.Prepared, error) {
	if err := ensureRunner(nb.Dir); err != nil {
		return nil, fmt.Errorf("preparing the local build of node-llama-cpp: %w", err)
	}
	p := &engine.Prepared{Engine: facts(req), BinDir: nb.Dir, Cached: nb.Cached, BuildCommit: nb.BuildCommit, InstallDir: inst.Dir}
	p.Engine.Version = inst.Version
	p.Engine.BuildID = nb.Key
	p.Engine.Commit = nb.Bundle.Commit
	p.Toolchain = map[string]string{"node": inst.NodeVersion}
	files := nativeFiles(nb.Dir)
	sums, err := engine.HashBinaries(ctx, req.Cache, nb.Dir, append([]string{RunnerFile, ServeFile, QualityFile}, files...)...)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if want := nb.Files[f]; want != "" && want != sums[f] {
			return nil, &buildcache.BinaryChangedError{Key: nb.Key, Program: f, Path: filepath.Join(nb.Dir, filepath.FromSlash(f)), Want: want, Got: sums[f]}
		}
	}
	if err := hashNode(ctx, req, inst, sums); err != nil {
		return nil, err
	}
	p.Binaries = sums
	return p, nil
}

// BuildKey is the build cache key of the local build Prepare would make,
// "" for the prebuilt flavour and when the install it builds from is not in
// the engine cache (then no build of it can be either).
func (Engine) BuildKey(ctx context.Context, req engine.Request) (string, error) {
	if !req.Experiment.Spec.Engine.Build.LocalBuild() {
		return "", nil
	}
	opts, err := installOptions(req)
	if err != nil {
		return "", err
	}
	opts.Offline, opts.Progress = true, nil
	inst, err := Install(ctx, opts)
	if errors.Is(err, ErrNotInstalled) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	key, _, _, err := NativeKey(ctx, req.Cache, inst)
	return key, err
}

func prepared(ctx context.Context, req engine.Request, inst *Installation) (*engine.Prepared, error) {
	p := &engine.Prepared{Engine: facts(req), BinDir: inst.Dir, Cached: inst.Cached, Warnings: inst.Warnings}
	p.Engine.Version = inst.Version
	p.Engine.BuildID = inst.Key
	p.Toolchain = map[string]string{"node": inst.NodeVersion}
	names := append([]string{RunnerFile, ServeFile, QualityFile}, NativeFiles(inst.Dir, inst.Platform)...)
	sums, err := engine.HashBinaries(ctx, req.Cache, inst.Dir, names...)
	if err != nil {
		return nil, err
	}
	if err := hashNode(ctx, req, inst, sums); err != nil {
		return nil, err
	}
	p.Binaries = sums
	return p, nil
}

// Locate finds the install in the cache without installing.
func (Engine) Locate(ctx context.Context, req engine.Request) (*engine.Prepared, error) {
	opts, err := installOptions(req)
	if err != nil {
		return nil, err
	}
	opts.Offline, opts.Progress = true, nil
	inst, err := Install(ctx, opts)
	if errors.Is(err, ErrNotInstalled) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if req.Experiment.Spec.Engine.Build.LocalBuild() {
		nb, err := LookupNative(ctx, req.Cache, inst)
		if errors.Is(err, buildcache.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		p := &engine.Prepared{Engine: facts(req), BinDir: nb.Dir, Cached: true, BuildCommit: nb.BuildCommit, InstallDir: inst.Dir}
		p.Engine.Version, p.Engine.BuildID, p.Engine.Commit = inst.Version, nb.Key, nb.Bundle.Commit
		return p, nil
	}
	return prepared(ctx, req, inst)
}

// Judge reads the runner's llama-bench-shaped rows and llama.cpp's own
// counters.
func (Engine) Judge(p *spec.Point, f engine.Finished) engine.Verdict {
	o := ParseOutput(f.Stdout, f.Stderr, f.ExitCode)
	return engine.Verdict{Status: o.Status, Error: o.Error, LogTail: o.LogTail, Metrics: o.Metrics, Detail: o.Rows, Build: o.Build, Warnings: o.Warnings}
}

// hashNode adds the sha256 of the node binary that runs the runner, when
// the installation names one, to sums as "node".
func hashNode(ctx context.Context, req engine.Request, inst *Installation, sums map[string]string) error {
	if inst.Node == "" {
		return nil
	}
	node, err := engine.HashBinaries(ctx, req.Cache, "", inst.Node)
	if err != nil {
		return err
	}
	sums["node"] = node[inst.Node]
	return nil
}

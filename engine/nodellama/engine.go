package nodellama

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/rigorbench/rigor/engine"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/spec"
)

// Engine is node-llama-cpp: the locked npm packages installed into rigor's
// engine cache, run by rigor's bench runner.
type Engine struct{}

var (
	_ engine.Engine  = Engine{}
	_ engine.Locator = Engine{}
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
// them there, and writes the runner into the install.
func (Engine) Prepare(ctx context.Context, req engine.Request) (*engine.Prepared, error) {
	opts, err := installOptions(req)
	if err != nil {
		return nil, err
	}
	req.Say("engine node-llama-cpp %s", opts.Version)
	inst, err := Install(ctx, opts)
	if err != nil {
		return nil, err
	}
	return prepared(ctx, req, inst)
}

func prepared(ctx context.Context, req engine.Request, inst *Installation) (*engine.Prepared, error) {
	p := &engine.Prepared{Engine: facts(req), BinDir: inst.Dir, Cached: inst.Cached, Warnings: inst.Warnings}
	p.Engine.Version = inst.Version
	p.Engine.BuildID = inst.Key
	p.Toolchain = map[string]string{"node": inst.NodeVersion}
	names := append([]string{RunnerFile, ServeFile}, NativeFiles(inst.Dir, inst.Platform)...)
	sums, err := engine.HashBinaries(ctx, req.Cache, inst.Dir, names...)
	if err != nil {
		return nil, err
	}
	if inst.Node != "" {
		node, err := engine.HashBinaries(ctx, req.Cache, "", inst.Node)
		if err != nil {
			return nil, err
		}
		sums["node"] = node[inst.Node]
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
	return prepared(ctx, req, inst)
}

// Judge reads the runner's llama-bench-shaped rows and llama.cpp's own
// counters.
func (Engine) Judge(p *spec.Point, f engine.Finished) engine.Verdict {
	o := ParseOutput(f.Stdout, f.Stderr, f.ExitCode)
	return engine.Verdict{Status: o.Status, Error: o.Error, LogTail: o.LogTail, Metrics: o.Metrics, Detail: o.Rows, Build: o.Build}
}

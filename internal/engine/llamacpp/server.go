package llamacpp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/spec"
)

// ServerProgram is the server of serve mode, built with llama-bench.
const ServerProgram = "llama-server"

var _ engine.Server = Engine{}

// PrepareServer builds (or finds) the engine as llama-bench's experiments
// do; the build's default targets include llama-server.
func (e Engine) PrepareServer(ctx context.Context, req engine.Request) (*engine.Prepared, error) {
	p, err := e.Prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	if _, ok := p.Binaries[ServerProgram]; !ok {
		if fi, err := os.Stat(filepath.Join(p.BinDir, ServerProgram)); err != nil || !fi.Mode().IsRegular() {
			hint := "add \"llama-server\" to engine.build.targets"
			if req.Experiment.Spec.Engine.Source.Path != "" {
				hint = "build llama-server into that directory"
			}
			return nil, fmt.Errorf("%s: the engine in %s has no %s (%s)", req.Experiment.ID, p.BinDir, ServerProgram, hint)
		}
		sums, err := engine.HashBinaries(ctx, req.Cache, p.BinDir, ServerProgram)
		if err != nil {
			return nil, err
		}
		p.Binaries[ServerProgram] = sums[ServerProgram]
	}
	return p, nil
}

// Serve is the rpc-server workers of engine.rpc, then llama-server bound
// to at, polled on /health (it binds before it loads the model, so the
// run also waits for its port).
func (e Engine) Serve(p *spec.Point, in engine.Inputs, at engine.Listen) (*engine.Served, error) {
	s := p.Spec
	var procs []engine.Process
	if s.Engine.RPC != nil {
		// The workers are the same as for llama-bench: plan the point as
		// a bench point and keep them.
		q := *p
		q.Spec.ExtraArgs, q.Spec.Serve = nil, nil
		plan, err := e.Plan(&q, in)
		if err != nil {
			return nil, err
		}
		procs = append(procs, plan.Processes[:len(plan.Processes)-1]...)
	}
	model := in.Model
	if model == "" {
		model = engine.ModelPath(s.Model, "")
	}
	argv := []string{in.Bin(ServerProgram), "-m", model, "--host", at.Host, "--port", fmt.Sprint(at.Port)}
	if s.Engine.RPC != nil {
		argv = append(argv, "--rpc", RPCString(s.Engine.Family, s.Engine.RPC))
	}
	for _, a := range p.Flags {
		argv = append(argv, a.Argv()...)
	}
	argv = append(argv, s.ExtraArgs...)
	procs = append(procs, engine.Process{Role: "server", Name: ServerProgram, Argv: argv, Env: engine.Env(s.Env),
		PassEnv: s.PassEnv, ReadyAddr: at.Addr()})
	return &engine.Served{Processes: procs, URL: at.URL(), Health: "/health"}, nil
}

package vllm

import (
	"context"
	"fmt"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/spec"
)

var _ engine.Server = Engine{}

// PrepareServer describes the installed vLLM, as for its bench.
func (e Engine) PrepareServer(ctx context.Context, req engine.Request) (*engine.Prepared, error) {
	return e.Prepare(ctx, req)
}

// Serve is `vllm serve MODEL --host H --port P` with the engine
// arguments. vLLM binds its port only once the model is loaded, so the
// process has no ready address: the load generator waits for /health.
func (Engine) Serve(p *spec.Point, in engine.Inputs, at engine.Listen) (*engine.Served, error) {
	s := p.Spec
	model := modelArg(s, in)
	argv := append(Command(s.Engine.Source), "serve", model, "--host", at.Host, "--port", fmt.Sprint(at.Port))
	for _, a := range p.Flags {
		argv = append(argv, a.Argv()...)
	}
	argv = append(argv, s.ExtraArgs...)
	proc := engine.Process{Role: "server", Name: "vllm-serve", Argv: argv, Env: engine.Env(s.Env), PassEnv: s.PassEnv}
	return &engine.Served{Processes: []engine.Process{proc}, URL: at.URL(), Health: "/health"}, nil
}

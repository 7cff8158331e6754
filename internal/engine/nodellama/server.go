package nodellama

import (
	"context"
	"fmt"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/spec"
)

var _ engine.Server = Engine{}

// PrepareServer installs node-llama-cpp as for the bench runner; the
// install holds rigor's server (ServeFile) beside it.
func (e Engine) PrepareServer(ctx context.Context, req engine.Request) (*engine.Prepared, error) {
	p, err := e.Prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	if _, ok := p.Binaries[ServeFile]; !ok {
		return nil, fmt.Errorf("%s: the node-llama-cpp install in %s has no %s", req.Experiment.ID, p.BinDir, ServeFile)
	}
	return p, nil
}

// Serve is `node rigor-serve.mjs --model M --host H --port P` with the
// server's flags: rigor's OpenAI-compatible server over node-llama-cpp.
func (Engine) Serve(p *spec.Point, in engine.Inputs, at engine.Listen) (*engine.Served, error) {
	s := p.Spec
	model := in.Model
	if model == "" {
		model = engine.ModelPath(s.Model, "")
	}
	argv := []string{"node", in.Bin(ServeFile), "--model", model, "--host", at.Host, "--port", fmt.Sprint(at.Port)}
	for _, a := range p.Flags {
		argv = append(argv, a.Argv()...)
	}
	argv = append(argv, s.ExtraArgs...)
	proc := engine.Process{Role: "server", Name: "node-llama-cpp-server", Argv: argv, Env: engine.Env(s.Env),
		PassEnv: s.PassEnv, ReadyAddr: at.Addr()}
	return &engine.Served{Processes: []engine.Process{proc}, URL: at.URL(), Health: "/health"}, nil
}

package serve

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rigorbench/rigor/engine"
	"github.com/rigorbench/rigor/engine/llamacpp"
	"github.com/rigorbench/rigor/engine/nodellama"
	"github.com/rigorbench/rigor/engine/vllm"
	"github.com/rigorbench/rigor/internal/spec"
)

// LlamaServer is llama.cpp's or ik_llama.cpp's llama-server, from the
// same build (or prebuilt directory) as llama-bench, with rpc-server
// workers when the experiment has engine.rpc.
type LlamaServer struct{}

// Program is the server's executable.
const Program = "llama-server"

// Prepare builds (or finds) the engine as llama-bench's experiments do;
// the build's default targets include llama-server.
func (LlamaServer) Prepare(ctx context.Context, bench engine.Engine, req engine.Request) (*engine.Prepared, error) {
	p, err := bench.Prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	if _, ok := p.Binaries[Program]; !ok {
		if fi, err := os.Stat(filepath.Join(p.BinDir, Program)); err != nil || !fi.Mode().IsRegular() {
			hint := "add \"llama-server\" to engine.build.targets"
			if req.Experiment.Spec.Engine.Source.Path != "" {
				hint = "build llama-server into that directory"
			}
			return nil, fmt.Errorf("%s: the engine in %s has no %s (%s)", req.Experiment.ID, p.BinDir, Program, hint)
		}
		sums, err := engine.HashBinaries(ctx, req.Cache, p.BinDir, Program)
		if err != nil {
			return nil, err
		}
		p.Binaries[Program] = sums[Program]
	}
	return p, nil
}

// Processes are the rpc-server workers of engine.rpc, then llama-server
// bound to the serve address.
func (LlamaServer) Processes(p *spec.Point, in engine.Inputs, bench engine.Engine, c Config) ([]engine.Process, error) {
	s := p.Spec
	var procs []engine.Process
	if s.Engine.RPC != nil {
		// The workers are the same as for llama-bench: plan the point with
		// the family's engine and keep them.
		q := *p
		q.Spec.ExtraArgs = nil
		plan, err := bench.Plan(&q, in)
		if err != nil {
			return nil, err
		}
		procs = append(procs, plan.Processes[:len(plan.Processes)-1]...)
	}
	model := in.Model
	if model == "" {
		model = engine.ModelPath(s.Model, "")
	}
	argv := []string{in.Bin(Program), "-m", model, "--host", c.Host, "--port", fmt.Sprint(c.Port)}
	if s.Engine.RPC != nil {
		argv = append(argv, "--rpc", llamacpp.RPCString(s.Engine.Family, s.Engine.RPC))
	}
	for _, a := range p.Flags {
		argv = append(argv, a.Argv()...)
	}
	argv = append(argv, s.ExtraArgs...)
	procs = append(procs, engine.Process{Role: "server", Name: Program, Argv: argv, Env: engine.Env(s.Env),
		PassEnv: s.PassEnv, ReadyAddr: c.Addr()})
	return procs, nil
}

// VllmServer is `vllm serve` from the described installation. It binds
// its port only once the model is loaded, so the plan gives it no ready
// address: the load generator waits for /health.
type VllmServer struct{}

// Prepare describes the installed vLLM.
func (VllmServer) Prepare(ctx context.Context, bench engine.Engine, req engine.Request) (*engine.Prepared, error) {
	return bench.Prepare(ctx, req)
}

// Processes is `vllm serve MODEL --host H --port P` with the engine
// arguments.
func (VllmServer) Processes(p *spec.Point, in engine.Inputs, bench engine.Engine, c Config) ([]engine.Process, error) {
	s := p.Spec
	model := in.Model
	if model == "" {
		if s.Model.Path != "" {
			model = s.Model.Path
		} else {
			model = s.Model.HF
		}
	}
	argv := append(vllm.Command(s.Engine.Source), "serve", model, "--host", c.Host, "--port", fmt.Sprint(c.Port))
	for _, a := range p.Flags {
		argv = append(argv, a.Argv()...)
	}
	argv = append(argv, s.ExtraArgs...)
	return []engine.Process{{Role: "server", Name: "vllm-serve", Argv: argv, Env: engine.Env(s.Env), PassEnv: s.PassEnv}}, nil
}

// NodeServer is rigor's OpenAI-compatible server over node-llama-cpp
// (engine/nodellama's rigor-serve.mjs, installed beside the bench runner).
type NodeServer struct{}

// Prepare installs node-llama-cpp as for the bench runner; the install
// holds the server.
func (NodeServer) Prepare(ctx context.Context, bench engine.Engine, req engine.Request) (*engine.Prepared, error) {
	p, err := bench.Prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	if _, ok := p.Binaries[nodellama.ServeFile]; !ok {
		return nil, fmt.Errorf("%s: the node-llama-cpp install in %s has no %s", req.Experiment.ID, p.BinDir, nodellama.ServeFile)
	}
	return p, nil
}

// Processes is `node rigor-serve.mjs --model M --host H --port P` with the
// server's flags.
func (NodeServer) Processes(p *spec.Point, in engine.Inputs, bench engine.Engine, c Config) ([]engine.Process, error) {
	s := p.Spec
	model := in.Model
	if model == "" {
		model = engine.ModelPath(s.Model, "")
	}
	argv := []string{"node", in.Bin(nodellama.ServeFile), "--model", model, "--host", c.Host, "--port", fmt.Sprint(c.Port)}
	for _, a := range p.Flags {
		argv = append(argv, a.Argv()...)
	}
	argv = append(argv, s.ExtraArgs...)
	return []engine.Process{{Role: "server", Name: "node-llama-cpp-server", Argv: argv, Env: engine.Env(s.Env),
		PassEnv: s.PassEnv, ReadyAddr: c.Addr()}}, nil
}

// Unsupported is a family that cannot serve yet.
type Unsupported struct{ Why string }

// Prepare refuses.
func (u Unsupported) Prepare(ctx context.Context, bench engine.Engine, req engine.Request) (*engine.Prepared, error) {
	return nil, fmt.Errorf("%s: %s cannot serve yet: %s", req.Experiment.ID, bench.Family(), u.Why)
}

// Processes refuses.
func (u Unsupported) Processes(p *spec.Point, in engine.Inputs, bench engine.Engine, c Config) ([]engine.Process, error) {
	return nil, fmt.Errorf("%s cannot serve yet: %s", strings.TrimSpace(bench.Family()), u.Why)
}

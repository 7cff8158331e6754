// Package nodellama is the engine for node-llama-cpp: real llama.cpp shipped
// inside npm packages, driven by a bench runner that rigor embeds.
package nodellama

import (
	"github.com/rigorbench/rigor/engine"
	"github.com/rigorbench/rigor/internal/spec"
)

// Engine plans node-llama-cpp bench runs.
type Engine struct{}

var _ engine.Planner = Engine{}

// RunnerFile is the bench runner's file name inside the engine install.
const RunnerFile = "rigor-bench.mjs"

// Plan builds the single bench process: node running the embedded runner
// against the installed node-llama-cpp.
func (Engine) Plan(p *spec.Point, in engine.Inputs) (*engine.Plan, error) {
	s := p.Spec
	model := in.Model
	if model == "" {
		model = engine.ModelPath(s.Model, "")
	}
	argv := []string{"node", in.Bin(RunnerFile), "--model", model}
	for _, a := range p.Bench {
		argv = append(argv, a.Argv()...)
	}
	for _, a := range p.Flags {
		argv = append(argv, a.Argv()...)
	}
	argv = append(argv, s.ExtraArgs...)
	return &engine.Plan{Point: p.ID, Family: s.Engine.Family, Processes: []engine.Process{{
		Role: "bench", Name: "node-llama-cpp", Argv: argv, Env: engine.Env(s.Env), PassEnv: s.PassEnv, Dir: in.BinDir,
	}}}, nil
}

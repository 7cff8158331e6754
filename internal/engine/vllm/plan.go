// Package vllm is the engine for vLLM's benchmarks: `vllm bench throughput`,
// `vllm bench latency` and `vllm bench serve`.
package vllm

import (
	"fmt"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/spec"
)

// OutputFile is the JSON file a run asks vllm bench to write, relative to
// the run directory.
const OutputFile = "vllm-result.json"

var reserved = map[string]string{
	"--output-json": "rigor reads the result from its own file",
	"--save-result": "rigor reads the result from its own file",
	"--result-dir":  "rigor reads the result from its own file",
	"--model":       "the model comes from model:",
}

// Command is the argv prefix that starts vLLM's CLI from the source.
func Command(src spec.Source) []string {
	switch {
	case src.Python != "":
		return []string{src.Python, "-m", "vllm.entrypoints.cli.main"}
	case src.Path != "":
		return []string{src.Path}
	}
	return []string{"vllm"}
}

// Plan builds the single bench process of a point.
func (Engine) Plan(p *spec.Point, in engine.Inputs) (*engine.Plan, error) {
	s := p.Spec
	for _, a := range s.ExtraArgs {
		if why, ok := reserved[a]; ok {
			return nil, &engine.ReservedArgError{Arg: a, Why: why}
		}
	}
	mode, _ := s.Bench["mode"].(string)
	if mode == "" {
		return nil, fmt.Errorf("bench.mode is not set")
	}
	argv := append(Command(s.Engine.Source), "bench", mode)
	// --backend first, as vllm's own docs write it.
	for _, a := range p.Bench {
		if a.Def.Name == "backend" {
			argv = append(argv, a.Argv()...)
		}
	}
	model := modelArg(s, in)
	argv = append(argv, "--model", model)
	for _, a := range p.Flags {
		argv = append(argv, a.Argv()...)
	}
	dataset, _ := s.Bench["dataset"].(string)
	if dataset != "" {
		argv = append(argv, "--dataset-name", dataset)
	}
	lenFlag := func(name string) string {
		if dataset == "random" {
			return "--random-" + name
		}
		return "--" + name
	}
	if v, ok := s.Bench["inputLen"]; ok {
		argv = append(argv, lenFlag("input-len"), spec.RenderValue(v))
	}
	if v, ok := s.Bench["outputLen"]; ok {
		argv = append(argv, lenFlag("output-len"), spec.RenderValue(v))
	}
	for _, a := range p.Bench {
		if a.Def.Name != "backend" {
			argv = append(argv, a.Argv()...)
		}
	}
	argv = append(argv, s.ExtraArgs...)
	out := in.Run(OutputFile)
	if mode == "serve" {
		argv = append(argv, "--save-result", "--result-dir", in.Run(""), "--result-filename", OutputFile)
	} else {
		argv = append(argv, "--output-json", out)
	}
	return &engine.Plan{Point: p.ID, Family: s.Engine.Family, Processes: []engine.Process{{
		Role: "bench", Name: "vllm-bench", Argv: argv, Env: engine.Env(s.Env), PassEnv: s.PassEnv,
		Outputs: []string{OutputFile},
	}}}, nil
}

// modelArg is the model vLLM is given: the resolved local files when the
// run has them, else the experiment's path or hub repository (vLLM then
// resolves it itself).
func modelArg(s spec.Spec, in engine.Inputs) string {
	switch {
	case in.Model != "":
		return in.Model
	case s.Model.Path != "":
		return s.Model.Path
	}
	return s.Model.HF
}

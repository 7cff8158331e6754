package nodellama

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/spec"
)

// RunnerFile is the bench runner's file name inside the engine install.
const RunnerFile = "rigor-bench.mjs"

// reserved are runner arguments rigor sets itself.
var reserved = map[string]string{
	"--model": "the model comes from model:", "-m": "the model comes from model:",
	"-r": "repetitions are bench.r", "--repetitions": "repetitions are bench.r",
}

// RunnerArgs are the options rigor's bench runner accepts (parseArgs in
// runner/rigor-bench.mjs); each takes a value, and any other option makes
// the runner exit with "unknown argument". vet refuses extraArgs outside
// this list, instead of every run failing.
var RunnerArgs = []string{
	"--model", "-m", "-p", "--n-prompt", "-n", "--n-gen", "-r", "--repetitions", "-pg",
	"-d", "--n-depth", "-t", "--threads", "-b", "--batch-size", "-c", "--context-size",
	"-ngl", "--gpu-layers", "--warmup", "--api",
}

// unknownArgs returns the options in extraArgs the runner would reject.
func unknownArgs(args []string) []string {
	var bad []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || len(a) < 2 {
			continue
		}
		if slices.Contains(RunnerArgs, a) {
			i++ // its value
			continue
		}
		bad = append(bad, a)
	}
	return bad
}

// unsupportedBench are llama-bench workload fields the runner does not
// implement, with the reason.
var unsupportedBench = map[string]string{
	"gp": "generation-after-prompt tests (gp) are ik_llama.cpp's; use d (depth) with n instead",
}

// Plan builds the single bench process: node running the embedded runner
// (in.BinDir is the engine install, [Installation.Dir]) against the installed
// node-llama-cpp. The argv is exactly what the runner parses:
//
//	node <install>/rigor-bench.mjs --model M [-p P] [-n N] [-r R] [-pg P,N]...
//	    [-d D] [--threads T] [--batch-size B] [--context-size C]
//	    [--gpu-layers L] [--warmup W] [extraArgs...]
//
// Values of swept fields may be comma lists, which the runner combines as
// llama-bench does. Unset fields take the runner's defaults: llama-bench's
// (p 512, n 128, r 5, one warm-up) and node-llama-cpp's (threads: the
// machine's math cores, batch 512), CPU only (gpu-layers 0), and a
// context just large enough for the longest test.
func (Engine) Plan(p *spec.Point, in engine.Inputs) (*engine.Plan, error) {
	s := p.Spec
	for _, a := range s.ExtraArgs {
		if why, ok := reserved[a]; ok {
			return nil, &engine.ReservedArgError{Arg: a, Why: why}
		}
	}
	if bad := unknownArgs(s.ExtraArgs); len(bad) > 0 {
		return nil, &engine.UnknownArgError{Program: "node-llama-cpp's bench runner", Args: bad, Accepted: RunnerArgs}
	}
	model := in.Model
	if model == "" {
		model = engine.ModelPath(s.Model, "")
	}
	argv := []string{"node", in.Bin(RunnerFile), "--model", model}
	for _, a := range p.Bench {
		if why, ok := unsupportedBench[a.Def.Name]; ok {
			return nil, fmt.Errorf("bench.%s: not supported by node-llama-cpp: %s", a.Def.Name, why)
		}
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

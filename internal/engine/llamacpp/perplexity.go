package llamacpp

import (
	"slices"
	"strconv"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/engine/llamabench"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/spec"
)

// PerplexityProgram is the program that measures quality: upstream's
// tools/perplexity, built beside llama-bench from the same locked build.
const PerplexityProgram = "llama-perplexity"

var _ engine.Qualifier = Engine{}

// qualityFlags are the flags of a point that llama-perplexity is given as
// llama-bench was: they change the numbers computed (the KV cache types)
// or where (threads, layers offloaded). Each takes one value.
var qualityFlags = []string{"t", "ngl", "ctk", "ctv"}

// QualityPlan returns the llama-perplexity process of a quality job: with
// job.WriteBase, `-f corpus --kl-divergence-base FILE` writes the
// baseline's log-probabilities; else `--kl-divergence-base FILE
// --kl-divergence` scores the point against them.
func (e Engine) QualityPlan(p *spec.Point, in engine.Inputs, job engine.QualityJob) (*engine.Plan, error) {
	if job.TopK > 0 {
		return nil, engine.FullFormOnly("llama-perplexity")
	}
	if t := p.Spec.Engine.Build.Targets; len(t) > 0 && !slices.Contains(t, PerplexityProgram) {
		return nil, &engine.QualityTargetError{Program: PerplexityProgram, Targets: t}
	}
	argv := []string{in.Bin(PerplexityProgram), "-m", in.Model, "-c", strconv.Itoa(job.Ctx), "--chunks", strconv.Itoa(job.Chunks)}
	for _, name := range qualityFlags {
		for _, a := range p.Flags {
			if a.Def.Name == name && len(a.Values) == 1 {
				argv = append(argv, "-"+name, a.Values[0])
			}
		}
	}
	if job.WriteBase {
		argv = append(argv, "-f", job.Corpus, "--kl-divergence-base", job.Base)
	} else {
		argv = append(argv, "--kl-divergence-base", job.Base, "--kl-divergence")
	}
	proc := engine.Process{Role: "quality", Name: PerplexityProgram, Argv: argv, Env: engine.Env(p.Spec.Env)}
	return &engine.Plan{Point: p.ID, Family: e.Fork, Processes: []engine.Process{proc}}, nil
}

// JudgeQuality reads llama-perplexity's output. A base run must end with
// its "Final estimate"; a --kl-divergence run must print the statistics
// blocks (it prints none below 100 scored tokens).
func (e Engine) JudgeQuality(job engine.QualityJob, f engine.Finished) (*results.QualityMeasured, error) {
	return llamabench.JudgePerplexity(llamabench.PerplexityRun{Program: PerplexityProgram, Tool: PerplexityProgram,
		Ctx: job.Ctx, WriteBase: job.WriteBase, ExitCode: f.ExitCode, Signaled: f.Signaled, Stdout: f.Stdout, Stderr: f.Stderr})
}

// ReferenceBytes is the size of llama-perplexity's base file: per scored
// token a scale, an offset and the vocabulary's log-probabilities as
// uint16 (padded to an even count), and the chunks' tokens.
func (Engine) ReferenceBytes(nVocab, ctx, chunks int64) int64 {
	nv := 2*((nVocab+1)/2) + 4
	return 20 + chunks*ctx*4 + chunks*(ctx-1-ctx/2)*nv*2
}

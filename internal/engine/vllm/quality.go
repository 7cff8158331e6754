package vllm

import (
	"strconv"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/engine/promptlp"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/spec"
)

var _ engine.Qualifier = Engine{}

// defaultMaxLogprobs is vLLM's --max-logprobs when it is not given: the
// most log-probabilities per position a request may ask for.
const defaultMaxLogprobs = 20

// QualityPlan measures quality through vLLM's prompt_logprobs: `vllm
// serve` of the point's model and engine arguments on job.Listen (with
// --max-logprobs when topK is above vLLM's default 20), and `rigor
// logprobs`, which waits for its /health, asks /v1/completions for the
// corpus chunks' prompt log-probabilities (the top k of each position)
// and writes the baseline's reference or scores against it. extraArgs
// are not given to the server: they may be bench arguments.
func (Engine) QualityPlan(p *spec.Point, in engine.Inputs, job engine.QualityJob) (*engine.Plan, error) {
	if err := promptlp.CheckTopK("vLLM", job, "prompt_logprobs"); err != nil {
		return nil, err
	}
	s := p.Spec
	model := modelArg(s, in)
	at := job.Listen
	if at.Host == "" {
		at.Host = "127.0.0.1"
	}
	argv := append(Command(s.Engine.Source), "serve", model, "--host", at.Host, "--port", strconv.Itoa(at.Port))
	for _, a := range p.Flags {
		argv = append(argv, a.Argv()...)
	}
	if job.TopK > defaultMaxLogprobs {
		argv = append(argv, "--max-logprobs", strconv.Itoa(job.TopK))
	}
	server := engine.Process{Role: "server", Name: "vllm-serve", Argv: argv, Env: engine.Env(s.Env), PassEnv: s.PassEnv}
	timeout := 600
	if s.TimeoutSeconds > 0 {
		timeout = s.TimeoutSeconds
	}
	client := promptlp.Process(p, job, promptlp.Client{URL: at.URL(), Model: model, Health: "/health", ReadyTimeout: timeout})
	return &engine.Plan{Point: p.ID, Family: s.Engine.Family, Processes: []engine.Process{server, client}}, nil
}

// JudgeQuality reads rigor logprobs' output.
func (Engine) JudgeQuality(job engine.QualityJob, f engine.Finished) (*results.QualityMeasured, error) {
	return promptlp.Judge(job, f)
}

// ReferenceBytes is the size of the top-k reference (nVocab is k).
func (Engine) ReferenceBytes(k, ctx, chunks int64) int64 {
	return promptlp.ReferenceBytes(k, ctx, chunks)
}

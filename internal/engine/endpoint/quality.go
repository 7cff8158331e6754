package endpoint

import (
	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/engine/promptlp"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/spec"
)

var _ engine.Qualifier = Engine{}

// QualityPlan measures the endpoint's quality through the prompt
// log-probabilities /v1/completions gives where the server offers them
// (vLLM's prompt_logprobs, else OpenAI's echo with logprobs): `rigor
// logprobs` against engine.source.url, with the key from serve.apiKeyEnv.
// Nothing is started. A server that offers neither is an error of the run
// that says so; the record says the KL divergence is the top-k form.
func (Engine) QualityPlan(p *spec.Point, in engine.Inputs, job engine.QualityJob) (*engine.Plan, error) {
	if err := promptlp.CheckTopK("an endpoint", job, "/v1/completions' prompt_logprobs or echo with logprobs"); err != nil {
		return nil, err
	}
	s := p.Spec
	proc := promptlp.Process(p, job, promptlp.Client{URL: s.Engine.Source.URL, Model: s.Model.Name, APIKeyEnv: APIKeyEnv(&s)})
	return &engine.Plan{Point: p.ID, Family: s.Engine.Family, Processes: []engine.Process{proc}}, nil
}

// JudgeQuality reads rigor logprobs' output.
func (Engine) JudgeQuality(job engine.QualityJob, f engine.Finished) (*results.QualityMeasured, error) {
	return promptlp.Judge(job, f)
}

// ReferenceBytes is the size of the top-k reference (nVocab is k).
func (Engine) ReferenceBytes(k, ctx, chunks int64) int64 {
	return promptlp.ReferenceBytes(k, ctx, chunks)
}

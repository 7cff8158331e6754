package nodellama

import (
	"strconv"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/engine/llamabench"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/spec"
)

var _ engine.Qualifier = Engine{}

// QualityTool names what computed a node-llama-cpp measurement.
const QualityTool = "node-llama-cpp (" + QualityFile + ")"

// QualityPlan returns the quality runner's process: with job.WriteBase it
// writes the baseline's log-probabilities over the vocabulary (float32) to
// job.Base; else it scores the point against them. The point's threads
// and GPU layers are passed as its bench runs them.
func (Engine) QualityPlan(p *spec.Point, in engine.Inputs, job engine.QualityJob) (*engine.Plan, error) {
	if job.TopK > 0 {
		return nil, engine.FullFormOnly("node-llama-cpp's quality runner")
	}
	model := in.Model
	if model == "" {
		model = engine.ModelPath(p.Spec.Model, "")
	}
	argv := []string{"node", in.Bin(QualityFile), "--model", model, "--ctx", strconv.Itoa(job.Ctx), "--chunks", strconv.Itoa(job.Chunks)}
	for _, a := range p.Flags {
		if len(a.Values) != 1 {
			continue
		}
		switch a.Def.Name {
		case "t":
			argv = append(argv, "--threads", a.Values[0])
		case "ngl":
			argv = append(argv, "--gpu-layers", a.Values[0])
		}
	}
	if job.WriteBase {
		argv = append(argv, "--corpus", job.Corpus, "--write-base", job.Base)
	} else {
		argv = append(argv, "--base", job.Base)
	}
	return &engine.Plan{Point: p.ID, Family: p.Spec.Engine.Family, Processes: []engine.Process{{
		Role: "quality", Name: "node-llama-cpp", Argv: argv, Env: engine.Env(p.Spec.Env), PassEnv: p.Spec.PassEnv, Dir: in.BinDir,
	}}}, nil
}

// JudgeQuality reads the quality runner's output, which is
// llama-perplexity's format.
func (Engine) JudgeQuality(job engine.QualityJob, f engine.Finished) (*results.QualityMeasured, error) {
	return llamabench.JudgePerplexity(llamabench.PerplexityRun{Program: QualityFile, Tool: QualityTool,
		Ctx: job.Ctx, WriteBase: job.WriteBase, ExitCode: f.ExitCode, Signaled: f.Signaled, Stdout: f.Stdout, Stderr: f.Stderr})
}

// ReferenceBytes is the size of a baseline's reference: float32
// log-probabilities of the whole vocabulary per scored token, and the
// chunks' tokens.
func (Engine) ReferenceBytes(nVocab, ctx, chunks int64) int64 {
	return 20 + chunks*ctx*4 + chunks*(ctx-1-ctx/2)*nVocab*4
}

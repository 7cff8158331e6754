package nodellama

import (
	"fmt"
	"strconv"
	"strings"

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
	if f.ExitCode != 0 || f.Signaled {
		return nil, fmt.Errorf("%s exited with status %d%s", QualityFile, f.ExitCode, tailLine(f.Stderr))
	}
	if job.WriteBase {
		if _, _, ok := llamabench.FinalEstimate(f.Stderr); !ok {
			return nil, fmt.Errorf("%s printed no \"Final estimate: PPL = …\"%s", QualityFile, tailLine(f.Stderr))
		}
		return nil, nil
	}
	q, err := llamabench.ParseKLDivergence(f.Stdout)
	if err != nil {
		return nil, fmt.Errorf("%s %w", QualityFile, err)
	}
	q.Tool = QualityTool
	q.Tokens = q.Chunks * (job.Ctx - 1 - job.Ctx/2)
	return q, nil
}

// ReferenceBytes is the size of a baseline's reference: float32
// log-probabilities of the whole vocabulary per scored token, and the
// chunks' tokens.
func (Engine) ReferenceBytes(nVocab, ctx, chunks int64) int64 {
	return 20 + chunks*ctx*4 + chunks*(ctx-1-ctx/2)*nVocab*4
}

// tailLine is ": " and the last line of the runner's stderr, or "".
func tailLine(b []byte) string {
	if l := lastLine(strings.TrimSpace(string(b))); l != "" {
		return ": " + l
	}
	return ""
}

// Package promptlp is quality measured through a server's prompt
// log-probabilities, for the families whose engine is a server that gives
// the top k of each position and no more: vLLM (prompt_logprobs, against
// the `vllm serve` the quality plan starts) and an endpoint (a server
// rigor did not start: prompt_logprobs or OpenAI's echo with logprobs,
// where it offers them). The quality process is rigor itself, `rigor
// logprobs` (internal/logprobs), which prints llama-perplexity's
// statistics with the KL divergence in its top-k form; the record says
// so (results.QualityMeasured.Form, TopK, Bound).
package promptlp

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/engine/llamabench"
	"github.com/rigorbench/rigor/internal/engine/serve"
	"github.com/rigorbench/rigor/internal/logprobs"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/spec"
)

// Program names the quality process in errors and records.
const Program = "rigor logprobs"

// Client is how the quality process reaches the server.
type Client struct {
	URL, Model string
	// Health is the path to wait for ("" for a server rigor did not
	// start); ReadyTimeout its bound in seconds.
	Health       string
	ReadyTimeout int
	// APIKeyEnv names the variable holding the key.
	APIKeyEnv string
}

// CheckTopK refuses a job without topK: a server gives only the top k.
func CheckTopK(family string, job engine.QualityJob, how string) error {
	if job.TopK > 0 {
		return nil
	}
	return &engine.QualityFormError{Path: "quality.measure",
		Msg:  fmt.Sprintf("quality.measure.topK is not set: %s measures quality through %s, which give the top k log-probabilities of each position, not the whole vocabulary", family, how),
		Hint: "set quality.measure.topK (20 is vLLM's default --max-logprobs); the record then says the KL divergence is the top-k form, a lower bound of the full one"}
}

// Process is the `rigor logprobs` process of a job.
func Process(p *spec.Point, job engine.QualityJob, c Client) engine.Process {
	argv := []string{serve.Self, "logprobs", "--url", c.URL, "--model", c.Model}
	if c.Health != "" {
		argv = append(argv, "--health", c.Health, "--ready-timeout", strconv.Itoa(c.ReadyTimeout)+"s")
	}
	if c.APIKeyEnv != "" {
		argv = append(argv, "--api-key-env", c.APIKeyEnv)
	}
	argv = append(argv, "--ctx", strconv.Itoa(job.Ctx), "--chunks", strconv.Itoa(job.Chunks), "--top-k", strconv.Itoa(job.TopK))
	if job.WriteBase {
		argv = append(argv, "--corpus", job.Corpus, "--write-base", job.Base)
	} else {
		argv = append(argv, "--base", job.Base)
	}
	proc := engine.Process{Role: "quality", Name: "logprobs", Argv: argv, Env: engine.Env(p.Spec.Env), PassEnv: p.Spec.PassEnv}
	if c.APIKeyEnv != "" {
		proc.SecretEnv = []string{c.APIKeyEnv}
	}
	return proc
}

// Judge reads what `rigor logprobs` printed: llama-perplexity's format,
// after a line naming the API; a failed process is its error line.
func Judge(job engine.QualityJob, f engine.Finished) (*results.QualityMeasured, error) {
	if f.ExitCode != 0 || f.Signaled {
		return nil, fmt.Errorf("%s exited with status %d%s", Program, f.ExitCode, errLine(f.Stderr))
	}
	api := "?"
	for _, l := range strings.Split(string(f.Stdout), "\n") {
		if a, ok := strings.CutPrefix(l, "api: "); ok {
			api = strings.TrimSpace(a)
			break
		}
	}
	q, err := llamabench.JudgePerplexity(llamabench.PerplexityRun{Program: Program, Tool: fmt.Sprintf("%s (/v1/completions %s)", Program, api),
		Ctx: job.Ctx, WriteBase: job.WriteBase, Stdout: f.Stdout, Stderr: f.Stderr})
	if q != nil {
		q.Form, q.TopK, q.Bound = results.FormTopK, job.TopK, results.TopKBound
	}
	return q, err
}

// errLine is ": " and the process's error line ("rigor: error: …"), or
// its last line, or "".
func errLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for _, l := range lines {
		if m, ok := strings.CutPrefix(l, "rigor: error: "); ok {
			return ": " + m
		}
	}
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return ": " + l
	}
	return ""
}

// ReferenceBytes is the size of a top-k reference with k entries per
// scored token.
func ReferenceBytes(k, ctx, chunks int64) int64 { return logprobs.ReferenceBytes(k, ctx, chunks) }

package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/rigorbench/rigor/internal/loadgen"
	"github.com/rigorbench/rigor/internal/logprobs"
)

// logprobsCmd is the quality process of a vLLM experiment (against the
// `vllm serve` its plan starts) and of an endpoint: rigor itself, asking
// /v1/completions for the prompt's log-probabilities, with the top k of
// each position. Hidden: people measure quality with quality.measure.
type logprobsCmd struct {
	URL       string        `name:"url" required:"" help:"Base URL of the OpenAI-compatible server."`
	Model     string        `name:"model" help:"The model field of each request."`
	APIKeyEnv string        `name:"api-key-env" placeholder:"NAME" help:"Variable holding the API key, sent as a bearer token and never written anywhere."`
	Health    string        `name:"health" default:"" help:"Path polled until it answers 200 first (empty: none)."`
	ReadyWait time.Duration `name:"ready-timeout" default:"10m" help:"Bound on the wait for the health path."`
	Ctx       int           `name:"ctx" required:"" help:"Tokens per chunk; the second half of each is scored."`
	Chunks    int           `name:"chunks" default:"0" help:"Chunks evaluated at most (0: all)."`
	TopK      int           `name:"top-k" required:"" help:"Log-probabilities per position."`
	Corpus    string        `name:"corpus" type:"path" help:"The text (with --write-base)."`
	WriteBase string        `name:"write-base" type:"path" help:"Write the baseline's reference here."`
	Base      string        `name:"base" type:"path" help:"Score against this reference."`
}

func (c *logprobsCmd) Run(e *env) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if (c.WriteBase == "") == (c.Base == "") || c.WriteBase != "" && c.Corpus == "" || c.Ctx < 16 || c.TopK < 1 {
		return fmt.Errorf("usage: rigor logprobs --url U --ctx C --top-k K (--corpus F --write-base OUT | --base IN)")
	}
	cl := &logprobs.Client{URL: c.URL, Model: c.Model}
	key, err := apiKeyFromEnv(c.APIKeyEnv)
	if err != nil {
		return err
	}
	cl.APIKey = key
	if c.Health != "" {
		fmt.Fprintf(e.stderr, "waiting for %s%s\n", c.URL, c.Health)
		if err := loadgen.WaitHealthy(ctx, strings.TrimRight(c.URL, "/")+c.Health, c.ReadyWait); err != nil {
			return err
		}
	}
	job := logprobs.Job{Ctx: c.Ctx, Chunks: c.Chunks, K: c.TopK}
	if c.WriteBase != "" {
		text, err := os.ReadFile(c.Corpus)
		if err != nil {
			return err
		}
		f, err := os.Create(c.WriteBase)
		if err != nil {
			return err
		}
		err = logprobs.WriteBase(ctx, cl, string(text), job, f, e.stdout, e.stderr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return hinted(err)
	}
	f, err := os.Open(c.Base)
	if err != nil {
		return err
	}
	defer f.Close()
	return hinted(logprobs.Score(ctx, cl, f, job, e.stdout, e.stderr))
}

// hinted carries a logprobs error's hint to rigor's hint line.
func hinted(err error) error {
	if le, ok := err.(*logprobs.Error); ok && le.Hint != "" {
		return withHint(le, le.Hint)
	}
	return err
}

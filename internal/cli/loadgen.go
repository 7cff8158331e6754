package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/rigorbench/rigor/internal/loadgen"
)

// loadgenCmd is the bench process of a serve experiment's plan: rigor
// itself, started by `rigor run` against the server the plan started (or
// an existing endpoint). Hidden: people run serve experiments, not this.
type loadgenCmd struct {
	URL         string        `name:"url" required:"" help:"Base URL of the OpenAI-compatible server."`
	Endpoint    string        `name:"endpoint" default:"completions" enum:"completions,chat" help:"completions (/v1/completions) or chat (/v1/chat/completions)."`
	Model       string        `name:"model" help:"The model field of each request."`
	APIKeyEnv   string        `name:"api-key-env" placeholder:"NAME" help:"Variable holding the API key, sent as a bearer token and never written anywhere."`
	Requests    int           `name:"requests" default:"100" help:"Measured requests."`
	Concurrency int           `name:"concurrency" default:"0" help:"Requests in flight at most (0: unbounded)."`
	Rate        float64       `name:"rate" default:"0" help:"Mean arrival rate in requests per second (0: all at once)."`
	Burstiness  float64       `name:"burstiness" default:"1" help:"Shape of the gamma arrival intervals (1: Poisson)."`
	Seed        uint64        `name:"seed" default:"0" help:"Seed of the prompts, lengths and arrivals."`
	InputLen    int           `name:"input-len" default:"128" help:"Prompt length in words (about one token each)."`
	OutputLen   int           `name:"output-len" default:"128" help:"max_tokens of each request."`
	RangeRatio  float64       `name:"range-ratio" default:"0" help:"Draw each length uniformly within ± this fraction."`
	IgnoreEOS   bool          `name:"ignore-eos" help:"Ask the server to generate max_tokens whatever it samples."`
	Warmup      int           `name:"warmup" default:"0" help:"Unmeasured requests sent first."`
	SLOTTFTMs   float64       `name:"slo-ttft-ms" help:"Goodput: TTFT at most this."`
	SLOTPOTMs   float64       `name:"slo-tpot-ms" help:"Goodput: TPOT at most this."`
	SLOE2ELMs   float64       `name:"slo-e2el-ms" help:"Goodput: end-to-end latency at most this."`
	Timeout     time.Duration `name:"timeout" default:"0s" help:"Bound on each request (0: none)."`
	Percentiles []float64     `name:"percentiles" default:"50,90,99" help:"Percentiles to report."`
	Health      string        `name:"health" default:"/health" help:"Path polled until it answers 200 before measuring (empty: none)."`
	ReadyWait   time.Duration `name:"ready-timeout" default:"10m" help:"Bound on the wait for the health path."`
	Out         string        `name:"out" required:"" type:"path" help:"Result JSON (vLLM bench serve's keys)."`
	Raw         string        `name:"raw" type:"path" help:"Per-request data, gzip-compressed JSON lines."`
}

func (c *loadgenCmd) Run(e *env) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := loadgen.Config{URL: c.URL, Endpoint: c.Endpoint, Model: c.Model, Requests: c.Requests,
		Concurrency: c.Concurrency, Rate: c.Rate, Burstiness: c.Burstiness, Seed: c.Seed, InputLen: c.InputLen,
		OutputLen: c.OutputLen, RangeRatio: c.RangeRatio, IgnoreEOS: c.IgnoreEOS, Warmup: c.Warmup,
		SLO:     loadgen.SLO{TTFTMs: c.SLOTTFTMs, TPOTMs: c.SLOTPOTMs, E2ELMs: c.SLOE2ELMs},
		Timeout: c.Timeout, Percentiles: c.Percentiles}
	key, err := apiKeyFromEnv(c.APIKeyEnv)
	if err != nil {
		return err
	}
	cfg.APIKey = key
	if err := cfg.Validate(); err != nil {
		return err
	}
	if c.Health != "" {
		fmt.Fprintf(e.stderr, "waiting for %s%s\n", c.URL, c.Health)
		if err := loadgen.WaitHealthy(ctx, strings.TrimRight(c.URL, "/")+c.Health, c.ReadyWait); err != nil {
			return err
		}
	}
	described := loadgen.Describe(ctx, c.URL, cfg.APIKey)
	fmt.Fprintf(e.stderr, "sending %d requests (%d warm-up first)\n", c.Requests, c.Warmup)
	last := time.Now()
	reqs, dur, err := loadgen.Run(ctx, cfg, func(done, failed int) {
		if time.Since(last) > time.Second || done == c.Requests {
			last = time.Now()
			fmt.Fprintf(e.stderr, "%d/%d requests done, %d failed\n", done, c.Requests, failed)
		}
	})
	if err != nil {
		return err
	}
	res := loadgen.Summarize(&cfg, reqs, dur)
	res.Server = described
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(c.Out, append(b, '\n')); err != nil {
		return fmt.Errorf("writing %s: %w", c.Out, err)
	}
	if c.Raw != "" {
		f, err := os.CreateTemp(filepath.Dir(c.Raw), ".raw-*")
		if err != nil {
			return fmt.Errorf("writing %s: %w", c.Raw, err)
		}
		werr := loadgen.WriteRaw(f, reqs)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr == nil {
			werr = os.Rename(f.Name(), c.Raw)
		}
		if werr != nil {
			os.Remove(f.Name())
			return fmt.Errorf("writing %s: %w", c.Raw, werr)
		}
	}
	fmt.Fprintf(e.stdout, "completed %d, failed %d in %.3fs: %.2f req/s, %.2f output tok/s, TTFT mean %.2f ms, TPOT mean %.2f ms\n",
		res.Completed, res.Failed, res.Duration, res.RequestThroughput, res.OutputThroughput,
		res.Stats["mean_ttft_ms"], res.Stats["mean_tpot_ms"])
	for k, n := range res.Failures {
		fmt.Fprintf(e.stdout, "failed %d: %s (first: %s)\n", n, k, res.FirstErrors[k])
	}
	if ctx.Err() != nil {
		return errors.New("interrupted: the requests measured so far are written")
	}
	return nil
}

// writeFileAtomic writes a file through a temporary one and a rename.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

// apiKeyFromEnv returns the value of the variable --api-key-env names
// ("" when none is named): the key itself never appears in an argument.
// A named variable that is unset or empty is an error.
func apiKeyFromEnv(name string) (string, error) {
	if name == "" {
		return "", nil
	}
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		return "", withHint(fmt.Errorf("--api-key-env: %s is not set", name),
			"set it in the environment rigor runs in; an experiment names it in serve.apiKeyEnv")
	}
	return v, nil
}

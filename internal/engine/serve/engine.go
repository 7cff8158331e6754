// Package serve is serve mode: a family's engine run as an
// OpenAI-compatible server (llama.cpp's and ik_llama.cpp's llama-server,
// `vllm serve`, rigor's node-llama-cpp server), or a server rigor did not
// start (the endpoint family), measured under concurrent load by rigor's
// own load generator (internal/loadgen), which is rigor itself: the
// plan's bench process is `rigor loadgen`.
//
// [Engine] wraps a family's bench engine. Experiments without `serve:`
// go to the wrapped engine unchanged (and engine.As finds its
// capabilities, Sweeper, Locator and Builder, through Unwrap); serve
// experiments are planned as
// the family's [engine.Server] says (the processes that start the server,
// with its workers for llama.cpp's rpc-server; none for an endpoint),
// then the load generator, which waits for the server's /health when
// rigor started it, sends the workload and writes its result and the raw
// per-request data as the plan's outputs. Judge turns the result into the
// common metrics (test "serve", the names vLLM's `bench serve` results
// get in rigor); what the server reported of itself (/props, /version,
// /v1/models) is the record's engine build, for a server rigor started
// as for one it did not (whose only evidence of the engine it is). This package
// names no family: engine/all wraps each one.
package serve

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/spec"
)

// Outputs of the load generator, relative to the run directory.
const (
	// ResultFile is the summary, with vLLM bench serve's keys.
	ResultFile = "serve-result.json"
	// RawFile is every request, gzip-compressed JSON lines.
	RawFile = "serve-requests.jsonl.gz"
)

// Engine is a family that can also serve.
type Engine struct {
	// Bench is the family's own engine, for experiments without serve.
	Bench engine.Engine
	// Server is the family's serving capability, nil when it has none.
	Server engine.Server
}

var _ engine.Engine = Engine{}

// Wrap is the family's engine that can also serve (when it is an
// [engine.Server]). It claims no capability itself: [engine.As] finds the
// family's own (Sweeper, Locator, Builder, Server) through Unwrap, so a
// capability the family lacks is not claimed for it.
func Wrap(bench engine.Engine) engine.Engine {
	e := Engine{Bench: bench}
	e.Server, _ = engine.As[engine.Server](bench)
	return e
}

// Unwrap is the family's own engine.
func (e Engine) Unwrap() engine.Engine { return e.Bench }

// Family is the wrapped family's.
func (e Engine) Family() string { return e.Bench.Family() }

func isServe(s *spec.Spec) bool { return s != nil && s.Serve != nil }

// Prepare prepares the wrapped engine, and for a serve experiment also
// the server's executable.
func (e Engine) Prepare(ctx context.Context, req engine.Request) (*engine.Prepared, error) {
	if req.Experiment == nil || !isServe(&req.Experiment.Spec) {
		return e.Bench.Prepare(ctx, req)
	}
	if e.Server == nil {
		return nil, fmt.Errorf("%s: %s cannot serve yet", req.Experiment.ID, e.Bench.Family())
	}
	return e.Server.PrepareServer(ctx, req)
}

// Plan plans a serve point as the server (and its workers) and the load
// generator; other points as the wrapped engine does.
func (e Engine) Plan(p *spec.Point, in engine.Inputs) (*engine.Plan, error) {
	if !isServe(&p.Spec) {
		return e.Bench.Plan(p, in)
	}
	s := p.Spec
	for _, a := range s.ExtraArgs {
		if why, ok := reserved[a]; ok {
			return nil, &engine.ReservedArgError{Arg: a, Why: why}
		}
	}
	if e.Server == nil {
		return nil, fmt.Errorf("%s cannot serve yet", e.Bench.Family())
	}
	c, err := ConfigOf(s.Serve)
	if err != nil {
		return nil, err
	}
	sv, err := e.Server.Serve(p, in, c.Listen())
	if err != nil {
		return nil, err
	}
	procs := sv.Processes
	model := s.Model.Name // the name a server rigor did not start knows its model by
	if model == "" {
		model = in.Model
	}
	if model == "" {
		model = engine.ModelPath(s.Model, "")
	}
	argv := []string{Self, "loadgen", "--url", sv.URL, "--endpoint", c.Endpoint, "--model", model}
	if sv.Health != "/health" {
		argv = append(argv, "--health="+sv.Health)
	}
	keyEnv := sv.APIKeyEnv
	if keyEnv == "" {
		keyEnv = c.APIKeyEnv // a server rigor starts with a key (vllm serve --api-key)
	}
	if keyEnv != "" {
		argv = append(argv, "--api-key-env", keyEnv)
	}
	for _, a := range p.Bench {
		argv = append(argv, a.Argv()...)
	}
	if slo, ok := s.Bench["slo"].(map[string]any); ok {
		for _, k := range []string{"ttftMs", "tpotMs", "e2elMs"} {
			if v, ok := slo[k]; ok {
				argv = append(argv, "--slo-"+strings.ToLower(strings.TrimSuffix(k, "Ms"))+"-ms", spec.RenderValue(v))
			}
		}
	}
	if c.RequestTimeout > 0 {
		argv = append(argv, "--timeout", strconv.Itoa(c.RequestTimeout)+"s")
	}
	if sv.Health != "" {
		argv = append(argv, "--ready-timeout", strconv.Itoa(c.ReadyTimeout)+"s")
	}
	argv = append(argv, "--out", in.Run(ResultFile), "--raw", in.Run(RawFile))
	lg := engine.Process{Role: "bench", Name: "loadgen", Argv: argv, Env: engine.Env(s.Env),
		PassEnv: s.PassEnv, Outputs: []string{ResultFile, RawFile}}
	if keyEnv != "" {
		lg.SecretEnv = []string{keyEnv}
	}
	procs = append(procs, lg)
	return &engine.Plan{Point: p.ID, Family: s.Engine.Family, Processes: procs}, nil
}

// reserved are server flags rigor sets itself.
var reserved = map[string]string{
	"-m": "the model comes from model:", "--model": "the model comes from model:",
	"--host": "the address comes from serve.host", "--port": "the port comes from serve.port",
	"--rpc": "workers come from engine.rpc", "-rpc": "workers come from engine.rpc",
}

// Judge reads the load generator's result of a serve point, or the
// wrapped engine's output of another.
func (e Engine) Judge(p *spec.Point, f engine.Finished) engine.Verdict {
	if !isServe(&p.Spec) {
		return e.Bench.Judge(p, f)
	}
	v := Judge(f)
	if p.Spec.Engine.Source.URL != "" {
		unstarted(&v, p, f)
	} else {
		v.Build = reported(f, "server")
	}
	return v
}

// Config is a serve experiment's server settings (schema #Serve).
type Config struct {
	Endpoint string
	Host     string
	Port     int
	// APIKeyEnv names the variable holding the key the load generator
	// sends.
	APIKeyEnv string
	// ReadyTimeout and RequestTimeout are seconds.
	ReadyTimeout, RequestTimeout int
}

// Listen is the address a server rigor starts binds to.
func (c Config) Listen() engine.Listen { return engine.Listen{Host: c.Host, Port: c.Port} }

// ConfigOf reads the serve section with its defaults.
func ConfigOf(m map[string]any) (Config, error) {
	c := Config{Endpoint: "completions", Host: "127.0.0.1", Port: 8080, ReadyTimeout: 600}
	num := func(k string, dst *int) error {
		v, ok := m[k]
		if !ok {
			return nil
		}
		n, err := strconv.Atoi(spec.RenderValue(v))
		if err != nil {
			return fmt.Errorf("serve.%s: %v is not an integer", k, v)
		}
		*dst = n
		return nil
	}
	if v, ok := m["endpoint"].(string); ok && v != "" {
		c.Endpoint = v
	}
	if v, ok := m["host"].(string); ok && v != "" {
		c.Host = v
	}
	if v, ok := m["apiKeyEnv"].(string); ok {
		c.APIKeyEnv = v
	}
	for k, dst := range map[string]*int{"port": &c.Port, "readyTimeoutSeconds": &c.ReadyTimeout, "requestTimeoutSeconds": &c.RequestTimeout} {
		if err := num(k, dst); err != nil {
			return c, err
		}
	}
	return c, nil
}

// Self is the rigor executable a serve plan starts as its load generator:
// the program this process was started as, found the way the shell found
// it, so that a plan names the same rigor that made it.
var Self = self()

func self() string {
	a := os.Args[0]
	if strings.Contains(a, "/") {
		if abs, err := filepath.Abs(a); err == nil {
			return abs
		}
		return a
	}
	if p, err := exec.LookPath(a); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	if p, err := os.Executable(); err == nil {
		return p
	}
	return "rigor"
}

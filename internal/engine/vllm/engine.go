package vllm

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/spec"
)

// Engine is vLLM's bench: an installed vllm (an executable, or a Python
// environment that has it), described rather than built.
type Engine struct{}

var _ engine.Engine = Engine{}

// Family is spec.FamilyVLLM.
func (Engine) Family() string { return spec.FamilyVLLM }

// Prepare describes the installed vLLM: `vllm --version`, the sha256 of
// its entry point, and the digest of the environment's installed packages
// as its build identity. Nothing is installed, so nothing is fetched.
func (Engine) Prepare(ctx context.Context, req engine.Request) (*engine.Prepared, error) {
	s, el := req.Experiment.Spec, req.Lock.Engine
	src := s.Engine.Source
	src.Path, src.Python = req.Abs(src.Path), req.Abs(src.Python)
	f, err := Describe(ctx, src)
	if err != nil {
		return nil, err
	}
	p := &engine.Prepared{Cached: true, Engine: results.Engine{
		Family: s.Engine.Family, Ref: s.Engine.Source.Ref, Commit: el.Commit, Backend: s.Engine.Build.BackendOrCPU(),
		Version: f.Version, BuildID: f.PackagesDigest,
	}}
	switch {
	case s.Engine.Source.Python != "":
		p.Engine.Source = s.Engine.Source.Python
	default:
		p.Engine.Source = s.Engine.Source.Path
	}
	if p.Engine.BuildID == "" && f.ExecutableSHA256 != "" {
		p.Engine.BuildID = "sha256:" + f.ExecutableSHA256
	}
	p.BinDir = filepath.Dir(f.Executable)
	p.Binaries = map[string]string{filepath.Base(f.Executable): f.ExecutableSHA256}
	return p, nil
}

// Judge reads the result file the bench wrote (or its stdout) by mode.
func (Engine) Judge(p *spec.Point, f engine.Finished) engine.Verdict {
	mode, _ := p.Spec.Bench["mode"].(string)
	in := 0
	if n, ok := p.Spec.Bench["inputLen"]; ok {
		fmt.Sscan(spec.RenderValue(n), &in)
	}
	res, ok := f.Outputs[OutputFile]
	o := Classify(Output{Mode: mode, Result: res, ResultMissing: !ok, Stdout: f.Stdout, Stderr: f.Stderr,
		ExitCode: f.ExitCode, Signaled: f.Signaled, InputLen: in})
	return engine.Verdict{Status: o.Status, Error: o.Error, LogTail: o.LogTail, Metrics: o.Metrics, Warnings: o.Warnings,
		TimedSeconds: measuredSeconds(mode, res)}
}

// measuredSeconds is how long the measured part of a vllm bench took, as
// its result file says: throughput's elapsed_time, serve's duration, the
// sum of latency's latencies (its warm-up iterations are not among them);
// 0 when the file does not say. The power sampler's energy of those
// seconds before the bench exited gives tok/J.
func measuredSeconds(mode string, res []byte) float64 {
	m, err := decodeObject(res)
	if err != nil {
		return 0
	}
	switch mode {
	case ModeThroughput:
		v, _ := num(m, "elapsed_time")
		return v
	case ModeServe:
		v, _ := num(m, "duration")
		return v
	case ModeLatency:
		ls, _ := m["latencies"].([]any)
		var sum float64
		for _, l := range ls {
			f, ok := num(map[string]any{"v": l}, "v")
			if !ok {
				return 0
			}
			sum += f
		}
		return sum
	}
	return 0
}

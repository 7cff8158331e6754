// Package toy is an engine family that exists only in a test build: the
// proof that adding a family is its package, one line in a registry and
// one row of the schema's #Families, with no edit anywhere else. The
// testscripts' test binary links it as `rigor-toy` (rigor with
// all.Register(toy.Engine{}) and schema.Add of toy.cue) and `toy-bench`
// (its benchmark program, [BenchMain]); the rigor binary does not, and
// knows no toy family.
//
// The toy bench measures something real and small: it "generates" n
// tokens per repetition, each a sha256 over the model file's bytes and
// the token's index, on --threads goroutines, and prints one JSON line
// per repetition with the rate it achieved and the thread count it used.
package toy

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/metric"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/spec"
)

// Family is the toy family's name, its key in #Families.
const Family = "toy"

// Bench is the toy bench's program name.
const Bench = "toy-bench"

// Schema is the toy family's row of #Families, a file of the schema
// package ([schema.Add]).
//
//go:embed toy.cue
var Schema []byte

// Engine is the toy family.
type Engine struct{}

var _ engine.Engine = Engine{}

// Family is [Family].
func (Engine) Family() string { return Family }

// Prepare finds the toy bench (a path, or a name on PATH) and hashes it.
// Nothing is built or fetched.
func (Engine) Prepare(ctx context.Context, req engine.Request) (*engine.Prepared, error) {
	src := req.Experiment.Spec.Engine.Source.Path
	exe := req.Abs(src)
	if !strings.Contains(exe, "/") {
		p, err := exec.LookPath(exe)
		if err != nil {
			return nil, fmt.Errorf("the toy bench %q is not on PATH", src)
		}
		exe = p
	}
	exe, err := filepath.Abs(exe)
	if err != nil {
		return nil, err
	}
	dir, name := filepath.Split(exe)
	bins, err := engine.HashBinaries(ctx, req.Cache, dir, name)
	if err != nil {
		return nil, err
	}
	return &engine.Prepared{BinDir: filepath.Clean(dir), Binaries: bins, Cached: true,
		Engine: results.Engine{Family: Family, Source: src, Backend: "cpu", BuildID: "sha256:" + bins[name]}}, nil
}

// Plan is one toy bench process: the typed flags and workload in schema
// order, then extraArgs.
func (Engine) Plan(p *spec.Point, in engine.Inputs) (*engine.Plan, error) {
	s := p.Spec
	for _, a := range s.ExtraArgs {
		if a == "--model" || a == "-m" {
			return nil, &engine.ReservedArgError{Arg: a, Why: "the model comes from model:"}
		}
	}
	model := in.Model
	if model == "" {
		model = engine.ModelPath(s.Model, "")
	}
	argv := []string{in.Bin(Bench), "--model", model}
	for _, a := range p.Flags {
		argv = append(argv, a.Argv()...)
	}
	for _, a := range p.Bench {
		argv = append(argv, a.Argv()...)
	}
	argv = append(argv, s.ExtraArgs...)
	return &engine.Plan{Point: p.ID, Family: Family, Processes: []engine.Process{{
		Role: "bench", Name: "toy-bench", Argv: argv, Env: engine.Env(s.Env), PassEnv: s.PassEnv,
	}}}, nil
}

// Row is one line of the toy bench's output: one repetition.
type Row struct {
	Test    string  `json:"test"`
	Threads int     `json:"threads"`
	TPS     float64 `json:"tps"`
}

// Judge reads the toy bench's rows: one tg sample per repetition. A run
// that did not use the threads it was given failed; a process that
// exited non-zero after rows crashed.
func (Engine) Judge(p *spec.Point, f engine.Finished) engine.Verdict {
	var rows []Row
	var bad string
	for _, line := range strings.Split(string(f.Stdout), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var r Row
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.Test == "" {
			bad = line
			continue
		}
		rows = append(rows, r)
	}
	var v engine.Verdict
	if len(rows) > 0 {
		m := results.Metric{Name: metric.TokSOut, Test: rows[0].Test, Unit: metric.TokPerSec, Direction: results.HigherIsBetter}
		for _, r := range rows {
			m.Samples = append(m.Samples, r.TPS)
			m.Value += r.TPS / float64(len(rows))
		}
		v.Metrics = []results.Metric{m}
	}
	switch {
	case f.ExitCode != 0 && len(rows) > 0:
		v.Status, v.Error = results.StatusCrashed, fmt.Sprintf("the toy bench exited %d after %d rows", f.ExitCode, len(rows))
	case f.ExitCode == 2:
		v.Status, v.Error = results.StatusFailed, "the toy bench rejected its arguments: "+lastLine(f.Stderr)
	case f.ExitCode != 0:
		v.Status, v.Error = results.StatusFailed, fmt.Sprintf("the toy bench exited %d: %s", f.ExitCode, lastLine(f.Stderr))
	case bad != "":
		v.Status, v.Error = results.StatusFailed, fmt.Sprintf("the toy bench printed a line that is no row: %.80q", bad)
	default:
		v.Status = results.StatusOK
		if want, ok := p.Spec.Flags["threads"]; ok {
			for _, r := range rows {
				if spec.RenderValue(want) != fmt.Sprint(r.Threads) {
					v.Status, v.Error = results.StatusFailed, fmt.Sprintf("the toy bench ran on %d threads, not the %s it was given", r.Threads, spec.RenderValue(want))
					break
				}
			}
		}
	}
	if v.Status != results.StatusOK {
		v.LogTail = tail(f.Stderr)
	}
	return v
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.ToValidUTF8(lines[len(lines)-1], "?")
}

func tail(b []byte) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return strings.Join(lines, "\n")
}

package nodellama

// This file reads what the runner left behind. The runner prints
// llama-bench's JSON shape on purpose, so the structure, the crash rules and
// the metric names are engine/llamacpp's; what is added here is the runner's
// own error line and the engine-counter metrics.

import (
	"bytes"
	"strings"

	"github.com/rigorbench/rigor/internal/engine/llamabench"
	"github.com/rigorbench/rigor/internal/logtail"
	"github.com/rigorbench/rigor/internal/metric"
	"github.com/rigorbench/rigor/internal/results"
)

// Outcome is the verdict on one runner process.
type Outcome struct {
	// Status is results.StatusOK, results.StatusFailed or
	// results.StatusCrashed.
	Status string
	// Error says why the status is not ok, e.g. "failed to load model
	// 'm.gguf': Invalid GGUF magic…" or "runner rejected arguments:
	// unknown argument: --bogus".
	Error string
	// Rows are the rows parsed from stdout, whatever the status.
	Rows []llamabench.Row
	// Metrics are the rows' metrics: first, per row, the runner's own
	// (tokSPrompt, tokSOut or tokSTotal, timed around the evaluation
	// calls), then the same throughput from llama.cpp's performance
	// counters (engineTokSPrompt, engineTokSOut, engineTokSTotal: the time
	// inside llama_decode), when the row has them.
	Metrics []results.Metric
	// LogTail is the last lines of stderr when the status is not ok.
	LogTail string
	// Build is what the rows say of the binary that ran: node-llama-cpp's
	// build type (prebuilt or localBuild), the CPU features from
	// llama.cpp's system info, the CPU backend library and the native
	// addon; nil when no row was printed.
	Build *results.Build
	// Warnings say, for each row whose engine counter is more than
	// Agreement times the runner's wall-clock figure, how far apart they
	// are and why (see disagreement).
	Warnings []string
}

// EngineMetricPrefix prefixes the names of metrics read from llama.cpp's
// performance counters: "engine" + "TokSOut".
const EngineMetricPrefix = metric.EnginePrefix

// engineDerived explains the engine-counter metrics in records.
const engineDerived = "llama.cpp's performance counters (performanceTracking/printTimings): tokens over the time inside llama_decode, per repetition"

// ParseOutput judges one runner process from its stdout, its stderr and its
// exit status (-1 for a process killed by a signal, as
// os.ProcessState.ExitCode reports it; statuses above 128 also count as
// deaths by signal).
//
// The verdicts are [llamabench.Classify]'s, since the runner prints
// llama-bench's JSON. When the runner failed before printing a row, its
// last "error: …" line on stderr is the error: the model it could not load
// (not a GGUF file, an architecture llama.cpp does not know), arguments it
// rejected (exit status 2), node-llama-cpp missing from the install.
func ParseOutput(stdout, stderr []byte, exit int) Outcome {
	// llama.cpp's warnings, which the runner marks, never name the cause of
	// a failure; the log tail keeps them.
	c := llamabench.Classify(stdout, dropWarnings(stderr), exit, exit < 0)
	o := Outcome{Status: c.Status, Error: c.Error, Rows: c.Rows, LogTail: c.LogTail}
	if c.Status != results.StatusOK {
		o.LogTail = logtail.Lines(stderr, 20)
	}
	if len(c.Rows) == 0 && c.Status == results.StatusFailed {
		if msg := runnerError(stderr); msg != "" {
			switch {
			case exit == 2:
				o.Error = "runner rejected arguments: " + msg
			case exit > 128 || exit < 0:
				o.Error = c.Error
			default:
				o.Error = msg
			}
		}
	}
	o.Build = buildOf(c.Rows)
	o.Warnings = disagreements(c.Rows)
	for _, r := range c.Rows {
		o.Metrics = append(o.Metrics, r.Metrics()...)
		if m, ok := engineMetric(r); ok {
			o.Metrics = append(o.Metrics, m)
		}
	}
	return o
}

// buildOf reads the runner's build fields (build_type, system_info,
// cpu_variant, native_addon) beside llama-bench's backends and devices
// from the first row.
func buildOf(rows []llamabench.Row) *results.Build {
	b := llamabench.Build(rows)
	if len(rows) == 0 {
		return b
	}
	if b == nil {
		b = &results.Build{}
	}
	str := func(k string) string {
		s, _ := rows[0].Fields[k].(string)
		return strings.TrimSpace(strings.ToValidUTF8(s, "?"))
	}
	b.Flavour = str("build_type")
	b.SystemInfo = str("system_info")
	b.CPUFeatures = results.CPUFeatures(b.SystemInfo)
	b.CPUVariant = str("cpu_variant")
	b.Binary = str("native_addon")
	if b.Summary() == "" && b.Backends == "" && b.CPU == "" && b.GPU == "" && b.CPUVariant == "" && b.Binary == "" {
		return nil
	}
	return b
}

// engineMetric is a row's throughput by llama.cpp's own counters, when the
// row carries them.
func engineMetric(r llamabench.Row) (results.Metric, bool) {
	raw, ok := r.Fields["engine_samples_ts"].([]any)
	if !ok || len(raw) == 0 {
		return results.Metric{}, false
	}
	var samples []float64
	for _, v := range raw {
		if f, ok := number(v); ok && f > 0 {
			samples = append(samples, f)
		}
	}
	if len(samples) == 0 {
		return results.Metric{}, false
	}
	rm := r.Metrics()
	if len(rm) == 0 {
		return results.Metric{}, false
	}
	value, ok := number(r.Fields["engine_avg_ts"])
	if !ok || value <= 0 {
		value = 0
		for _, s := range samples {
			value += s
		}
		value /= float64(len(samples))
	}
	stddev, _ := number(r.Fields["engine_stddev_ts"])
	name := rm[0].Name
	return results.Metric{
		Name:      metric.Engine(name),
		Test:      r.Test,
		Unit:      metric.TokPerSec,
		Direction: results.HigherIsBetter,
		Value:     value,
		Stddev:    stddev,
		Samples:   samples,
		Derived:   engineDerived,
	}, true
}

// number reads a JSON number decoded with UseNumber (or a float64).
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case interface{ Float64() (float64, error) }:
		f, err := x.Float64()
		return f, err == nil && f == f && f < 1e308 && f > -1e308
	case float64:
		return x, true
	}
	return 0, false
}

// warnPrefix marks the llama.cpp warnings the runner passes on.
var warnPrefix = []byte("llama.cpp (warn): ")

// dropWarnings removes the runner's llama.cpp warning lines.
func dropWarnings(stderr []byte) []byte {
	if !bytes.Contains(stderr, warnPrefix) {
		return stderr
	}
	var out []byte
	for _, l := range bytes.SplitAfter(stderr, []byte("\n")) {
		if !bytes.HasPrefix(l, warnPrefix) {
			out = append(out, l...)
		}
	}
	return out
}

// runnerError returns the message of the runner's last "error: " line.
func runnerError(stderr []byte) string {
	lines := bytes.Split(bytes.ReplaceAll(stderr, []byte("\r\n"), []byte("\n")), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		l := bytes.TrimSpace(lines[i])
		if msg, ok := bytes.CutPrefix(l, []byte("error: ")); ok {
			s := strings.ToValidUTF8(string(bytes.TrimSpace(msg)), "?")
			if len(s) > 400 {
				s = strings.ToValidUTF8(s[:400], "") + "…"
			}
			return s
		}
	}
	return ""
}

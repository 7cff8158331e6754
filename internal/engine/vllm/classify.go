package vllm

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/rigorbench/rigor/internal/logtail"
	"github.com/rigorbench/rigor/internal/results"
)

// Output is everything a finished `vllm bench` process left behind.
type Output struct {
	// Mode is the bench mode: throughput, latency or serve.
	Mode string
	// Result is the content of the result file; nil with ResultMissing
	// when the file does not exist.
	Result        []byte
	ResultMissing bool
	Stdout        []byte
	Stderr        []byte
	// ExitCode is the process's exit status; Signaled is true when a
	// signal ended it.
	ExitCode int
	Signaled bool
	// InputLen is the fixed prompt length of the workload (bench.inputLen),
	// used to derive output tok/s from the counts in throughput mode; 0
	// when unknown.
	InputLen int
}

// Outcome is the classified result of one vllm bench run.
type Outcome struct {
	// Status is results.StatusOK or results.StatusFailed.
	Status string
	// Error says why the run failed: the last line of a Python traceback
	// when there is one, else what is wrong with the exit status or the
	// result file.
	Error string
	// LogTail is the last lines of stderr when the run failed.
	LogTail  string
	Metrics  []results.Metric
	Warnings []string
}

// tailLines is how much of stderr a failed run keeps.
const tailLines = 20

// Classify decides the outcome of a run from its exit status, its result
// file and its output. A run fails when the process exits non-zero or is
// killed, when the result file is missing, empty, truncated or not the
// mode's JSON, or when the mode is unknown. A Python traceback on stderr
// names the failure with its last line ("RuntimeError: …"); a traceback
// after a clean exit with a good result is only a warning.
func Classify(o Output) Outcome {
	tb := TracebackError(o.Stderr)
	if tb != "" && loadFailure(tb) {
		tb = "failed to load model: " + tb
	}
	fail := func(msg string) Outcome {
		if tb != "" {
			msg = tb
		}
		return Outcome{Status: results.StatusFailed, Error: msg, LogTail: logtail.Lines(o.Stderr, tailLines)}
	}
	if o.Signaled || o.ExitCode != 0 {
		why := fmt.Sprintf("vllm bench exited with status %d", o.ExitCode)
		if o.Signaled {
			why = fmt.Sprintf("vllm bench was killed by a signal (status %d)", o.ExitCode)
		}
		// A result written before the end (vLLM can die in its shutdown
		// after saving) is kept: a crash, not a loss.
		if !o.ResultMissing {
			if m, w, err := parseMode(o); err == nil && len(m) > 0 {
				msg := why + " after writing its result"
				if tb != "" {
					msg += ": " + tb
				}
				return Outcome{Status: results.StatusCrashed, Error: msg, Metrics: m, Warnings: w, LogTail: logtail.Lines(o.Stderr, tailLines)}
			}
		}
		if arg := rejected(o.Stderr); arg != "" && tb == "" && !o.Signaled {
			return fail("engine rejected arguments: " + arg)
		}
		return fail(why)
	}
	if o.ResultMissing {
		return fail(fmt.Sprintf("%s: %s", ErrNoResult, OutputFile))
	}
	var out Outcome
	var err error
	out.Metrics, out.Warnings, err = parseMode(o)
	if err != nil {
		msg := fmt.Sprintf("reading %s: %v", OutputFile, err)
		if errors.Is(err, ErrTruncatedResult) || errors.Is(err, ErrEmptyResult) {
			msg += " (vllm bench exited 0 but did not finish writing it)"
		}
		o2 := fail(msg)
		o2.Error = msg
		if tb != "" {
			o2.Error = tb
			o2.Warnings = append(o2.Warnings, msg)
		}
		return o2
	}
	out.Status = results.StatusOK
	if tb != "" {
		out.Warnings = append(out.Warnings, "stderr holds a Python traceback although the run finished: "+tb)
	}
	return out
}

// parseMode reads the result file of the output's mode.
func parseMode(o Output) (m []results.Metric, warnings []string, err error) {
	switch o.Mode {
	case ModeThroughput:
		m, err = ParseThroughput(o.Result, o.Stdout, o.InputLen)
	case ModeLatency:
		m, err = ParseLatency(o.Result)
	case ModeServe:
		m, warnings, err = ParseServe(o.Result)
	default:
		err = fmt.Errorf("unknown bench mode %q", o.Mode)
	}
	return m, warnings, err
}

// argparseError is the line argparse prints before exiting 2: "vllm bench
// throughput: error: unrecognized arguments: --no-such-flag".
var argparseError = regexp.MustCompile(`(?m)^vllm[\w ]*: error: (.+)$`)

// rejected returns what vLLM's argument parser refused, or "".
func rejected(stderr []byte) string {
	m := argparseError.FindAllSubmatch(stderr, -1)
	if len(m) == 0 {
		return ""
	}
	return strings.TrimSpace(string(m[len(m)-1][1]))
}

// loadFailure reports whether an exception is one that loading a model
// raises: a missing or unreadable model directory, config or weights, or a
// hub repository that does not exist.
func loadFailure(exc string) bool {
	name, msg, _ := strings.Cut(exc, ":")
	switch name {
	case "OSError", "FileNotFoundError", "huggingface_hub.errors.RepositoryNotFoundError",
		"huggingface_hub.errors.EntryNotFoundError", "huggingface_hub.errors.GatedRepoError",
		"safetensors_rust.SafetensorError":
		return true
	}
	return strings.Contains(msg, "config.json") || strings.Contains(msg, "model weights")
}

// TracebackError returns the exception line of the last Python traceback
// in stderr ("RuntimeError: XPU out of memory"), or "" when there is none.
// The exception line is the last line after "Traceback (most recent call
// last):" that is not indented; chained exceptions yield the final one.
func TracebackError(stderr []byte) string {
	i := bytes.LastIndex(stderr, []byte("Traceback (most recent call last):"))
	if i < 0 {
		return ""
	}
	var last string
	for _, l := range strings.Split(string(stderr[i:]), "\n")[1:] {
		l = strings.TrimRight(l, "\r")
		if l == "" || l[0] == ' ' || l[0] == '\t' || l[0] == '^' || l[0] == '~' {
			continue
		}
		if strings.HasPrefix(l, "During handling") || strings.HasPrefix(l, "The above exception") {
			continue
		}
		last = l
		// logging after the exception line is not part of it: the first
		// unindented line that looks like "Name: msg" or a bare name ends
		// the traceback.
		if looksLikeException(l) {
			break
		}
	}
	return shorten(strings.TrimSpace(last), 300)
}

func looksLikeException(l string) bool {
	name, _, _ := strings.Cut(l, ":")
	if name == "" || strings.ContainsAny(name, " \t") {
		return false
	}
	return name[0] >= 'A' && name[0] <= 'Z' || strings.Contains(name, ".")
}

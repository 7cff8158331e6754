// This file decides what one llama-bench process achieved from what it left
// behind: stdout, stderr and the exit status.

package llamabench

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"github.com/rigorbench/rigor/internal/logtail"
	"github.com/rigorbench/rigor/internal/results"
)

// Outcome is the verdict on one llama-bench process.
type Outcome struct {
	// Status is results.StatusOK, results.StatusFailed or
	// results.StatusCrashed.
	Status string
	// Error says why the status is not ok, naming the cause found in the
	// output ("failed to load model 'x': …", "engine rejected arguments:
	// -ctk", "engine crashed (exit 134, SIGABRT) after 1 row: double free
	// or corruption (!prev)").
	Error string
	// Rows are the rows parsed from stdout, whatever the status: a crashed
	// run keeps them.
	Rows []Row
	// LogTail is the last lines of stderr (at most 20) when the status is
	// not ok.
	LogTail string
}

// outTailLines is how many stderr lines an Outcome keeps.
const outTailLines = 20

// Classify judges one llama-bench process run with -o json (or -o jsonl:
// output starting with "{" is read as JSONL) from its stdout, its stderr,
// its exit status and whether a signal killed it.
//
// exitCode is the exit status; for a process killed by a signal, pass
// signaled true and either 128+signal (as a shell reports it, which names
// the signal in Error) or -1 (as os.ProcessState.ExitCode reports it).
// Exit statuses above 128 count as deaths by signal even when signaled is
// false, since wrappers and shells report them that way.
//
// The verdicts:
//   - exit 0 and a closed array (or whole JSONL lines) with rows: ok;
//   - rows, then an abnormal end (signal, exit 134 "double free or
//     corruption", a non-zero exit, or an array left open): crashed, rows
//     kept;
//   - usage text on stdout, "invalid parameter for argument" on stderr, or
//     an uncaught std::invalid_argument before any output: failed with
//     "engine rejected arguments: <argument>";
//   - a lone "[" or no output: failed, with the useful stderr line, e.g.
//     "failed to load model 'm.gguf': gguf_init_from_file: failed to open …";
//   - markdown, CSV or SQL on stdout: failed, naming the format;
//   - exit 0 and an empty array: failed, no tests ran.
//
// Classify cannot see a flag value llama-bench silently replaced (ik reads
// -ctk bogus as f16, both read -p abc as 0 and exit 0): check the rows
// against the flags with [VerifyRows].
func Classify(stdout, stderr []byte, exitCode int, signaled bool) Outcome {
	rows, complete, perr := ParseJSON(stdout)
	o := Outcome{Rows: rows}
	abnormal := signaled || exitCode > 128 || exitCode < 0
	clean := exitCode == 0 && !signaled

	if arg, ok := outRejectedArg(stdout, stderr); ok && len(rows) == 0 {
		o.Status = results.StatusFailed
		o.Error = "engine rejected arguments: " + arg
		o.LogTail = logtail.Lines(stderr, outTailLines)
		return o
	}
	if perr != nil && len(rows) == 0 {
		o.Status = results.StatusFailed
		o.Error = perr.Error()
		if !clean {
			o.Error += "; " + outEndDescription(exitCode, signaled, stderr)
		}
		o.LogTail = logtail.Lines(stderr, outTailLines)
		return o
	}
	if len(rows) > 0 && clean && complete && perr == nil {
		o.Status = results.StatusOK
		return o
	}
	o.LogTail = logtail.Lines(stderr, outTailLines)
	if len(rows) > 0 {
		o.Status = results.StatusCrashed
		after := fmt.Sprintf("after %d row%s", len(rows), outPlural(len(rows)))
		switch {
		case perr != nil:
			o.Error = fmt.Sprintf("output broken %s: %v", after, perr)
			if !clean {
				o.Error += "; " + outEndDescription(exitCode, signaled, stderr)
			}
		case clean:
			o.Error = fmt.Sprintf("engine exited with status 0 %s but left the JSON array open", after)
		case abnormal:
			o.Error = fmt.Sprintf("engine crashed (%s) %s", outExitDescription(exitCode, signaled), after)
			if c := outCause(stderr); c != "" {
				o.Error += ": " + c
			}
		default:
			o.Error = fmt.Sprintf("engine exited with status %d %s", exitCode, after)
			if c := outCause(stderr); c != "" {
				o.Error += ": " + c
			}
		}
		return o
	}

	// No rows.
	o.Status = results.StatusFailed
	if clean && complete {
		o.Error = "llama-bench ran no tests (are -p and -n both 0?)"
		return o
	}
	cause := outCause(stderr)
	switch {
	case clean:
		o.Error = "llama-bench exited with status 0 without printing results"
	case abnormal:
		o.Error = fmt.Sprintf("engine crashed (%s) before printing results", outExitDescription(exitCode, signaled))
	default:
		if cause != "" {
			o.Error = cause
			return o
		}
		o.Error = fmt.Sprintf("engine exited with status %d without printing results", exitCode)
	}
	if cause != "" {
		o.Error += ": " + cause
	}
	return o
}

func outPlural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// outSignals names the signals a crashing engine usually dies of.
var outSignals = map[int]string{
	1: "SIGHUP", 2: "SIGINT", 4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS",
	8: "SIGFPE", 9: "SIGKILL", 11: "SIGSEGV", 13: "SIGPIPE", 15: "SIGTERM",
}

// outExitDescription describes an abnormal end: "exit 134, SIGABRT".
func outExitDescription(exitCode int, signaled bool) string {
	sig := 0
	switch {
	case exitCode > 128:
		sig = exitCode - 128
	case signaled && exitCode > 0:
		sig = exitCode
	}
	if name, ok := outSignals[sig]; ok {
		if exitCode > 128 {
			return fmt.Sprintf("exit %d, %s", exitCode, name)
		}
		return name
	}
	if exitCode < 0 || (signaled && exitCode == 0) {
		return "killed by a signal"
	}
	return fmt.Sprintf("exit %d", exitCode)
}

// outEndDescription says how a process that did not exit cleanly ended,
// with the cause found on stderr.
func outEndDescription(exitCode int, signaled bool, stderr []byte) string {
	var s string
	if signaled || exitCode > 128 || exitCode < 0 {
		s = "the engine also crashed (" + outExitDescription(exitCode, signaled) + ")"
	} else {
		s = fmt.Sprintf("the engine exited with status %d", exitCode)
	}
	if c := outCause(stderr); c != "" {
		s += ": " + c
	}
	return s
}

// outRejectedArgRE matches llama-bench's complaints about an argument:
// "error: invalid parameter for argument: -ctk" (both forks) and
// "error: unknown argument: --foo" (some mainline builds).
var outRejectedArgRE = regexp.MustCompile(`(?:invalid parameter for argument|unknown argument):[ \t]*(\S+)`)

// outRejectedArg reports whether llama-bench refused its arguments, and
// which one, with what the usage text says of it.
func outRejectedArg(stdout, stderr []byte) (string, bool) {
	if m := outRejectedArgRE.FindSubmatch(stderr); m != nil {
		arg := strings.ToValidUTF8(string(m[1]), "?")
		if !bytes.HasPrefix(bytes.TrimSpace(stdout), []byte("usage:")) {
			return arg, true
		}
		if u := outUsageLine(stdout, arg); u != "" {
			return fmt.Sprintf("%s (usage: %s)", arg, u), true
		}
		return fmt.Sprintf("%s (not in this build's usage text)", arg), true
	}
	// ik aborts in std::stoi when a flag that wants a number gets none, e.g.
	// "-mqkv -rcache": the abort comes before the JSON header.
	if len(bytes.TrimSpace(stdout)) == 0 && bytes.Contains(stderr, []byte("std::invalid_argument")) {
		what := ""
		for _, l := range outLines(stderr) {
			if i := strings.Index(l, "what():"); i >= 0 {
				what = strings.TrimSpace(l[i+len("what():"):])
			}
		}
		if what != "" {
			return fmt.Sprintf("a flag's value is not valid (uncaught std::invalid_argument from %s; is a value missing?)", what), true
		}
		return "a flag's value is not valid (uncaught std::invalid_argument; is a value missing?)", true
	}
	if bytes.HasPrefix(bytes.TrimSpace(stdout), []byte("usage:")) {
		return "llama-bench printed its usage text", true
	}
	return "", false
}

// outUsageLine returns the usage-text line that documents arg, squeezed:
// "-ctk, --cache-type-k <t> (default: f16)".
func outUsageLine(usage []byte, arg string) string {
	for _, l := range outLines(usage) {
		for _, tok := range strings.Fields(l) {
			if !strings.HasPrefix(tok, "-") {
				break
			}
			if strings.TrimSuffix(tok, ",") == arg {
				return strings.Join(strings.Fields(l), " ")
			}
		}
	}
	return ""
}

// outCauseMarkers are stderr fragments that name why an engine stopped,
// most telling first.
var outCauseMarkers = []string{
	"error:", "double free", "corruption", "segmentation fault",
	"ggml_assert", "assert", "terminate called", "what():", "out of memory",
	"failed to", "unable to", "cannot", "aborted", "fatal",
}

// outCause picks the stderr line that names why the engine stopped: the
// last line with an error marker, or the last line. For "failed to load
// model" it adds the line before it, which says why the load failed.
func outCause(stderr []byte) string {
	lines := outLines(stderr)
	pick := -1
	for _, marker := range outCauseMarkers {
		for i := len(lines) - 1; i >= 0; i-- {
			if strings.Contains(strings.ToLower(lines[i]), marker) {
				pick = i
				break
			}
		}
		if pick >= 0 {
			break
		}
	}
	if pick < 0 {
		for i := len(lines) - 1; i >= 0; i-- {
			if strings.TrimSpace(lines[i]) != "" {
				pick = i
				break
			}
		}
	}
	if pick < 0 {
		return ""
	}
	line := strings.TrimSpace(lines[pick])
	// "main: error: failed to load model" reads better without its
	// prefix; "CUDA error: out of memory" needs its own.
	if i := strings.Index(line, "error: "); i >= 0 {
		if p := line[:i]; p == "" || (strings.HasSuffix(p, ": ") && !strings.Contains(strings.TrimSuffix(p, ": "), " ")) {
			line = strings.TrimSpace(line[i+len("error: "):])
		}
	}
	if strings.Contains(line, "failed to load model") && pick > 0 {
		if prev := strings.TrimSpace(lines[pick-1]); prev != "" {
			line += ": " + prev
		}
	}
	return outShorten(line, 300)
}

// outLines splits text into lines without their line ends.
func outLines(b []byte) []string {
	s := strings.ToValidUTF8(string(b), "?")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func outShorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

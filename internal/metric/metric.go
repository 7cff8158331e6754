// Package metric is the one table of rigor's metric names, their units and
// which way is better, after benchfmt's units: engines name what they
// measure with these constants, and compare, log and export read the
// table instead of guessing from spellings.
//
// The package imports nothing of rigor's, so engines, results and the
// renderers can all depend on it.
package metric

import (
	"regexp"
	"strings"
)

// Directions: which way is better.
const (
	Higher = "higher"
	Lower  = "lower"
)

// Units.
const (
	TokPerSec = "tok/s"
	Ms        = "ms"
	ReqPerSec = "req/s"
	GB        = "GB"
	TokPerJ   = "tok/J"
	Joule     = "J"
)

// Names of the metrics, the same across engines.
const (
	// TokSOut is decode throughput (tok/s), timed by rigor or the bench
	// tool around generation: the headline figure to quote.
	TokSOut = "tokSOut"
	// TokSPrompt is prefill throughput (tok/s).
	TokSPrompt = "tokSPrompt"
	// TokSTotal is prompt plus generated tokens over the whole time
	// (llama-bench's pg test, vLLM's total_token_throughput).
	TokSTotal = "tokSTotal"
	// TTFTMs is the time to first token.
	TTFTMs = "ttftMs"
	// TPOTMs is the time per output token after the first.
	TPOTMs = "tpotMs"
	// ITLMs is the inter-token latency.
	ITLMs = "itlMs"
	// E2ELMs is a request's end-to-end latency (vLLM serve).
	E2ELMs = "e2elMs"
	// LatencyMs is one batch's latency (vLLM bench latency).
	LatencyMs = "latencyMs"
	// RequestThroughput is completed requests per second.
	RequestThroughput = "requestThroughput"
	// RequestGoodput is requests per second that met the SLOs.
	RequestGoodput = "requestGoodput"
	// PeakVRAMGB is the peak GPU memory used.
	PeakVRAMGB = "peakVramGb"
	// WorkerOpTotalMs is the time an RPC worker spent in one kind of
	// operation (seed summaries).
	WorkerOpTotalMs = "workerOpTotalMs"
	// TokPerJOut, TokPerJPrompt and TokPerJTotal are tokens per joule:
	// the throughput over the average power the machine's measured
	// domains drew during the engine's timed section (tok/s ÷ W).
	TokPerJOut    = "tokPerJOut"
	TokPerJPrompt = "tokPerJPrompt"
	TokPerJTotal  = "tokPerJTotal"
	// EnergyJ is the energy of one repetition of a test (J).
	EnergyJ = "energyJ"

	// EnginePrefix prefixes a metric read from the engine's own counters
	// rather than timed from outside: "engine" + "TokSOut".
	EnginePrefix = "engine"
)

// Engine counterparts of the throughput metrics.
var (
	EngineTokSOut    = Engine(TokSOut)
	EngineTokSPrompt = Engine(TokSPrompt)
	EngineTokSTotal  = Engine(TokSTotal)
)

// Info describes one metric name.
type Info struct {
	Name      string
	Unit      string
	Direction string
	// Short is what the metric is, in a few words.
	Short string
	// EngineCounter is true for a figure read from the engine's own
	// counters (the engine* metrics): the time inside the engine's
	// evaluation calls, without rigor's or the runner's overhead.
	EngineCounter bool
}

var table = []Info{
	{TokSOut, TokPerSec, Higher, "decode throughput, wall clock around generation (the figure to quote)", false},
	{TokSPrompt, TokPerSec, Higher, "prefill throughput, wall clock", false},
	{TokSTotal, TokPerSec, Higher, "prompt and generated tokens over the whole time", false},
	{TTFTMs, Ms, Lower, "time to first token", false},
	{TPOTMs, Ms, Lower, "time per output token after the first", false},
	{ITLMs, Ms, Lower, "inter-token latency", false},
	{E2ELMs, Ms, Lower, "end-to-end request latency", false},
	{LatencyMs, Ms, Lower, "batch latency", false},
	{RequestThroughput, ReqPerSec, Higher, "completed requests per second", false},
	{RequestGoodput, ReqPerSec, Higher, "requests per second within the SLOs", false},
	{PeakVRAMGB, GB, Lower, "peak GPU memory", false},
	{WorkerOpTotalMs, Ms, Lower, "RPC worker time in one operation", false},
	{TokPerJOut, TokPerJ, Higher, "generated tokens per joule over the timed section", false},
	{TokPerJPrompt, TokPerJ, Higher, "prompt tokens per joule over the timed section", false},
	{TokPerJTotal, TokPerJ, Higher, "prompt and generated tokens per joule", false},
	{EnergyJ, Joule, Lower, "energy of one repetition", false},
}

// PerJoule returns the tokens-per-joule counterpart of a throughput
// metric ("tokSOut" → "tokPerJOut"), or "" for any other.
func PerJoule(name string) string {
	switch name {
	case TokSOut:
		return TokPerJOut
	case TokSPrompt:
		return TokPerJPrompt
	case TokSTotal:
		return TokPerJTotal
	}
	return ""
}

// Table returns every base metric, headline first.
func Table() []Info {
	return append([]Info(nil), table...)
}

// Engine returns the name of base's engine-counter counterpart:
// Engine("tokSOut") is "engineTokSOut".
func Engine(base string) string {
	if base == "" {
		return EnginePrefix
	}
	return EnginePrefix + strings.ToUpper(base[:1]) + base[1:]
}

// Base returns the base metric of an engine-counter name and true
// ("engineTokSOut" → "tokSOut"), or name and false.
func Base(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, EnginePrefix)
	if !ok || rest == "" || rest[0] < 'A' || rest[0] > 'Z' {
		return name, false
	}
	return strings.ToLower(rest[:1]) + rest[1:], true
}

// reStat matches the statistic suffixes engines add to a latency:
// "ttftMsMedian", "ttftMsP99", "latencyP99Ms".
var (
	reSuffix     = regexp.MustCompile(`^(.+Ms)(?:Median|P[0-9]+(?:\.[0-9]+)?)$`)
	reLatencyPct = regexp.MustCompile(`^latencyP[0-9]+(?:\.[0-9]+)?Ms$`)
)

// Lookup returns what the table says of name, including the engine-counter
// counterparts and the percentile and median forms of the latencies
// ("ttftMsP99", "latencyP50Ms").
func Lookup(name string) (Info, bool) {
	base, eng := Base(name)
	if m := reSuffix.FindStringSubmatch(base); m != nil {
		base = m[1]
	} else if reLatencyPct.MatchString(base) {
		base = LatencyMs
	}
	for _, in := range table {
		if in.Name == base {
			in.Name = name
			if eng {
				in.EngineCounter = true
				in.Short = strings.TrimSuffix(strings.Replace(in.Short, "wall clock", "engine's own counters", 1), " (the figure to quote)")
			}
			return in, true
		}
	}
	return Info{Name: name}, false
}

// Direction returns the better direction of a metric: dir when it is one
// of [Higher] and [Lower] (as a record says), else the table's, else the
// one the unit or the name's spelling implies, else "".
func Direction(name, unit, dir string) string {
	switch dir {
	case Higher, Lower:
		return dir
	}
	if in, ok := Lookup(name); ok {
		return in.Direction
	}
	switch {
	case unit == TokPerSec, unit == ReqPerSec, unit == TokPerJ, strings.HasPrefix(name, "tokS"):
		return Higher
	case unit == Ms, unit == GB, strings.HasSuffix(name, "Ms"), strings.HasSuffix(name, "Gb"):
		return Lower
	}
	return ""
}

// IsHeadline reports whether name is the figure to quote: wall-clock
// decode throughput.
func IsHeadline(name string) bool { return name == TokSOut }

package serve

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/loadgen"
	"github.com/rigorbench/rigor/internal/logtail"
	metricname "github.com/rigorbench/rigor/internal/metric"
	"github.com/rigorbench/rigor/internal/results"
)

// Test is the test name of serve metrics, as for vLLM's bench serve.
const Test = "serve"

// latencies are the per-request latencies, vLLM's key and rigor's name.
var latencies = []struct{ key, name string }{
	{"ttft", metricname.TTFTMs},
	{"tpot", metricname.TPOTMs},
	{"itl", metricname.ITLMs},
	{"e2el", metricname.E2ELMs},
}

// Judge reads the load generator's result into the common outcome:
// throughputs (tokSOut is output tokens per second over the run's wall
// time), goodput, and for TTFT, TPOT, ITL and E2EL the mean (with every
// request's value as samples, read from the raw file; ITL's is a request's
// mean gap, every gap stays in the raw file), the median and each
// percentile. A run is ok only when every request completed; otherwise it
// failed, the error says how many failed and why, and what was measured
// is kept.
func Judge(f engine.Finished) engine.Verdict {
	v := engine.Verdict{}
	if f.Stopped == engine.StoppedWorker && f.StopErr != nil {
		v.StopReason = explainServer(f.StopErr.Error())
	}
	data, ok := f.Outputs[ResultFile]
	if !ok {
		v.Status, v.Error = results.StatusFailed, "the load generator wrote no result"
		if f.Signaled {
			v.Status, v.Error = results.StatusCrashed, fmt.Sprintf("the load generator crashed (exit %d)", f.ExitCode)
		}
		if msg := lastError(f.Stderr); msg != "" {
			v.Error += ": " + msg
		}
		v.LogTail = logtail.Compact(f.Stderr, 10)
		return v
	}
	var r loadgen.Result
	if err := json.Unmarshal(data, &r); err != nil {
		v.Status, v.Error = results.StatusFailed, fmt.Sprintf("reading the load generator's result: %v", err)
		return v
	}
	add := func(name, unit, dir string, x float64) {
		v.Metrics = append(v.Metrics, results.Metric{Name: name, Test: Test, Unit: unit, Direction: dir, Value: x, Samples: []float64{x}})
	}
	v.TimedSeconds = r.Duration
	if r.Completed > 0 {
		add(metricname.TokSOut, metricname.TokPerSec, results.HigherIsBetter, r.OutputThroughput)
		add(metricname.TokSTotal, metricname.TokPerSec, results.HigherIsBetter, r.TotalTokenThroughput)
		add(metricname.RequestThroughput, metricname.ReqPerSec, results.HigherIsBetter, r.RequestThroughput)
		if r.RequestGoodput != nil {
			add(metricname.RequestGoodput, metricname.ReqPerSec, results.HigherIsBetter, *r.RequestGoodput)
		}
	}
	var reqs []*loadgen.Request
	if raw, ok := f.Outputs[RawFile]; ok {
		reqs, _ = loadgen.ReadRaw(raw)
	}
	for _, l := range latencies {
		mean, ok := r.Stats["mean_"+l.key+"_ms"]
		if !ok {
			continue
		}
		m := results.Metric{Name: l.name, Test: Test, Unit: metricname.Ms, Direction: results.LowerIsBetter, Value: mean, Stddev: r.Stats["std_"+l.key+"_ms"]}
		if l.key == "itl" && reqs != nil {
			m.Samples = requestITL(reqs)
			m.Derived = "per request: the mean gap between its token chunks (events with choices, as vLLM counts them); the mean and percentiles pool every gap of every request, as vLLM's ITL"
		} else if reqs != nil {
			m.Samples = loadgen.Samples(reqs, l.key)
			if l.key == "tpot" {
				m.Derived = "per request: (latency − ttft) / (output tokens − 1), vLLM's TPOT, over requests with more than one output token"
			}
		}
		v.Metrics = append(v.Metrics, m)
		if x, ok := r.Stats["median_"+l.key+"_ms"]; ok {
			v.Metrics = append(v.Metrics, results.Metric{Name: l.name + "Median", Test: Test, Unit: metricname.Ms, Direction: results.LowerIsBetter, Value: x})
		}
		for _, p := range r.Percentiles {
			if p == 50 {
				continue // the median, above
			}
			if x, ok := r.Stats["p"+loadgen.PercentileName(p)+"_"+l.key+"_ms"]; ok {
				v.Metrics = append(v.Metrics, results.Metric{Name: l.name + "P" + loadgen.PercentileName(p), Test: Test, Unit: metricname.Ms, Direction: results.LowerIsBetter, Value: x})
			}
		}
	}
	total := r.Completed + r.Failed
	switch {
	case f.Signaled:
		v.Status, v.Error = results.StatusCrashed, fmt.Sprintf("the load generator crashed (exit %d) after writing its result", f.ExitCode)
	case r.Failed > 0:
		v.Status = results.StatusFailed
		v.Error = fmt.Sprintf("%d of %d requests failed: %s", r.Failed, total, failures(&r))
		if r.Completed > 0 {
			v.Warnings = append(v.Warnings, fmt.Sprintf("the metrics cover the %d requests that completed", r.Completed))
		}
	case r.Completed == 0:
		v.Status, v.Error = results.StatusFailed, "no request completed"
	case f.ExitCode != 0:
		v.Status, v.Error = results.StatusFailed, fmt.Sprintf("the load generator exited %d", f.ExitCode)
		if msg := lastError(f.Stderr); msg != "" {
			v.Error += ": " + msg
		}
	default:
		v.Status = results.StatusOK
	}
	if r.Retried > 0 {
		v.Warnings = append(v.Warnings, fmt.Sprintf("%d of %d requests %s sent again: the server closed %s connection before reading %s (an idle keep-alive connection), so %s never served and %s not counted as failed",
			r.Retried, total, plural(r.Retried, "was", "were"), plural(r.Retried, "its", "their"), plural(r.Retried, "it", "them"), plural(r.Retried, "it was", "they were"), plural(r.Retried, "is", "are")))
	}
	if r.Completed > 0 && r.UsageReported < r.Completed {
		v.Warnings = append(v.Warnings, fmt.Sprintf("the server reported token usage for %d of %d requests; the others' output tokens are the text chunks counted, their prompt tokens the words sent",
			r.UsageReported, r.Completed))
	}
	if v.Status != results.StatusOK {
		v.LogTail = logtail.Compact(f.Stderr, 10)
	}
	return v
}

// failures says how many requests failed of each outcome, and the first
// error of each.
func failures(r *loadgen.Result) string {
	kinds := make([]string, 0, len(r.Failures))
	for k := range r.Failures {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		if r.Failures[kinds[i]] != r.Failures[kinds[j]] {
			return r.Failures[kinds[i]] > r.Failures[kinds[j]]
		}
		return kinds[i] < kinds[j]
	})
	var parts []string
	for _, k := range kinds {
		first := r.FirstErrors[k]
		if len(first) > 160 {
			first = first[:160] + "…"
		}
		parts = append(parts, fmt.Sprintf("%d %s (%s)", r.Failures[k], k, first))
	}
	return strings.Join(parts, ", ")
}

// lastError is the last `rigor: error: …` line the load generator wrote.
func lastError(stderr []byte) string {
	lines := strings.Split(strings.TrimSpace(string(stderr)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if msg, ok := strings.CutPrefix(strings.TrimSpace(lines[i]), "rigor: error: "); ok {
			return msg
		}
	}
	return ""
}

var (
	reRejected = regexp.MustCompile(`(?i)invalid argument|unknown argument|unrecognized arguments?|error: argument`)
	reLoad     = regexp.MustCompile(`(?i)failed to load model|error loading model|unable to load model|no such file or directory.*model`)
	reBind     = regexp.MustCompile(`(?i)couldn't bind|address already in use`)
)

// explainServer reads why a server (a worker of the plan) stopped from
// the message that carries the end of its log.
func explainServer(msg string) string {
	switch {
	case reRejected.MatchString(msg):
		return "the server rejected its arguments: " + msg
	case reLoad.MatchString(msg):
		return "the server failed to load the model: " + msg
	case reBind.MatchString(msg):
		return "the server could not bind its port (serve.port is in use?): " + msg
	}
	return ""
}

// requestITL is each completed request's mean gap between token chunks, in
// ms: ITL's one value per request, for requests with a gap.
func requestITL(reqs []*loadgen.Request) []float64 {
	var out []float64
	for _, r := range reqs {
		if !r.OK() || len(r.ITL) == 0 {
			continue
		}
		var sum float64
		for _, g := range r.ITL {
			sum += g
		}
		out = append(out, sum/float64(len(r.ITL))*1000)
	}
	return out
}

// This file reads what `vllm bench` leaves behind into result metrics: the
// --output-json file of throughput and latency mode, the --save-result file
// of serve mode, and the stdout lines vLLM prints but does not save.
//
// Rules for the whole file:
//   - Keys are read leniently: unknown keys are ignored, missing ones leave
//     their metric out, and a number may arrive as a JSON string (some
//     vLLM versions format tokens_per_second with "%.2f").
//   - Structure is read strictly: a file that is empty, cut short or not a
//     JSON object is an error that says which of these it is.

package vllm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	metricname "github.com/rigorbench/rigor/internal/metric"
	"github.com/rigorbench/rigor/internal/results"
)

// Metric names this engine reports, in addition to the common ones
// (tokSOut, tokSTotal, tokSPrompt, ttftMs, tpotMs, itlMs, latencyMs).
const (
	MetricRequestThroughput = metricname.RequestThroughput
	MetricGoodput           = metricname.RequestGoodput
	MetricE2EL              = metricname.E2ELMs
)

// Modes of vllm bench.
const (
	ModeThroughput = "throughput"
	ModeLatency    = "latency"
	ModeServe      = "serve"
)

// Result-file problems, tested with errors.Is.
var (
	// ErrNoResult is a result file that does not exist.
	ErrNoResult = errors.New("vllm bench wrote no result file")
	// ErrEmptyResult is a result file with nothing in it.
	ErrEmptyResult = errors.New("result file is empty")
	// ErrTruncatedResult is a result file cut short.
	ErrTruncatedResult = errors.New("result file is truncated")
)

// decodeObject reads a result file into a map, numbers kept as
// json.Number, and says exactly what is wrong with a bad file.
func decodeObject(data []byte) (map[string]any, error) {
	t := bytes.TrimSpace(data)
	if len(t) == 0 {
		return nil, ErrEmptyResult
	}
	if t[0] != '{' {
		return nil, fmt.Errorf("result file is not a JSON object: starts with %q", shorten(string(firstLine(t)), 40))
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "unexpected EOF") {
			return nil, ErrTruncatedResult
		}
		return nil, fmt.Errorf("result file is not valid JSON: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("result file has data after its JSON object")
	}
	return m, nil
}

func firstLine(b []byte) []byte {
	l, _, _ := bytes.Cut(b, []byte{'\n'})
	return l
}

func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// num reads a JSON number, a numeric string or null. ok is false when the
// key is absent, null or not a finite number.
func num(m map[string]any, key string) (float64, bool) {
	v, present := m[key]
	if !present || v == nil {
		return 0, false
	}
	var s string
	switch x := v.(type) {
	case json.Number:
		s = x.String()
	case string:
		s = strings.TrimSpace(x)
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	default:
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// nums reads an array of numbers; nested arrays (serve's per-request itls)
// are flattened. Non-numbers are skipped.
func nums(m map[string]any, key string) []float64 {
	a, ok := m[key].([]any)
	if !ok {
		return nil
	}
	var out []float64
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case []any:
			for _, y := range x {
				walk(y)
			}
		default:
			if f, ok := num(map[string]any{"": x}, ""); ok {
				out = append(out, f)
			}
		}
	}
	for _, v := range a {
		walk(v)
	}
	return out
}

func scale(xs []float64, k float64) []float64 {
	if xs == nil {
		return nil
	}
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = x * k
	}
	return out
}

func metric(name, test, unit, dir string, v float64) results.Metric {
	return results.Metric{Name: name, Test: test, Unit: unit, Direction: dir, Value: v}
}

// Throughput is what `vllm bench throughput` printed on stdout beyond its
// JSON file.
type stdoutThroughput struct {
	outTokS    float64
	outTokSOK  bool
	outTokens  float64
	outTokOK   bool
	promptToks float64
	promptOK   bool
}

var (
	reThroughputLine = regexp.MustCompile(`(?m)^Throughput:\s*([0-9.eE+-]+) requests/s,\s*([0-9.eE+-]+) total tokens/s,\s*([0-9.eE+-]+) output tokens/s`)
	reOutTokens      = regexp.MustCompile(`(?m)^Total num output tokens:\s*([0-9]+)\s*$`)
	rePromptTokens   = regexp.MustCompile(`(?m)^Total num prompt tokens:\s*([0-9]+)\s*$`)
)

func parseThroughputStdout(stdout []byte) stdoutThroughput {
	var s stdoutThroughput
	if m := reThroughputLine.FindSubmatch(stdout); m != nil {
		if f, err := strconv.ParseFloat(string(m[3]), 64); err == nil {
			s.outTokS, s.outTokSOK = f, true
		}
	}
	if m := reOutTokens.FindSubmatch(stdout); m != nil {
		if f, err := strconv.ParseFloat(string(m[1]), 64); err == nil {
			s.outTokens, s.outTokOK = f, true
		}
	}
	if m := rePromptTokens.FindSubmatch(stdout); m != nil {
		if f, err := strconv.ParseFloat(string(m[1]), 64); err == nil {
			s.promptToks, s.promptOK = f, true
		}
	}
	return s
}

// ParseThroughput reads the --output-json file of `vllm bench throughput`
// (elapsed_time, num_requests, total_num_tokens, requests_per_second,
// tokens_per_second; newer versions add total_output_tokens and
// output_tokens_per_second) into tokSTotal, tokSOut and requestThroughput,
// each with its one sample, test "throughput".
//
// vLLM saves only total (prompt plus output) tokens per second. The
// output-only rate comes, in this order, from the file's own
// output_tokens_per_second; from stdout's "Total num output tokens: N"
// divided by elapsed_time; from stdout's "… output tokens/s" line (two
// decimals); or from the counts, (total_num_tokens − num_requests ×
// inputLen) / elapsed_time, which holds for fixed-length random prompts.
// Every way but the first is named in the metric's Derived field. With
// none available (no stdout, inputLen 0) tokSOut is left out.
func ParseThroughput(data, stdout []byte, inputLen int) ([]results.Metric, error) {
	m, err := decodeObject(data)
	if err != nil {
		return nil, err
	}
	elapsed, okE := num(m, "elapsed_time")
	total, okT := num(m, "total_num_tokens")
	nreq, okN := num(m, "num_requests")
	tps, okTPS := num(m, "tokens_per_second")
	if !okTPS {
		tps, okTPS = num(m, "total_tokens_per_second")
	}
	if !okTPS && okE && okT && elapsed > 0 {
		tps, okTPS = total/elapsed, true
	}
	if !okTPS {
		return nil, fmt.Errorf("throughput result has no tokens_per_second (nor elapsed_time and total_num_tokens)")
	}
	const test = ModeThroughput
	var out []results.Metric
	mt := metric(metricname.TokSTotal, test, metricname.TokPerSec, results.HigherIsBetter, tps)
	mt.Samples = []float64{tps}
	out = append(out, mt)

	so := parseThroughputStdout(stdout)
	mo := metric(metricname.TokSOut, test, metricname.TokPerSec, results.HigherIsBetter, 0)
	have := true
	if v, ok := num(m, "output_tokens_per_second"); ok {
		mo.Value = v
	} else if v, ok := num(m, "total_output_tokens"); ok && okE && elapsed > 0 {
		mo.Value = v / elapsed
		mo.Derived = "total_output_tokens / elapsed_time of the result file"
	} else if so.outTokOK && okE && elapsed > 0 {
		mo.Value = so.outTokens / elapsed
		mo.Derived = fmt.Sprintf("stdout's \"Total num output tokens: %g\" / elapsed_time %g s", so.outTokens, elapsed)
	} else if so.outTokSOK {
		mo.Value = so.outTokS
		mo.Derived = "stdout's \"Throughput: … output tokens/s\" line (printed with two decimals)"
	} else if okE && okT && okN && inputLen > 0 && elapsed > 0 {
		mo.Value = (total - nreq*float64(inputLen)) / elapsed
		mo.Derived = fmt.Sprintf("(total_num_tokens %g − num_requests %g × input length %d) / elapsed_time %g s; exact for fixed-length prompts", total, nreq, inputLen, elapsed)
	} else {
		have = false
	}
	if have {
		mo.Samples = []float64{mo.Value}
		out = append(out, mo)
	}
	if v, ok := num(m, "requests_per_second"); ok {
		mr := metric(MetricRequestThroughput, test, metricname.ReqPerSec, results.HigherIsBetter, v)
		mr.Samples = []float64{v}
		out = append(out, mr)
	}
	return out, nil
}

// ParseLatency reads the --output-json file of `vllm bench latency`
// (avg_latency, std_latency, latencies, percentiles; seconds) into
// latencyMs with every iteration as a sample and one latencyP<N>Ms metric
// per reported percentile, test "latency", in milliseconds.
func ParseLatency(data []byte) ([]results.Metric, error) {
	m, err := decodeObject(data)
	if err != nil {
		return nil, err
	}
	lat := nums(m, "latencies")
	avg, ok := num(m, "avg_latency")
	if !ok {
		if len(lat) == 0 {
			return nil, fmt.Errorf("latency result has no avg_latency and no latencies")
		}
		for _, x := range lat {
			avg += x
		}
		avg /= float64(len(lat))
	}
	const test = ModeLatency
	ml := metric(metricname.LatencyMs, test, metricname.Ms, results.LowerIsBetter, avg*1000)
	if sd, ok := num(m, "std_latency"); ok {
		ml.Stddev = sd * 1000
	}
	ml.Samples = scale(lat, 1000)
	out := []results.Metric{ml}
	if p, ok := m["percentiles"].(map[string]any); ok {
		keys := make([]string, 0, len(p))
		for k := range p {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			a, _ := strconv.ParseFloat(keys[i], 64)
			b, _ := strconv.ParseFloat(keys[j], 64)
			return a < b
		})
		for _, k := range keys {
			v, ok := num(p, k)
			if !ok {
				continue
			}
			out = append(out, metric("latencyP"+strings.TrimSuffix(strings.TrimSuffix(k, ".0"), ".")+"Ms", test, metricname.Ms, results.LowerIsBetter, v*1000))
		}
	}
	return out, nil
}

// serveLatencies are the per-request latency metrics of serve mode: the
// key infix in the saved file and the metric name.
var serveLatencies = []struct{ key, name string }{
	{"ttft", metricname.TTFTMs},
	{"tpot", metricname.TPOTMs},
	{"itl", metricname.ITLMs},
	{"e2el", MetricE2EL},
}

var rePercentileKey = regexp.MustCompile(`^p([0-9]+(?:\.[0-9]+)?)_([a-z_]+)_ms$`)

// ParseServe reads the --save-result file of `vllm bench serve`, old and
// new versions, into test "serve" metrics: tokSOut (output_throughput),
// tokSTotal (total_token_throughput), tokSPrompt (input_throughput, old
// versions), requestThroughput and requestGoodput; and for each of ttft,
// tpot, itl and e2el that was saved, <m>Ms (the mean, its std as Stddev),
// <m>MsMedian and <m>MsP<N> for every saved percentile. Per-request samples
// are kept when the file has them (--save-detailed): ttfts, itls (every
// inter-token gap) and latencies (e2el) as saved; tpot per request is
// computed as vLLM computes it, (latency − ttft) / (output_len − 1), and
// said so in Derived.
//
// warnings reports failed requests.
func ParseServe(data []byte) (metrics []results.Metric, warnings []string, err error) {
	m, err := decodeObject(data)
	if err != nil {
		return nil, nil, err
	}
	const test = ModeServe
	add := func(key, name, unit, dir string) {
		if v, ok := num(m, key); ok {
			mt := metric(name, test, unit, dir, v)
			mt.Samples = []float64{v}
			metrics = append(metrics, mt)
		}
	}
	add("output_throughput", metricname.TokSOut, metricname.TokPerSec, results.HigherIsBetter)
	add("total_token_throughput", metricname.TokSTotal, metricname.TokPerSec, results.HigherIsBetter)
	add("input_throughput", metricname.TokSPrompt, metricname.TokPerSec, results.HigherIsBetter)
	add("request_throughput", MetricRequestThroughput, metricname.ReqPerSec, results.HigherIsBetter)
	add("request_goodput", MetricGoodput, metricname.ReqPerSec, results.HigherIsBetter)
	if len(metrics) == 0 {
		return nil, nil, fmt.Errorf("serve result has none of output_throughput, total_token_throughput, request_throughput")
	}

	ttfts := nums(m, "ttfts")
	lats := nums(m, "latencies")
	outLens := nums(m, "output_lens")
	perRequest := map[string][]float64{
		"ttft": scale(ttfts, 1000),
		"itl":  scale(nums(m, "itls"), 1000),
		"e2el": scale(lats, 1000),
	}
	var tpotDerived string
	if len(ttfts) > 0 && len(ttfts) == len(lats) && len(lats) == len(outLens) {
		var tp []float64
		for i := range lats {
			if outLens[i] > 1 {
				tp = append(tp, (lats[i]-ttfts[i])/(outLens[i]-1)*1000)
			}
		}
		if len(tp) > 0 {
			perRequest["tpot"] = tp
			tpotDerived = "samples per request: (latency − ttft) / (output_len − 1), vLLM's own TPOT formula, from the saved latencies, ttfts and output_lens"
		}
	}
	pcts := map[string][]string{}
	for k := range m {
		if p := rePercentileKey.FindStringSubmatch(k); p != nil {
			pcts[p[2]] = append(pcts[p[2]], p[1])
		}
	}
	for _, l := range serveLatencies {
		mean, ok := num(m, "mean_"+l.key+"_ms")
		derived := ""
		if !ok {
			// e2el is saved as a mean only when asked for
			// (--percentile-metrics), but the latencies are always saved.
			xs := perRequest[l.key]
			if len(xs) == 0 {
				continue
			}
			for _, x := range xs {
				mean += x
			}
			mean /= float64(len(xs))
			derived = "mean of the saved per-request samples; vLLM saved no mean_" + l.key + "_ms"
		}
		mt := metric(l.name, test, metricname.Ms, results.LowerIsBetter, mean)
		mt.Derived = derived
		if sd, ok := num(m, "std_"+l.key+"_ms"); ok {
			mt.Stddev = sd
		}
		mt.Samples = perRequest[l.key]
		if l.key == "tpot" && mt.Samples != nil && mt.Derived == "" {
			mt.Derived = tpotDerived
		}
		metrics = append(metrics, mt)
		if v, ok := num(m, "median_"+l.key+"_ms"); ok {
			metrics = append(metrics, metric(l.name+"Median", test, metricname.Ms, results.LowerIsBetter, v))
		}
		ps := pcts[l.key]
		sort.Slice(ps, func(i, j int) bool {
			a, _ := strconv.ParseFloat(ps[i], 64)
			b, _ := strconv.ParseFloat(ps[j], 64)
			return a < b
		})
		for _, p := range ps {
			if v, ok := num(m, "p"+p+"_"+l.key+"_ms"); ok {
				metrics = append(metrics, metric(l.name+"P"+p, test, metricname.Ms, results.LowerIsBetter, v))
			}
		}
	}
	if f, ok := num(m, "failed"); ok && f > 0 {
		c, _ := num(m, "completed")
		warnings = append(warnings, fmt.Sprintf("%g of %g requests failed; the metrics cover the %g that completed", f, f+c, c))
	}
	return metrics, warnings, nil
}

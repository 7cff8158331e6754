package loadgen

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"time"
)

// Result is a load test's summary, with vLLM's `bench serve` result keys
// (reference/FORMATS.md §3.3) so that tools reading those files read it,
// plus rigor's own: failures by outcome and the configuration that ran.
type Result struct {
	Backend        string  `json:"backend"`
	Endpoint       string  `json:"endpoint"`
	ModelID        string  `json:"model_id,omitempty"`
	NumPrompts     int     `json:"num_prompts"`
	RequestRate    any     `json:"request_rate"` // a number, or "inf"
	Burstiness     float64 `json:"burstiness"`
	MaxConcurrency *int    `json:"max_concurrency"`
	Seed           uint64  `json:"seed"`
	Warmups        int     `json:"num_warmups"`
	InputLen       int     `json:"input_len"`
	OutputLen      int     `json:"output_len"`
	IgnoreEOS      bool    `json:"ignore_eos"`

	Duration             float64  `json:"duration"`
	Completed            int      `json:"completed"`
	Failed               int      `json:"failed"`
	TotalInputTokens     int      `json:"total_input_tokens"`
	TotalOutputTokens    int      `json:"total_output_tokens"`
	RequestThroughput    float64  `json:"request_throughput"`
	RequestGoodput       *float64 `json:"request_goodput"`
	OutputThroughput     float64  `json:"output_throughput"`
	TotalTokenThroughput float64  `json:"total_token_throughput"`
	MaxConcurrentReqs    int      `json:"max_concurrent_requests"`
	// MaxOutputTokensPerS is the peak of output tokens per second as
	// vLLM's bench serve computes it: each token chunk's arrival (start +
	// ttft, then each gap) counted in one-second buckets from the first
	// successful request's start.
	MaxOutputTokensPerS float64 `json:"max_output_tokens_per_s"`

	// Stats holds mean_<m>_ms, median_<m>_ms, std_<m>_ms and p<P>_<m>_ms
	// for m in ttft, tpot, itl, e2el; written at the top level.
	Stats map[string]float64 `json:"-"`

	// Goodput's objectives, when any.
	SLO *SLO `json:"slo,omitempty"`
	// Failures counts the failed requests by outcome.
	Failures map[string]int `json:"failures,omitempty"`
	// FirstErrors holds the first error of each failed outcome.
	FirstErrors map[string]string `json:"first_errors,omitempty"`
	// Retried counts the requests sent again because the server closed
	// their connection before reading them; they are not failures.
	Retried int `json:"retried,omitempty"`
	// UsageReported counts the completed requests whose token counts the
	// server reported (the rest were counted by rigor).
	UsageReported int `json:"usage_reported"`
	// Percentiles are the percentiles reported.
	Percentiles []float64 `json:"percentiles"`
	// Server is what the server said of itself ([Describe]), by path.
	Server map[string]json.RawMessage `json:"server,omitempty"`
}

// MarshalJSON writes the stats keys at the top level, as vLLM does.
func (r *Result) MarshalJSON() ([]byte, error) {
	type plain Result
	b, err := json.Marshal((*plain)(r))
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, v := range r.Stats {
		m[k] = v
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads the stats keys back from the top level.
func (r *Result) UnmarshalJSON(b []byte) error {
	type plain Result
	if err := json.Unmarshal(b, (*plain)(r)); err != nil {
		return err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	r.Stats = map[string]float64{}
	for k, v := range m {
		if !isStatKey(k) {
			continue
		}
		var f float64
		if json.Unmarshal(v, &f) == nil {
			r.Stats[k] = f
		}
	}
	return nil
}

// Metrics are the per-request latencies summarized, in vLLM's names.
var Metrics = []string{"ttft", "tpot", "itl", "e2el"}

func isStatKey(k string) bool {
	for _, m := range Metrics {
		for _, pre := range []string{"mean_", "median_", "std_"} {
			if k == pre+m+"_ms" {
				return true
			}
		}
		if len(k) > 2 && k[0] == 'p' && len(k) > len(m)+4 && k[len(k)-len(m)-4:] == "_"+m+"_ms" {
			if _, err := strconv.ParseFloat(k[1:len(k)-len(m)-4], 64); err == nil {
				return true
			}
		}
	}
	return false
}

// Samples are the per-request values of one metric in milliseconds:
// ttft, tpot (requests with more than one output token), e2el (the
// latency), and itl (every gap of every request), over completed
// requests.
func Samples(reqs []*Request, m string) []float64 {
	var out []float64
	for _, r := range reqs {
		if !r.OK() {
			continue
		}
		switch m {
		case "ttft":
			out = append(out, r.TTFT*1000)
		case "e2el":
			out = append(out, r.Latency*1000)
		case "tpot":
			if r.OutputLen > 1 {
				out = append(out, (r.Latency-r.TTFT)/float64(r.OutputLen-1)*1000)
			}
		case "itl":
			for _, g := range r.ITL {
				out = append(out, g*1000)
			}
		}
	}
	return out
}

// Summarize computes a run's aggregates from its requests, as vLLM's
// calculate_metrics does. duration is the wall time of the measured part.
func Summarize(c *Config, reqs []*Request, duration time.Duration) *Result {
	pcts := c.Percentiles
	if len(pcts) == 0 {
		pcts = []float64{50, 90, 99}
	}
	res := &Result{Backend: "rigor-loadgen", Endpoint: c.Endpoint, ModelID: c.Model, NumPrompts: c.Requests,
		RequestRate: "inf", Burstiness: c.Burstiness, Seed: c.Seed, Warmups: c.Warmup,
		InputLen: c.InputLen, OutputLen: c.OutputLen, IgnoreEOS: c.IgnoreEOS,
		Duration: duration.Seconds(), Stats: map[string]float64{}, Percentiles: pcts}
	if res.Burstiness == 0 {
		res.Burstiness = 1
	}
	if c.Rate > 0 {
		res.RequestRate = c.Rate
	}
	if c.Concurrency > 0 {
		n := c.Concurrency
		res.MaxConcurrency = &n
	}
	good := 0
	type span struct {
		t float64
		d int
	}
	var spans []span
	for _, r := range reqs {
		if r.Retries > 0 {
			res.Retried++
		}
		if !r.OK() {
			res.Failed++
			if res.Failures == nil {
				res.Failures, res.FirstErrors = map[string]int{}, map[string]string{}
			}
			res.Failures[r.Outcome]++
			if _, ok := res.FirstErrors[r.Outcome]; !ok {
				res.FirstErrors[r.Outcome] = r.Error
			}
			continue
		}
		res.Completed++
		res.TotalInputTokens += r.PromptLen
		res.TotalOutputTokens += r.OutputLen
		if r.Usage {
			res.UsageReported++
		}
		spans = append(spans, span{r.Start, 1}, span{r.Start + r.Latency, -1})
		tpot := 0.0
		if r.OutputLen > 1 {
			tpot = (r.Latency - r.TTFT) / float64(r.OutputLen-1) * 1000
		}
		if (c.SLO.TTFTMs == 0 || r.TTFT*1000 <= c.SLO.TTFTMs) &&
			(c.SLO.TPOTMs == 0 || tpot <= c.SLO.TPOTMs) &&
			(c.SLO.E2ELMs == 0 || r.Latency*1000 <= c.SLO.E2ELMs) {
			good++
		}
	}
	sort.Slice(spans, func(i, j int) bool {
		if spans[i].t != spans[j].t {
			return spans[i].t < spans[j].t
		}
		return spans[i].d < spans[j].d
	})
	cur := 0
	for _, s := range spans {
		cur += s.d
		res.MaxConcurrentReqs = max(res.MaxConcurrentReqs, cur)
	}
	res.MaxOutputTokensPerS = maxTokensPerSecond(reqs)
	if d := res.Duration; d > 0 {
		res.RequestThroughput = float64(res.Completed) / d
		res.OutputThroughput = float64(res.TotalOutputTokens) / d
		res.TotalTokenThroughput = float64(res.TotalInputTokens+res.TotalOutputTokens) / d
		if c.SLO != (SLO{}) {
			g := float64(good) / d
			res.RequestGoodput = &g
			slo := c.SLO
			res.SLO = &slo
		}
	}
	for _, m := range Metrics {
		xs := Samples(reqs, m)
		if len(xs) == 0 {
			continue
		}
		sort.Float64s(xs)
		mean, sd := meanStd(xs)
		res.Stats["mean_"+m+"_ms"] = mean
		res.Stats["std_"+m+"_ms"] = sd
		res.Stats["median_"+m+"_ms"] = Percentile(xs, 50)
		for _, p := range pcts {
			res.Stats["p"+PercentileName(p)+"_"+m+"_ms"] = Percentile(xs, p)
		}
	}
	return res
}

// PercentileName writes a percentile as vLLM's keys do: 99, 99.9.
func PercentileName(p float64) string {
	return strconv.FormatFloat(p, 'f', -1, 64)
}

// Percentile is numpy's default (linear) percentile of sorted xs.
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	h := (float64(n) - 1) * p / 100
	lo := math.Floor(h)
	i := int(lo)
	if i >= n-1 {
		return sorted[n-1]
	}
	return sorted[i] + (h-lo)*(sorted[i+1]-sorted[i])
}

// meanStd is the mean and the population standard deviation (numpy's
// std).
func meanStd(xs []float64) (float64, float64) {
	var s float64
	for _, x := range xs {
		s += x
	}
	mean := s / float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(xs)))
}

// WriteRaw writes the requests as gzip-compressed JSON lines, one
// request a line, in order.
func WriteRaw(w io.Writer, reqs []*Request) error {
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(zw)
	for _, r := range reqs {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("writing request %d: %w", r.Index, err)
		}
	}
	return zw.Close()
}

// ReadRaw reads what [WriteRaw] wrote.
func ReadRaw(data []byte) ([]*Request, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("reading the raw requests: %w", err)
	}
	dec := json.NewDecoder(zr)
	var out []*Request
	for {
		var r Request
		if err := dec.Decode(&r); err == io.EOF {
			return out, nil
		} else if err != nil {
			return out, fmt.Errorf("reading the raw requests: line %d: %w", len(out)+1, err)
		}
		out = append(out, &r)
	}
}

// maxTokensPerSecond is vLLM's max_output_tokens_per_s: the largest count
// of token chunks arriving in one second, the seconds counted from the
// first successful request's start.
func maxTokensPerSecond(reqs []*Request) float64 {
	first, ok := math.Inf(1), false
	for _, r := range reqs {
		if r.OK() {
			first, ok = math.Min(first, r.Start), true
		}
	}
	if !ok {
		return 0
	}
	buckets := map[int]int{}
	peak := 0
	for _, r := range reqs {
		if !r.OK() {
			continue
		}
		t := r.Start + r.TTFT
		times := []float64{t}
		for _, g := range r.ITL {
			t += g
			times = append(times, t)
		}
		for _, x := range times {
			b := int(x - first)
			buckets[b]++
			peak = max(peak, buckets[b])
		}
	}
	return float64(peak)
}

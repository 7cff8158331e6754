package loadgen_test

import (
	"fmt"
	"time"

	"github.com/rigorbench/rigor/internal/loadgen"
)

// Summarize computes vLLM bench serve's aggregates from measured requests:
// here two completed requests and one the server refused.
func ExampleSummarize() {
	reqs := []*loadgen.Request{
		{Outcome: loadgen.OK, TTFT: 0.100, Latency: 0.500, OutputLen: 5, PromptLen: 16, ITL: []float64{0.1, 0.1, 0.1, 0.1}, Usage: true},
		{Outcome: loadgen.OK, TTFT: 0.300, Latency: 1.100, OutputLen: 5, PromptLen: 16, ITL: []float64{0.2, 0.2, 0.2, 0.2}, Usage: true},
		{Outcome: loadgen.HTTPStatus, Error: "HTTP 429: busy"},
	}
	c := &loadgen.Config{Endpoint: loadgen.Completions, Requests: 3, SLO: loadgen.SLO{TTFTMs: 200}}
	r := loadgen.Summarize(c, reqs, 2*time.Second)
	fmt.Printf("completed %d, failed %d (%v)\n", r.Completed, r.Failed, r.Failures)
	fmt.Printf("%.1f req/s, %.1f output tok/s, goodput %.1f req/s\n", r.RequestThroughput, r.OutputThroughput, *r.RequestGoodput)
	fmt.Printf("TTFT mean %.0f ms, median %.0f ms; TPOT mean %.0f ms; ITL p99 %.0f ms\n",
		r.Stats["mean_ttft_ms"], r.Stats["median_ttft_ms"], r.Stats["mean_tpot_ms"], r.Stats["p99_itl_ms"])
	// Output:
	// completed 2, failed 1 (map[http-status:1])
	// 1.0 req/s, 5.0 output tok/s, goodput 0.5 req/s
	// TTFT mean 200 ms, median 200 ms; TPOT mean 150 ms; ITL p99 200 ms
}

package loadgen

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestSummarize_maxOutputTokensPerS: the peak output tokens per second as
// vLLM's bench serve reports it (max_output_tokens_per_s): every text
// chunk's arrival (start + ttft, then each gap) counted in one-second
// buckets from the first successful request's start; failed requests do
// not count (issue 25: the result had no such key).
func TestSummarize_maxOutputTokensPerS(t *testing.T) {
	reqs := []*Request{
		// chunks at 0.1, 0.3, 0.6: bucket 0
		{Index: 0, Start: 0, TTFT: 0.1, ITL: []float64{0.2, 0.3}, Latency: 0.6, OutputLen: 3, Outcome: OK},
		// chunks at 0.4, 0.5, 1.5: buckets 0, 0, 1
		{Index: 1, Start: 0.2, TTFT: 0.2, ITL: []float64{0.1, 1.0}, Latency: 1.3, OutputLen: 3, Outcome: OK},
		// failed: not counted
		{Index: 2, Start: 0.1, TTFT: 0.1, ITL: []float64{0.1, 0.1, 0.1}, Latency: 0.4, Outcome: "http-status"},
	}
	res := Summarize(&Config{Requests: 3}, reqs, 2*time.Second)
	if res.MaxOutputTokensPerS != 5 {
		t.Errorf("max_output_tokens_per_s = %g, want 5 (bucket 0 holds 3 + 2 chunks)", res.MaxOutputTokensPerS)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"max_output_tokens_per_s":5`) {
		t.Errorf("result JSON lacks max_output_tokens_per_s: %s", b)
	}
}

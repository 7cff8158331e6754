package serve

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/loadgen"
)

// TestJudge_requestSamples: every latency metric keeps one sample per
// completed request, as the README promises, ITL included (the request's
// mean gap between text chunks); issue 25 found itlMs without samples.
func TestJudge_requestSamples(t *testing.T) {
	reqs := []*loadgen.Request{
		{Index: 0, OutputLen: 3, TTFT: 0.1, ITL: []float64{0.01, 0.03}, Latency: 0.14, Outcome: loadgen.OK},
		{Index: 1, OutputLen: 2, TTFT: 0.2, ITL: []float64{0.02}, Latency: 0.22, Outcome: loadgen.OK},
		{Index: 2, OutputLen: 1, TTFT: 0.3, Latency: 0.3, Outcome: loadgen.OK},
	}
	var raw bytes.Buffer
	if err := loadgen.WriteRaw(&raw, reqs); err != nil {
		t.Fatal(err)
	}
	res := loadgen.Result{Completed: 3, OutputThroughput: 10, Stats: map[string]float64{
		"mean_ttft_ms": 200, "mean_tpot_ms": 20, "mean_itl_ms": 20, "mean_e2el_ms": 220}}
	data, err := json.Marshal(&res)
	if err != nil {
		t.Fatal(err)
	}
	v := Judge(engine.Finished{Outputs: map[string][]byte{ResultFile: data, RawFile: raw.Bytes()}})
	got := map[string][]float64{}
	for _, m := range v.Metrics {
		got[m.Name] = m.Samples
	}
	for name, n := range map[string]int{"ttftMs": 3, "e2elMs": 3, "tpotMs": 2, "itlMs": 2} {
		if len(got[name]) != n {
			t.Errorf("%s: %d samples %v, want %d (one per request that has one)", name, len(got[name]), got[name], n)
		}
	}
	if s := got["itlMs"]; len(s) == 2 && (s[0] < 19.99 || s[0] > 20.01 || s[1] < 19.99 || s[1] > 20.01) {
		t.Errorf("itlMs samples %v, want each request's mean gap: 20, 20 ms", s)
	}
}

// TestJudge_timedSeconds: the load generator's duration is the engine's
// measured part, the section whose energy gives tok/J (issue 32); without
// it the runner would count the server's start and model load.
func TestJudge_timedSeconds(t *testing.T) {
	data, err := json.Marshal(&loadgen.Result{Completed: 2, OutputThroughput: 10, Duration: 12.5, Stats: map[string]float64{}})
	if err != nil {
		t.Fatal(err)
	}
	if v := Judge(engine.Finished{Outputs: map[string][]byte{ResultFile: data}}); v.TimedSeconds != 12.5 {
		t.Errorf("TimedSeconds = %v, want the load generator's 12.5 s", v.TimedSeconds)
	}
}

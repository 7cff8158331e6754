package vllm

import (
	"testing"
)

func FuzzParse(f *testing.F) {
	f.Add([]byte(seed004JSON), []byte("Throughput: 1 requests/s, 2 total tokens/s, 3 output tokens/s\n"))
	f.Add([]byte(`{"avg_latency": 1, "latencies": [1, "x", [2]], "percentiles": {"5": null}}`), []byte(""))
	f.Add([]byte(`{"output_throughput": 1, "ttfts": [1], "latencies": [2], "output_lens": [1], "mean_tpot_ms": 3, "p99_tpot_ms": "x"}`), []byte("Traceback (most recent call last):\nX: y"))
	f.Fuzz(func(t *testing.T, data, stdout []byte) {
		for _, mode := range []string{ModeThroughput, ModeLatency, ModeServe} {
			o := Classify(Output{Mode: mode, Result: data, Stdout: stdout, Stderr: stdout, InputLen: 512})
			if o.Status == "" || (o.Status != "ok") == (o.Error == "") {
				t.Fatalf("%s: status %q with error %q", mode, o.Status, o.Error)
			}
			for _, m := range o.Metrics {
				if m.Name == "" || m.Unit == "" {
					t.Fatalf("%s: metric without name or unit: %+v", mode, m)
				}
			}
		}
	})
}

package loadgen

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// FuzzStream serves arbitrary bytes as a streamed answer: the request ends
// with one of the known outcomes, never a panic, and a completed request
// has a consistent measurement.
func FuzzStream(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\r\n\r\ndata: {\"choices\":[],\"usage\":{\"completion_tokens\":7}}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: {\"error\":{\"message\":\"boom\"}}\n\n"))
	f.Add([]byte("data: {\"choices\":[{\"text\":\n\n"))
	f.Add([]byte("event: ping\n: comment\n\ndata: [DONE]"))
	f.Add([]byte("data: {\"choices\":[{\"text\":\"a\"}]}\ndata: {\"x\":1}\n\n"))
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(body)
	}))
	defer srv.Close()
	known := map[string]bool{OK: true, HTTPStatus: true, Malformed: true, NoDone: true, NoToken: true, Timeout: true, Connection: true}
	f.Fuzz(func(t *testing.T, b []byte) {
		body = b
		c := Config{URL: srv.URL, Endpoint: Completions, Requests: 1, InputLen: 2, OutputLen: 2, Timeout: 5 * time.Second}
		reqs, _, err := Run(context.Background(), c, nil)
		if err != nil {
			t.Fatal(err)
		}
		r := reqs[0]
		if !known[r.Outcome] {
			t.Fatalf("outcome %q for %q", r.Outcome, b)
		}
		if r.OK() && (r.Chunks < 1 || len(r.ITL) != r.Chunks-1 || r.Latency < r.TTFT || r.OutputLen < 0) {
			t.Fatalf("inconsistent ok request %+v for %q", r, b)
		}
		if !r.OK() && r.Error == "" {
			t.Fatalf("%s without an error for %q", r.Outcome, b)
		}
		Summarize(&c, reqs, time.Second)
	})
}

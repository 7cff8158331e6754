package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// sse is a test server speaking the OpenAI streaming protocol: it sends
// tokens chunks after first, then one every gap, then usage and [DONE].
// fault changes how it misbehaves.
type sse struct {
	tokens     int
	first, gap time.Duration
	fault      string
	inflight   atomic.Int32
	maxIn      atomic.Int32
	mu         sync.Mutex
	bodies     []map[string]any
	auth       []string
}

func (s *sse) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := s.inflight.Add(1)
	// Leave before the answer's last bytes: a client that has read them
	// may send its next request before this handler returns.
	var left sync.Once
	leave := func() { left.Do(func() { s.inflight.Add(-1) }) }
	defer leave()
	for {
		m := s.maxIn.Load()
		if n <= m || s.maxIn.CompareAndSwap(m, n) {
			break
		}
	}
	var body map[string]any
	json.NewDecoder(r.Body).Decode(&body)
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	s.mu.Unlock()
	chat := strings.HasSuffix(r.URL.Path, "/chat/completions")
	switch s.fault {
	case "429":
		leave()
		http.Error(w, `{"error":"too many requests"}`, http.StatusTooManyRequests)
		return
	case "500":
		leave()
		http.Error(w, `{"error":"boom"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	send := func(v string) {
		fmt.Fprintf(w, "data: %s\n\n", v)
		fl.Flush()
	}
	for i := 0; i < s.tokens; i++ {
		if i == 0 {
			time.Sleep(s.first)
			// A chat's role-only delta comes with the first token, as
			// llama.cpp's and vLLM's servers send it.
			if chat {
				send(`{"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}`)
			}
		} else {
			time.Sleep(s.gap)
		}
		if s.fault == "malformed" && i == 2 {
			send(`{"choices":[{"text":`)
			continue
		}
		if s.fault == "error-event" && i == 2 {
			send(`{"error":{"message":"out of memory"}}`)
			return
		}
		if s.fault == "hang" && i == 2 {
			<-r.Context().Done()
			return
		}
		if chat {
			send(fmt.Sprintf(`{"choices":[{"index":0,"delta":{"content":"t%d"}}]}`, i))
		} else {
			send(fmt.Sprintf(`{"choices":[{"index":0,"text":"t%d"}]}`, i))
		}
	}
	if s.fault == "no-done" {
		return
	}
	if s.fault != "no-usage" {
		send(fmt.Sprintf(`{"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d}}`, 7, s.tokens))
	}
	leave()
	send("[DONE]")
}

func run(t *testing.T, s *sse, c Config) ([]*Request, *Result) {
	t.Helper()
	srv := httptest.NewServer(s)
	defer srv.Close()
	c.URL = srv.URL
	if c.Endpoint == "" {
		c.Endpoint = Completions
	}
	if c.InputLen == 0 {
		c.InputLen, c.OutputLen = 8, s.tokens
	}
	reqs, d, err := Run(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	return reqs, Summarize(&c, reqs, d)
}

func TestRun_Schedule(t *testing.T) {
	for _, ep := range []string{Completions, Chat} {
		t.Run(ep, func(t *testing.T) {
			s := &sse{tokens: 6, first: 30 * time.Millisecond, gap: 10 * time.Millisecond}
			reqs, res := run(t, s, Config{Endpoint: ep, Requests: 3, Concurrency: 1, APIKey: "k-123"})
			for _, r := range reqs {
				if !r.OK() {
					t.Fatalf("request %d: %s %s", r.Index, r.Outcome, r.Error)
				}
				// A chat's role-only delta is a token chunk, as vLLM
				// counts them (TestRun_ChunksAsVLLM); its output is the
				// server's usage all the same.
				chunks := 6
				if ep == Chat {
					chunks = 7
				}
				if r.Chunks != chunks || len(r.ITL) != chunks-1 || r.OutputLen != 6 || !r.Usage || r.PromptLen != 7 {
					t.Errorf("request %d: chunks %d, gaps %d, output %d (usage %v), prompt %d; want %d, %d, 6 (true), 7",
						r.Index, r.Chunks, len(r.ITL), r.OutputLen, r.Usage, r.PromptLen, chunks, chunks-1)
				}
				// The server sleeps at least this long: lower bounds only.
				if r.TTFT < 0.030 {
					t.Errorf("request %d: TTFT %.4fs below the scheduled 30ms", r.Index, r.TTFT)
				}
				// One gap can be short when the token before it arrived late
				// (a busy machine delays delivery, never the server's
				// clock); the time of each token since the request is
				// bounded below by the schedule.
				at := r.TTFT
				for i, g := range r.ITL {
					at += g
					k := i + 1 // the token's index in the schedule
					if ep == Chat {
						k = i // the role delta came with token 0
					}
					if want := 0.030 + 0.010*float64(k); at < want-1e-6 {
						t.Errorf("request %d: token %d arrived at %.4fs, before the scheduled %.3fs", r.Index, i+2, at, want)
					}
				}
				if r.Latency < r.TTFT+0.050 {
					t.Errorf("request %d: latency %.4f < TTFT %.4f + 5 gaps", r.Index, r.Latency, r.TTFT)
				}
			}
			if res.Completed != 3 || res.Failed != 0 || res.TotalOutputTokens != 18 || res.TotalInputTokens != 21 {
				t.Errorf("got completed %d failed %d out %d in %d, want 3 0 18 21", res.Completed, res.Failed, res.TotalOutputTokens, res.TotalInputTokens)
			}
			if res.MaxConcurrentReqs != 1 || s.maxIn.Load() != 1 {
				t.Errorf("concurrency 1: measured %d in flight, the server saw %d", res.MaxConcurrentReqs, s.maxIn.Load())
			}
			for _, k := range []string{"mean_ttft_ms", "median_itl_ms", "p99_tpot_ms", "p90_e2el_ms", "std_ttft_ms"} {
				if _, ok := res.Stats[k]; !ok {
					t.Errorf("no %s in %v", k, res.Stats)
				}
			}
			b := s.bodies[0]
			if b["stream"] != true || b["max_tokens"] != float64(6) {
				t.Errorf("request body %v: want stream and max_tokens 6", b)
			}
			if ep == Chat && b["messages"] == nil || ep == Completions && b["prompt"] == nil {
				t.Errorf("request body %v has no prompt for %s", b, ep)
			}
			if s.auth[0] != "Bearer k-123" {
				t.Errorf("authorization %q", s.auth[0])
			}
		})
	}
}

func TestRun_Concurrency(t *testing.T) {
	s := &sse{tokens: 3, first: 20 * time.Millisecond, gap: 5 * time.Millisecond}
	_, res := run(t, s, Config{Requests: 24, Concurrency: 4})
	if got := s.maxIn.Load(); got > 4 {
		t.Errorf("server saw %d requests at once, concurrency is 4", got)
	}
	if res.Completed != 24 {
		t.Errorf("completed %d of 24", res.Completed)
	}
	if *res.MaxConcurrency != 4 || res.MaxConcurrentReqs > 4 {
		t.Errorf("max concurrency %d, measured %d", *res.MaxConcurrency, res.MaxConcurrentReqs)
	}
}

func TestRun_Faults(t *testing.T) {
	for _, tc := range []struct {
		fault, outcome, err string
	}{
		{"429", HTTPStatus, "HTTP 429"},
		{"500", HTTPStatus, "HTTP 500"},
		{"malformed", Malformed, "malformed event"},
		{"error-event", Malformed, "out of memory"},
		{"no-done", NoDone, "without [DONE]"},
		{"hang", Timeout, "within 300ms"},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			s := &sse{tokens: 5, gap: time.Millisecond, fault: tc.fault}
			reqs, res := run(t, s, Config{Requests: 2, Concurrency: 2, Timeout: 300 * time.Millisecond})
			for _, r := range reqs {
				if r.Outcome != tc.outcome || !strings.Contains(r.Error, tc.err) {
					t.Errorf("got %s %q, want %s containing %q", r.Outcome, r.Error, tc.outcome, tc.err)
				}
			}
			if res.Failed != 2 || res.Completed != 0 || res.Failures[tc.outcome] != 2 {
				t.Errorf("failed %d completed %d failures %v", res.Failed, res.Completed, res.Failures)
			}
		})
	}
}

func TestRun_ConnectionRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	reqs, _, err := Run(context.Background(), Config{URL: url, Endpoint: Completions, Requests: 2, InputLen: 4, OutputLen: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		if r.Outcome != Connection || r.Error == "" || r.Retries != 0 {
			t.Errorf("got %s %q after %d retries, want %s and no retry", r.Outcome, r.Error, r.Retries, Connection)
		}
	}
}

func TestRun_NoUsageCountsChunks(t *testing.T) {
	s := &sse{tokens: 4, gap: time.Millisecond, fault: "no-usage"}
	reqs, res := run(t, s, Config{Requests: 1})
	if r := reqs[0]; !r.OK() || r.Usage || r.OutputLen != 4 || r.PromptLen != 8 {
		t.Errorf("got %+v, want ok, counted: 4 output tokens, 8 prompt words", r)
	}
	if res.UsageReported != 0 {
		t.Errorf("usage reported %d", res.UsageReported)
	}
}

func TestRun_Interrupted(t *testing.T) {
	s := &sse{tokens: 5, gap: time.Millisecond, fault: "hang"}
	srv := httptest.NewServer(s)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	reqs, _, err := Run(ctx, Config{URL: srv.URL, Endpoint: Completions, Requests: 3, Concurrency: 1, InputLen: 2, OutputLen: 5}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 3 {
		t.Fatalf("got %d requests, want every one recorded", len(reqs))
	}
	for _, r := range reqs {
		if r.Outcome != Interrupted {
			t.Errorf("request %d: %s, want %s", r.Index, r.Outcome, Interrupted)
		}
	}
}

func TestSummarize(t *testing.T) {
	reqs := []*Request{
		{Outcome: OK, TTFT: 0.1, Latency: 0.5, OutputLen: 5, PromptLen: 10, ITL: []float64{0.1, 0.1, 0.1, 0.1}, Usage: true},
		{Outcome: OK, TTFT: 0.2, Latency: 1.0, OutputLen: 9, PromptLen: 10, ITL: []float64{0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1}, Start: 0.1},
		{Outcome: OK, TTFT: 0.4, Latency: 0.4, OutputLen: 1, PromptLen: 10, Start: 1.2},
		{Outcome: HTTPStatus, Error: "HTTP 429: slow down"},
	}
	c := &Config{Endpoint: Completions, Requests: 4, SLO: SLO{TTFTMs: 250, TPOTMs: 100.5}}
	res := Summarize(c, reqs, 2*time.Second)
	check := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
	}
	check("request_throughput", res.RequestThroughput, 1.5)
	check("output_throughput", res.OutputThroughput, 7.5)
	check("total_token_throughput", res.TotalTokenThroughput, 22.5)
	// Good: request 0 (ttft 100, tpot 100) and 1 (ttft 200, tpot 100);
	// request 2 has ttft 400.
	check("request_goodput", *res.RequestGoodput, 1)
	check("mean_ttft_ms", res.Stats["mean_ttft_ms"], 700.0/3)
	check("median_ttft_ms", res.Stats["median_ttft_ms"], 200)
	// numpy.percentile([100,200,400], 90) = 360
	check("p90_ttft_ms", res.Stats["p90_ttft_ms"], 360)
	check("mean_tpot_ms", res.Stats["mean_tpot_ms"], 100) // requests with > 1 token only
	check("mean_itl_ms", res.Stats["mean_itl_ms"], 100)
	check("std_e2el_ms", res.Stats["std_e2el_ms"], math.Sqrt(((500-633.3333333333334)*(500-633.3333333333334)+(1000-633.3333333333334)*(1000-633.3333333333334)+(400-633.3333333333334)*(400-633.3333333333334))/3))
	if res.Completed != 3 || res.Failed != 1 || res.Failures[HTTPStatus] != 1 || res.FirstErrors[HTTPStatus] != "HTTP 429: slow down" {
		t.Errorf("completed %d failed %d failures %v %v", res.Completed, res.Failed, res.Failures, res.FirstErrors)
	}
	if res.MaxConcurrentReqs != 2 {
		t.Errorf("max concurrent %d, want 2 (requests 0 and 1 overlap)", res.MaxConcurrentReqs)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"p99_itl_ms":`)) || back.Stats["p90_ttft_ms"] != 360 || back.Completed != 3 {
		t.Errorf("round trip lost the stats: %s", b)
	}
}

func TestPercentile(t *testing.T) {
	xs := []float64{1, 2, 3, 4}
	// numpy.percentile([1,2,3,4], [0, 50, 99, 100]) = 1, 2.5, 3.97, 4
	for _, tc := range [][2]float64{{0, 1}, {50, 2.5}, {99, 3.97}, {100, 4}} {
		if got := Percentile(xs, tc[0]); math.Abs(got-tc[1]) > 1e-12 {
			t.Errorf("Percentile(%v, %v) = %v, want %v", xs, tc[0], got, tc[1])
		}
	}
}

func TestArrivals(t *testing.T) {
	c := &Config{Rate: 50, Seed: 7}
	a, b := Arrivals(c, 20000), Arrivals(c, 20000)
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("the same seed gave different arrivals")
		}
	}
	mean := a[len(a)-1].Seconds() / float64(len(a)-1)
	if math.Abs(mean-0.02) > 0.02*0.05 {
		t.Errorf("mean interval %.5fs, want 0.02s ±5%% for rate 50", mean)
	}
	c.Burstiness = 0.5
	bursty := Arrivals(c, 20000)
	if m := bursty[len(bursty)-1].Seconds() / float64(len(bursty)-1); math.Abs(m-0.02) > 0.02*0.05 {
		t.Errorf("burstiness 0.5: mean interval %.5fs, want 0.02s", m)
	}
	if z := Arrivals(&Config{Seed: 1}, 3); z[2] != 0 {
		t.Errorf("rate 0 sends all at once, got %v", z)
	}
}

func TestPrompts(t *testing.T) {
	c := &Config{InputLen: 100, OutputLen: 50, RangeRatio: 0.2, Seed: 3}
	p, q := Prompts(c, 50), Prompts(c, 50)
	for i := range p {
		if p[i] != q[i] {
			t.Fatal("the same seed gave different prompts")
		}
		if p[i].Words < 80 || p[i].Words > 120 || p[i].MaxTokens < 40 || p[i].MaxTokens > 60 {
			t.Errorf("prompt %d: %d words, %d max tokens outside ±20%%", i, p[i].Words, p[i].MaxTokens)
		}
		if got := len(strings.Fields(p[i].Text)); got != p[i].Words {
			t.Errorf("prompt %d has %d words, says %d", i, got, p[i].Words)
		}
	}
}

func TestRaw_RoundTrip(t *testing.T) {
	reqs := []*Request{{Index: 0, Outcome: OK, TTFT: 0.1, ITL: []float64{0.01}}, {Index: 1, Outcome: Timeout, Error: "x"}}
	var buf bytes.Buffer
	if err := WriteRaw(&buf, reqs); err != nil {
		t.Fatal(err)
	}
	back, err := ReadRaw(buf.Bytes())
	if err != nil || len(back) != 2 || back[0].ITL[0] != 0.01 || back[1].Outcome != Timeout {
		t.Errorf("got %v %v", back, err)
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []Config{
		{},
		{URL: "http://x", Endpoint: "embeddings", Requests: 1, InputLen: 1, OutputLen: 1},
		{URL: "http://x", Endpoint: Chat, Requests: 0, InputLen: 1, OutputLen: 1},
		{URL: "http://x", Endpoint: Chat, Requests: 1, InputLen: 1, OutputLen: 1, RangeRatio: 1},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

// closesIdle is a transport whose second request meets a kept-alive
// connection the server has just closed as idle: Go's transport reports
// "http: server closed idle connection" before any answer, and does not
// send a POST again itself.
type closesIdle struct {
	rt http.RoundTripper
	n  atomic.Int32
}

func (c *closesIdle) RoundTrip(req *http.Request) (*http.Response, error) {
	if c.n.Add(1) == 2 {
		if t := httptrace.ContextClientTrace(req.Context()); t != nil {
			if t.GotConn != nil {
				t.GotConn(httptrace.GotConnInfo{Reused: true, WasIdle: true})
			}
			if t.WroteRequest != nil {
				t.WroteRequest(httptrace.WroteRequestInfo{})
			}
		}
		return nil, errors.New("http: server closed idle connection")
	}
	return c.rt.RoundTrip(req)
}

// A request whose connection the server closed before reading it was
// never served: it is sent again and counted, not failed. A request that
// fails on a fresh connection still fails.
func TestRun_RetriesUnsentRequest(t *testing.T) {
	s := &sse{tokens: 3, gap: time.Millisecond}
	tr := &closesIdle{rt: http.DefaultTransport}
	reqs, res := run(t, s, Config{Requests: 4, Concurrency: 1, Client: &http.Client{Transport: tr}})
	if res.Failed != 0 || res.Completed != 4 {
		t.Fatalf("failed %d completed %d (%v %v), want 0 and 4", res.Failed, res.Completed, res.Failures, res.FirstErrors)
	}
	if reqs[1].Retries != 1 || res.Retried != 1 {
		t.Errorf("request 1 retries %d, result retried %d; want 1 and 1", reqs[1].Retries, res.Retried)
	}
	if len(s.bodies) != 4 {
		t.Errorf("the server served %d requests, want 4", len(s.bodies))
	}
}

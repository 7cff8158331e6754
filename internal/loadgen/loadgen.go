package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rigorbench/rigor/internal/redact"
)

// Endpoints.
const (
	Completions = "completions"
	Chat        = "chat"
)

// Outcomes of a request.
const (
	OK          = "ok"
	HTTPStatus  = "http-status" // the server answered with an error status
	Malformed   = "malformed"   // an event that is not valid JSON, or an error event
	NoDone      = "no-done"     // the stream ended without [DONE]
	NoToken     = "no-token"    // the stream ended without any text
	Timeout     = "timeout"     // slower than the request timeout
	Connection  = "connection"  // no connection, or it broke
	Interrupted = "interrupted" // the run was stopped
)

// Config is one load test.
type Config struct {
	// URL is the server's base URL (http://127.0.0.1:8080); the endpoint
	// path /v1/completions or /v1/chat/completions is added to it.
	URL string
	// Endpoint is Completions or Chat.
	Endpoint string
	// Model is the "model" field of each request; empty leaves it out.
	Model string
	// APIKey is sent as a bearer token; it is never part of a result.
	APIKey string
	// Requests is the number of measured requests.
	Requests int
	// Concurrency bounds the requests in flight; 0 means unbounded.
	Concurrency int
	// Rate is the mean arrival rate in requests per second; 0 sends every
	// request at once (vLLM's "inf").
	Rate float64
	// Burstiness is the shape of the gamma distribution of the arrival
	// intervals; 1 (the default) is a Poisson process.
	Burstiness float64
	// Seed draws the prompts, the lengths and the arrivals.
	Seed uint64
	// InputLen and OutputLen are the prompt length (in words, about one
	// token each) and the max_tokens of each request.
	InputLen, OutputLen int
	// RangeRatio draws each length uniformly within ±RangeRatio of it.
	RangeRatio float64
	// IgnoreEOS asks the server to generate max_tokens whatever it
	// samples (ignore_eos).
	IgnoreEOS bool
	// Warmup requests are sent before the measured ones and not counted.
	Warmup int
	// SLO is what a request must meet to count for goodput.
	SLO SLO
	// Timeout bounds each request; 0 means no bound.
	Timeout time.Duration
	// Percentiles reported, in percent; default 50, 90, 99.
	Percentiles []float64
	// Client is the HTTP client; nil uses one without a timeout and with
	// enough idle connections for the concurrency.
	Client *http.Client
}

// SLO is a service-level objective for goodput; zero fields are not
// checked.
type SLO struct {
	TTFTMs float64 `json:"ttftMs,omitempty"`
	TPOTMs float64 `json:"tpotMs,omitempty"`
	E2ELMs float64 `json:"e2elMs,omitempty"`
}

// Request is one measured request: what the raw per-request data holds.
// Times are seconds.
type Request struct {
	Index int `json:"i"`
	// Start is when the request was sent, since the benchmark began.
	Start float64 `json:"start"`
	// Queue is how long it waited for a concurrency slot.
	Queue     float64 `json:"queue"`
	PromptLen int     `json:"promptLen"`
	OutputLen int     `json:"outputLen"`
	// MaxTokens is what was asked for.
	MaxTokens int `json:"maxTokens"`
	// Usage is true when the token counts are the server's.
	Usage   bool      `json:"usage"`
	TTFT    float64   `json:"ttft"`
	ITL     []float64 `json:"itl"`
	Latency float64   `json:"latency"`
	// Chunks is the number of token chunks received: events with a
	// non-empty choices list, as vLLM counts them (the role-only first
	// delta of a chat and chunks of empty text included).
	Chunks  int    `json:"chunks"`
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
	// Status is the HTTP status, when there was one.
	Status int `json:"status,omitempty"`
	// Retries counts the times the request was sent again because the
	// server closed its connection before reading it (see [Config.send]).
	Retries int `json:"retries,omitempty"`
}

// OK reports whether the request completed.
func (r *Request) OK() bool { return r.Outcome == OK }

// Validate checks a configuration.
func (c *Config) Validate() error {
	switch {
	case c.URL == "":
		return errors.New("no server URL")
	case c.Endpoint != Completions && c.Endpoint != Chat:
		return fmt.Errorf("endpoint %q is not %s or %s", c.Endpoint, Completions, Chat)
	case c.Requests < 1:
		return fmt.Errorf("requests is %d, want at least 1", c.Requests)
	case c.InputLen < 1 || c.OutputLen < 1:
		return fmt.Errorf("input and output lengths must be at least 1 (got %d and %d)", c.InputLen, c.OutputLen)
	case c.RangeRatio < 0 || c.RangeRatio >= 1:
		return fmt.Errorf("range ratio %g is not in [0, 1)", c.RangeRatio)
	case c.Rate < 0 || c.Concurrency < 0 || c.Warmup < 0 || c.Burstiness < 0:
		return errors.New("rate, concurrency, warmup and burstiness cannot be negative")
	}
	return nil
}

// Prompt is one request's input.
type Prompt struct {
	Text      string
	Words     int
	MaxTokens int
}

// words are common English words of one token each in the usual BPE
// vocabularies, so that a prompt of n words is about n tokens.
var words = strings.Fields(`the of and to in is that for it as was with be by on not he this are or his
from at which but have an they you were her she there been one all we their has would when if so no
will can more out up into do any your what some time could them see other than then now only its
over also back after use two how our work first well way even new want because day most us`)

// Prompts draws the prompts of n requests (warm-up requests first) from
// the seed: the same seed gives the same prompts, lengths and order.
func Prompts(c *Config, n int) []Prompt {
	rng := rand.New(rand.NewPCG(c.Seed, 0x5e4e))
	length := func(mean int) int {
		if c.RangeRatio == 0 {
			return mean
		}
		lo := int(math.Floor(float64(mean) * (1 - c.RangeRatio)))
		hi := int(math.Ceil(float64(mean) * (1 + c.RangeRatio)))
		if lo < 1 {
			lo = 1
		}
		return lo + rng.IntN(hi-lo+1)
	}
	out := make([]Prompt, n)
	for i := range out {
		in, max := length(c.InputLen), length(c.OutputLen)
		var b strings.Builder
		for j := 0; j < in; j++ {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[rng.IntN(len(words))])
		}
		out[i] = Prompt{Text: b.String(), Words: in, MaxTokens: max}
	}
	return out
}

// Arrivals are the send times of n requests after the start, drawn from
// the seed: zero for all when rate is 0, else gamma-distributed intervals
// of mean 1/rate and shape burstiness (exponential when it is 1).
func Arrivals(c *Config, n int) []time.Duration {
	out := make([]time.Duration, n)
	if c.Rate <= 0 {
		return out
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0xa771))
	shape := c.Burstiness
	if shape == 0 {
		shape = 1
	}
	scale := 1 / (c.Rate * shape)
	var t float64
	for i := range out {
		if i > 0 {
			t += gamma(rng, shape) * scale
		}
		out[i] = time.Duration(t * float64(time.Second))
	}
	return out
}

// gamma draws from Gamma(shape, 1) (Marsaglia and Tsang).
func gamma(rng *rand.Rand, shape float64) float64 {
	if shape < 1 {
		return gamma(rng, shape+1) * math.Pow(rng.Float64(), 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// Run runs the load test: the warm-up requests, then the measured ones.
// It returns every measured request in order, and the wall time of the
// measured part. Stopping ctx stops the requests in flight; those that
// had not ended are Interrupted, and what was measured is returned.
// Progress, if set, is told of each finished request.
func Run(ctx context.Context, c Config, progress func(done, failed int)) ([]*Request, time.Duration, error) {
	if err := c.Validate(); err != nil {
		return nil, 0, err
	}
	client := c.Client
	if client == nil {
		n := c.Concurrency
		if n == 0 {
			n = c.Requests
		}
		client = &http.Client{Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
			MaxIdleConns:        n + 4,
			MaxIdleConnsPerHost: n + 4,
			DisableCompression:  true,
		}}
	}
	prompts := Prompts(&c, c.Warmup+c.Requests)
	slots := c.Concurrency
	if slots == 0 {
		slots = c.Requests
	}
	// Warm-up: at most `slots` at once, not measured.
	if c.Warmup > 0 {
		sem := make(chan struct{}, slots)
		var wg sync.WaitGroup
		for i := 0; i < c.Warmup; i++ {
			sem <- struct{}{}
			wg.Add(1)
			go func(p Prompt) {
				defer wg.Done()
				defer func() { <-sem }()
				var r Request
				c.do(ctx, client, p, &r, time.Now())
			}(prompts[i])
		}
		wg.Wait()
	}
	prompts = prompts[c.Warmup:]
	arrivals := Arrivals(&c, c.Requests)
	reqs := make([]*Request, c.Requests)
	sem := make(chan struct{}, slots)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done, failed := 0, 0
	start := time.Now()
	for i := range reqs {
		r := &Request{Index: i, MaxTokens: prompts[i].MaxTokens, PromptLen: prompts[i].Words}
		reqs[i] = r
		if d := time.Until(start.Add(arrivals[i])); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
		arrived := time.Now()
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			r.Outcome, r.Error = Interrupted, "not sent: the run was stopped"
			continue
		}
		wg.Add(1)
		go func(p Prompt) {
			defer wg.Done()
			defer func() { <-sem }()
			sent := time.Now()
			r.Queue = sent.Sub(arrived).Seconds()
			r.Start = sent.Sub(start).Seconds()
			c.do(ctx, client, p, r, sent)
			mu.Lock()
			done++
			if !r.OK() {
				failed++
			}
			if progress != nil {
				progress(done, failed)
			}
			mu.Unlock()
		}(prompts[i])
	}
	wg.Wait()
	d := time.Since(start)
	if c.APIKey != "" {
		// A server may echo the key it refused ("Incorrect API key
		// provided: sk-…"): no request's error holds it.
		sc := redact.NewScrubber(c.APIKey)
		for _, r := range reqs {
			r.Error = sc.String(r.Error)
		}
	}
	return reqs, d, nil
}

// body is the JSON of one request.
func (c *Config) body(p Prompt) ([]byte, string) {
	m := map[string]any{
		"stream":         true,
		"stream_options": map[string]any{"include_usage": true},
		"max_tokens":     p.MaxTokens,
		"temperature":    0,
	}
	if c.Model != "" {
		m["model"] = c.Model
	}
	if c.IgnoreEOS {
		m["ignore_eos"] = true
	}
	path := "/v1/completions"
	if c.Endpoint == Chat {
		path = "/v1/chat/completions"
		m["messages"] = []map[string]string{{"role": "user", "content": p.Text}}
		m["max_completion_tokens"] = p.MaxTokens
	} else {
		m["prompt"] = p.Text
	}
	b, _ := json.Marshal(m)
	return b, path
}

// chunk is one streamed event.
type chunk struct {
	Choices []struct {
		Text  *string `json:"text"`
		Delta *struct {
			Content          *string `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     *int `json:"prompt_tokens"`
		CompletionTokens *int `json:"completion_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// text is what a chunk carries.
func (k *chunk) text() string {
	var s string
	for _, ch := range k.Choices {
		if ch.Text != nil {
			s += *ch.Text
		}
		if ch.Delta != nil {
			if ch.Delta.Content != nil {
				s += *ch.Delta.Content
			}
			if ch.Delta.ReasoningContent != nil {
				s += *ch.Delta.ReasoningContent
			}
		}
	}
	return s
}

// readEvents reads a server-sent event stream, calling handle with the
// data of each event, until handle says it is done or fails or the stream
// ends. It returns handle's error, or the read error (io.EOF is the end).
func readEvents(body io.Reader, handle func(ev []byte) (done bool, err error)) error {
	br := bufio.NewReaderSize(body, 64<<10)
	var data bytes.Buffer
	flush := func() (bool, error) {
		if data.Len() == 0 {
			return false, nil
		}
		done, err := handle(data.Bytes())
		data.Reset()
		return done, err
	}
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// a long line: gather it whole
			rest, err2 := br.ReadBytes('\n')
			line = append(append([]byte(nil), line...), rest...)
			err = err2
		}
		l := bytes.TrimRight(line, "\r\n")
		switch {
		case len(l) == 0 && len(line) > 0:
			if done, herr := flush(); herr != nil || done {
				return herr
			}
		case bytes.HasPrefix(l, []byte("data:")):
			v := bytes.TrimPrefix(bytes.TrimPrefix(l, []byte("data:")), []byte(" "))
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(v)
		}
		if err == io.EOF {
			_, herr := flush()
			return herr
		}
		if err != nil {
			return err
		}
	}
}

// sendRetrying sends the request of prompt p, again (at most maxRetries
// times, counted in r) while the connection was closed before the request
// was written.
func (c *Config) sendRetrying(ctx context.Context, client *http.Client, p Prompt, r *Request) (*http.Response, error) {
	body, path := c.body(p)
	for {
		resp, unsent, err := c.send(ctx, client, path, body)
		if err == nil || !unsent || r.Retries >= maxRetries || ctx.Err() != nil {
			return resp, err
		}
		// The server closed a kept-alive connection as the request was
		// put on it: it never read the request, and Go does not send a
		// POST again itself. Send it on another connection.
		r.Retries++
	}
}

// do sends one request and measures it into r.
func (c *Config) do(ctx context.Context, client *http.Client, p Prompt, r *Request, sent time.Time) {
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	fail := func(outcome string, err error) {
		r.Outcome = outcome
		if err != nil {
			r.Error = err.Error()
		}
		if ctx.Err() != nil && outcome != OK {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				r.Outcome, r.Error = Timeout, fmt.Sprintf("no complete answer within %s", c.Timeout)
			} else {
				r.Outcome, r.Error = Interrupted, "the run was stopped"
			}
		}
	}
	resp, err := c.sendRetrying(ctx, client, p, r)
	if err != nil {
		fail(Connection, errors.Unwrap(err))
		if r.Error == "" && err != nil {
			r.Error = err.Error()
		}
		return
	}
	defer resp.Body.Close()
	r.Status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		fail(HTTPStatus, fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(msg))))
		return
	}
	var first, last time.Time
	var completion, prompt *int
	textChunks := 0
	sawDone := false
	handle := func(ev []byte) error {
		now := time.Now()
		if bytes.Equal(bytes.TrimSpace(ev), []byte("[DONE]")) {
			sawDone = true
			return nil
		}
		var k chunk
		if err := json.Unmarshal(ev, &k); err != nil {
			return fmt.Errorf("malformed event %q: %v", clip(ev), err)
		}
		if len(k.Error) > 0 && string(k.Error) != "null" {
			return fmt.Errorf("error event: %s", clip(k.Error))
		}
		if k.Usage != nil {
			if k.Usage.CompletionTokens != nil {
				completion = k.Usage.CompletionTokens
			}
			if k.Usage.PromptTokens != nil {
				prompt = k.Usage.PromptTokens
			}
		}
		// A token is any event whose choices list is not empty, whatever
		// its text, as vLLM's bench serve counts them
		// (vllm/benchmarks/lib/endpoint_request_func.py,
		// async_request_openai_completions and
		// async_request_openai_chat_completions: `if choices :=
		// data.get("choices")`): a chat's role-only first delta and a
		// chunk with empty text (a special token) are tokens there, so
		// TTFT is the first of them and each later one adds an ITL gap; a
		// usage chunk with empty choices is not. Only the count of output
		// tokens without the server's usage is of text chunks.
		if len(k.Choices) == 0 {
			return nil
		}
		if k.text() != "" {
			textChunks++
		}
		r.Chunks++
		if first.IsZero() {
			first = now
			r.TTFT = now.Sub(sent).Seconds()
		} else {
			r.ITL = append(r.ITL, now.Sub(last).Seconds())
		}
		last = now
		return nil
	}
	streamErr := readEvents(resp.Body, func(ev []byte) (bool, error) {
		err := handle(ev)
		return sawDone, err
	})
	if !first.IsZero() {
		r.Latency = last.Sub(sent).Seconds()
	}
	r.OutputLen = textChunks
	if completion != nil {
		r.OutputLen = *completion
		r.Usage = true
	}
	if prompt != nil {
		r.PromptLen = *prompt
	}
	switch {
	case streamErr != nil && ctx.Err() == nil && !isNetErr(streamErr):
		fail(Malformed, streamErr)
	case streamErr != nil:
		fail(Connection, fmt.Errorf("the stream broke: %w", streamErr))
	case !sawDone:
		fail(NoDone, errors.New("the stream ended without [DONE]"))
	case first.IsZero():
		fail(NoToken, errors.New("the stream carried no token: no event with choices"))
	default:
		r.Outcome = OK
	}
}

// maxRetries bounds how often one request is sent again after the server
// closed its connection before reading it.
const maxRetries = 3

// send posts one request. unsent is true when it failed on a connection
// the server had closed before the request reached it: a kept-alive
// connection that failed before a byte of answer came, either before the
// request was written or with "server closed idle connection" (the server
// closed it as idle, so it read nothing). Such a request was never
// served, and sending it again is safe; a fresh connection that fails is
// a real failure.
func (c *Config) send(ctx context.Context, client *http.Client, path string, body []byte) (resp *http.Response, unsent bool, err error) {
	var reused, wrote, answered bool
	trace := &httptrace.ClientTrace{
		GotConn:              func(i httptrace.GotConnInfo) { reused = i.Reused },
		WroteRequest:         func(i httptrace.WroteRequestInfo) { wrote = i.Err == nil },
		GotFirstResponseByte: func() { answered = true },
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodPost, strings.TrimRight(c.URL, "/")+path, bytes.NewReader(body))
	if err != nil {
		return nil, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	resp, err = client.Do(req)
	if err == nil {
		return resp, false, nil
	}
	unsent = reused && !answered && (!wrote || strings.Contains(err.Error(), "server closed idle connection"))
	return nil, unsent, err
}

func isNetErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, syscall.ECONNRESET)
}

func clip(b []byte) string {
	if len(b) > 120 {
		return string(b[:120]) + "…"
	}
	return string(b)
}

// WaitHealthy polls url until it answers 200, ctx ends or limit passes.
func WaitHealthy(ctx context.Context, url string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	client := &http.Client{Timeout: 5 * time.Second}
	var last string
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("checking the server's health: %w", err)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted while waiting for %s", url)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the server was not healthy within %s (%s answered %s)", limit, url, last)
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Describe asks the server what it is: the JSON bodies of /v1/models,
// /props (llama.cpp) and /version (vLLM), by path, for those that answer
// 200 with JSON. The API key is sent, never kept (a body that echoes it
// has it redacted).
func Describe(ctx context.Context, base, apiKey string) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	client := &http.Client{Timeout: 5 * time.Second}
	for _, p := range []string{"/v1/models", "/props", "/version"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+p, nil)
		if err != nil {
			continue
		}
		if apiKey != "" {
			req.Header.Set("Authorization", "Bearer "+apiKey)
		}
		resp, err := client.Do(req)
		if err != nil {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if apiKey != "" {
			b = redact.NewScrubber(apiKey).Bytes(b)
		}
		if err == nil && resp.StatusCode == http.StatusOK && json.Valid(b) {
			out[p] = json.RawMessage(b)
		}
	}
	return out
}

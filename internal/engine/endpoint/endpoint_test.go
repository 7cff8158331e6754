package endpoint_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/engine/endpoint"
	"github.com/rigorbench/rigor/internal/engine/enginetest"
	"github.com/rigorbench/rigor/internal/engine/serve"
	"github.com/rigorbench/rigor/internal/loadgen"
	"github.com/rigorbench/rigor/internal/lock"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/spec"
)

const point = `
chat: schema.#Experiment & {
	model: name: "qwen3-8b"
	engine: {family: "endpoint", source: url: "http://127.0.0.1:31795"}
	serve: {endpoint: "chat", apiKeyEnv: "RIGOR_TEST_EP_KEY"}
	bench: {requests: 4, concurrency: 2, inputLen: 8, outputLen: 4}
}
`

const key = "sk-endpoint-test-0123456789abcdef"

// server is an OpenAI-compatible streaming server that wants key, reports
// itself as llama-server does (/props with a long chat template), and
// counts the requests it gets.
func server(t *testing.T, hits *atomic.Int64) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/props" {
			json.NewEncoder(w).Encode(map[string]any{"build_info": "b6000-0123abc", "total_slots": 2,
				"chat_template": strings.Repeat("{% x %}", 200), "api_key": "hunter2hunter2hunter2"})
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+key {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s","code":"invalid_api_key"}}`, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
			return
		}
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"qwen3-8b","object":"model","owned_by":"llamacpp"}]}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < 4; i++ {
			time.Sleep(time.Millisecond)
			fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":\" t%d\"}}]}\n\n", i)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":4}}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// measured runs the load generator against srv with apiKey, as `rigor
// loadgen` does, and returns its outputs as a run collects them.
func measured(t *testing.T, srv *httptest.Server, apiKey string) map[string][]byte {
	t.Helper()
	c := loadgen.Config{URL: srv.URL, Endpoint: loadgen.Chat, Model: "qwen3-8b", Requests: 4, Concurrency: 2, InputLen: 8, OutputLen: 4, APIKey: apiKey}
	reqs, d, err := loadgen.Run(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := loadgen.Summarize(&c, reqs, d)
	res.Server = loadgen.Describe(context.Background(), srv.URL, apiKey)
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var raw bytes.Buffer
	if err := loadgen.WriteRaw(&raw, reqs); err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{serve.ResultFile: b, serve.RawFile: raw.Bytes()}
}

func withURL(t *testing.T, u string) *spec.Point {
	t.Helper()
	return enginetest.LoadPoints(t, strings.Replace(point, "http://127.0.0.1:31795", u, 1))["c/chat"]
}

// TestConformance runs the engine suite on the endpoint family as
// engine/all registers it (serve mode's wrapper): plans, verdicts on the
// load generator's real outputs, and Prepare, which starts nothing.
func TestConformance(t *testing.T) {
	var hits atomic.Int64
	srv := server(t, &hits)
	t.Setenv("RIGOR_TEST_EP_KEY", key)
	outs := measured(t, srv, key)
	enginetest.Run(t, enginetest.Case{
		Engine:           serve.Wrap(endpoint.Engine{}),
		Capabilities:     []engine.Capability{engine.CapServer, engine.CapQualifier},
		Point:            withURL(t, srv.URL),
		Unpinned:         true,
		Success:          engine.Finished{Outputs: outs},
		CrashAfterOutput: engine.Finished{Outputs: outs, ExitCode: 139, Signaled: true, Stderr: []byte("SIGSEGV\n")},
		Prepare: func(t *testing.T) engine.Request {
			return engine.Request{Experiment: withURL(t, srv.URL).Experiment, Lock: &lock.Entry{}, Getenv: os.LookupEnv}
		},
	})
}

// TestPrepare: the key's variable must be set (the error names it, never
// a value); an unreachable server is an error before anything runs;
// offline, nothing is contacted.
func TestPrepare(t *testing.T) {
	var hits atomic.Int64
	srv := server(t, &hits)
	e := serve.Wrap(endpoint.Engine{})
	req := engine.Request{Experiment: withURL(t, srv.URL).Experiment, Lock: &lock.Entry{}, Getenv: os.LookupEnv}
	t.Setenv("RIGOR_TEST_EP_KEY", "")
	_, err := e.Prepare(context.Background(), req)
	if err == nil || !strings.Contains(err.Error(), "RIGOR_TEST_EP_KEY") {
		t.Errorf("Prepare without the key: %v, want an error naming RIGOR_TEST_EP_KEY", err)
	}
	t.Setenv("RIGOR_TEST_EP_KEY", key)
	p, err := e.Prepare(context.Background(), req)
	if err != nil || p.Engine.Unpinned == "" || p.Engine.Source != srv.URL {
		t.Fatalf("Prepare: %+v, %v", p, err)
	}
	before := hits.Load()
	off := req
	off.Offline = true
	if _, err := e.Prepare(context.Background(), off); err != nil {
		t.Fatal(err)
	}
	if hits.Load() != before {
		t.Error("Prepare offline contacted the endpoint")
	}

	gone := httptest.NewServer(http.NotFoundHandler())
	u := gone.URL
	gone.Close()
	_, err = e.Prepare(context.Background(), engine.Request{Experiment: withURL(t, u).Experiment, Lock: &lock.Entry{}, Getenv: os.LookupEnv})
	var he interface{ Hint() string }
	if err == nil || !strings.Contains(err.Error(), "unreachable") || !strings.Contains(err.Error(), u) {
		t.Fatalf("Prepare of a closed server: %v, want unreachable naming %s", err, u)
	}
	if !asHint(err, &he) || he.Hint() == "" || strings.Contains(err.Error()+he.Hint(), key) {
		t.Errorf("Prepare of a closed server: %v: want a hint and no key", err)
	}
}

func asHint(err error, h *interface{ Hint() string }) bool {
	x, ok := err.(interface{ Hint() string })
	*h = x
	return ok
}

// TestJudge_reported: the record keeps what the server reported of
// itself, redacted and cut, and names its build; a refused key is
// explained by the variable's name, and the key appears nowhere.
func TestJudge_reported(t *testing.T) {
	var hits atomic.Int64
	srv := server(t, &hits)
	p := withURL(t, srv.URL)
	e := serve.Wrap(endpoint.Engine{})
	v := engine.Conclude(e, p, engine.Finished{Outputs: measured(t, srv, key)})
	if v.Status != results.StatusOK {
		t.Fatalf("status %s: %s", v.Status, v.Error)
	}
	if v.Build == nil || v.Build.Flavour != "endpoint (build b6000-0123abc)" {
		t.Fatalf("build %+v, want the flavour naming the reported build", v.Build)
	}
	props := string(v.Build.Reported["/props"])
	if !strings.Contains(props, `"total_slots":2`) || strings.Contains(props, "{% x %}") || strings.Contains(props, "hunter2") {
		t.Errorf("/props kept as %s: want the facts, without the long template or the secret", props)
	}
	if !strings.Contains(string(v.Build.Reported["/v1/models"]), "qwen3-8b") {
		t.Errorf("/v1/models kept as %s", v.Build.Reported["/v1/models"])
	}

	wrong := "sk-wrong-key-abcdef0123456789"
	v = engine.Conclude(e, p, engine.Finished{Outputs: measured(t, srv, wrong)})
	if v.Status != results.StatusFailed || !strings.HasPrefix(v.Error, "the endpoint refused the API key in RIGOR_TEST_EP_KEY (4 requests answered 401 or 403)") {
		t.Errorf("refused: %s %q", v.Status, v.Error)
	}
	if strings.Contains(v.Error, wrong) {
		t.Errorf("the refused key is in the verdict: %s", v.Error)
	}
}

// TestPrepare_warnings: a model the endpoint does not list is a warning
// (llama-server answers for any name), and a certificate this machine does
// not trust is explained.
func TestPrepare_warnings(t *testing.T) {
	var hits atomic.Int64
	srv := server(t, &hits)
	t.Setenv("RIGOR_TEST_EP_KEY", key)
	p := withURL(t, srv.URL)
	x := *p.Experiment
	x.Spec.Model.Name = "llama-70b"
	got, err := serve.Wrap(endpoint.Engine{}).Prepare(context.Background(), engine.Request{Experiment: &x, Lock: &lock.Entry{}, Getenv: os.LookupEnv})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "lists qwen3-8b, not llama-70b (model.name)") {
		t.Errorf("warnings %q, want the model the endpoint does not list", got.Warnings)
	}

	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler())
	defer tlsSrv.Close()
	_, err = serve.Wrap(endpoint.Engine{}).Prepare(context.Background(), engine.Request{Experiment: withURL(t, tlsSrv.URL).Experiment, Lock: &lock.Entry{}, Getenv: os.LookupEnv})
	h, ok := err.(interface{ Hint() string })
	if !ok || !strings.Contains(h.Hint(), "SSL_CERT_FILE") {
		t.Errorf("an untrusted certificate: %v, want a hint naming SSL_CERT_FILE", err)
	}
}

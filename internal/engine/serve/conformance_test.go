package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/engine/endpoint"
	"github.com/rigorbench/rigor/internal/engine/enginetest"
	"github.com/rigorbench/rigor/internal/engine/llamacpp"
	"github.com/rigorbench/rigor/internal/engine/llamacpp/testengine"
	"github.com/rigorbench/rigor/internal/engine/serve"
	"github.com/rigorbench/rigor/internal/engine/vllm"
	"github.com/rigorbench/rigor/internal/loadgen"
	"github.com/rigorbench/rigor/internal/lock"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/spec"
)

const servePoint = `
plain: schema.#Experiment & {
	model: path: "/models/tiny.gguf"
	engine: {family: "llama.cpp", source: {git: "https://example.invalid/engine.git", ref: "v2"}}
	serve: port: 31790
	flags: {c: 1024, np: 2}
	bench: {requests: 6, concurrency: 2, inputLen: 8, outputLen: 4, slo: ttftMs: 1000}
}
`

// measured runs the load generator against a small streaming server and
// returns its outputs as a run collects them: the result and the raw
// requests, real bytes of the real formats.
func measured(t *testing.T) map[string][]byte {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < 4; i++ {
			time.Sleep(2 * time.Millisecond)
			fmt.Fprintf(w, "data: {\"choices\":[{\"text\":\" t%d\"}]}\n\n", i)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":4}}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	c := loadgen.Config{URL: srv.URL, Endpoint: loadgen.Completions, Requests: 6, Concurrency: 2, InputLen: 8, OutputLen: 4,
		SLO: loadgen.SLO{TTFTMs: 1000}}
	reqs, d, err := loadgen.Run(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := json.Marshal(loadgen.Summarize(&c, reqs, d))
	if err != nil {
		t.Fatal(err)
	}
	var raw bytes.Buffer
	if err := loadgen.WriteRaw(&raw, reqs); err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{serve.ResultFile: res, serve.RawFile: raw.Bytes()}
}

// TestConformance runs the engine suite on llama.cpp's serve mode: the
// load generator's real outputs; the server's own rejections and load
// failures as a run reports a worker that stopped (the end of its log, as
// the test engine's llama-server writes it); Prepare builds the test
// engine, llama-server included, with real cmake.
func TestConformance(t *testing.T) {
	pts := enginetest.LoadPoints(t, servePoint)
	p := pts["c/plain"]
	outs := measured(t)
	crash := engine.Finished{Outputs: outs, ExitCode: 139, Signaled: true, Stderr: []byte("SIGSEGV: segmentation violation\n")}
	rejected := engine.Finished{ExitCode: -1, Stopped: engine.StoppedWorker,
		StopErr: errors.New("worker llama-server exited before accepting connections on 127.0.0.1:31790: exit status 1; its stderr ends: error: invalid argument: --no-such-flag")}
	noload := engine.Finished{ExitCode: -1, Stopped: engine.StoppedWorker,
		StopErr: errors.New("worker llama-server exited before accepting connections on 127.0.0.1:31790: exit status 1; its stderr ends: llama_model_load: error loading model: failed to open /models/tiny.gguf | srv    load_model: failed to load model, '/models/tiny.gguf'")}
	e := serve.Wrap(llamacpp.Engine{Fork: spec.FamilyLlamaCpp})
	enginetest.Run(t, enginetest.Case{
		Engine:           e,
		Capabilities:     []engine.Capability{engine.CapSweeper, engine.CapLocator, engine.CapBuilder, engine.CapServer, engine.CapQualifier},
		Point:            p,
		Success:          engine.Finished{Outputs: outs},
		CrashAfterOutput: crash,
		RejectedArgs:     rejected,
		FailedLoad:       noload,
		Prepare: func(t *testing.T) engine.Request {
			if _, err := exec.LookPath("cmake"); err != nil {
				enginetest.NeedTool(t, "cmake")
			}
			dir := filepath.Join(t.TempDir(), "engine")
			commits, err := testengine.Write(dir, testengine.Options{})
			if err != nil {
				t.Fatal(err)
			}
			pts := enginetest.LoadPoints(t, strings.Replace(servePoint, "https://example.invalid/engine.git", dir, 1))
			x := pts["c/plain"].Experiment
			entry := &lock.Entry{Engine: lock.EngineLock{Family: spec.FamilyLlamaCpp, Commit: commits[testengine.V2]}}
			return engine.Request{Experiment: x, Lock: entry, Cache: filepath.Join(t.TempDir(), "cache"), Jobs: 2}
		},
	})
}

// TestJudge_Failures: requests that failed make the run failed, say how
// many of which outcome, and keep the measurements of the others.
func TestJudge_Failures(t *testing.T) {
	reqs := []*loadgen.Request{
		{Outcome: loadgen.OK, TTFT: 0.01, Latency: 0.05, OutputLen: 5, PromptLen: 3, ITL: []float64{0.01, 0.01, 0.01, 0.01}, Usage: true},
		{Outcome: loadgen.HTTPStatus, Error: "HTTP 429: busy"},
		{Outcome: loadgen.Connection, Error: "connection refused"},
		{Outcome: loadgen.HTTPStatus, Error: "HTTP 429: busy"},
	}
	c := loadgen.Config{Endpoint: loadgen.Completions, Requests: 4}
	res, _ := json.Marshal(loadgen.Summarize(&c, reqs, time.Second))
	var raw bytes.Buffer
	loadgen.WriteRaw(&raw, reqs)
	v := serve.Judge(engine.Finished{Outputs: map[string][]byte{serve.ResultFile: res, serve.RawFile: raw.Bytes()}})
	if v.Status != results.StatusFailed {
		t.Errorf("status %s, want failed", v.Status)
	}
	want := "3 of 4 requests failed: 2 http-status (HTTP 429: busy), 1 connection (connection refused)"
	if v.Error != want {
		t.Errorf("error %q, want %q", v.Error, want)
	}
	var ttft *results.Metric
	for i := range v.Metrics {
		if v.Metrics[i].Name == "ttftMs" {
			ttft = &v.Metrics[i]
		}
	}
	if ttft == nil || len(ttft.Samples) != 1 || ttft.Samples[0] != 10 {
		t.Errorf("ttftMs %+v, want the completed request's 10 ms kept as its sample", ttft)
	}
}

// TestJudge_Retried: a request sent again after the server closed its
// idle connection is not a failure; the run stays ok and the record says
// how many were sent again.
func TestJudge_Retried(t *testing.T) {
	ok := func(retries int) *loadgen.Request {
		return &loadgen.Request{Outcome: loadgen.OK, TTFT: 0.01, Latency: 0.05, OutputLen: 5, PromptLen: 3, ITL: []float64{0.01, 0.01, 0.01, 0.01}, Usage: true, Retries: retries}
	}
	reqs := []*loadgen.Request{ok(0), ok(1), ok(0)}
	c := loadgen.Config{Endpoint: loadgen.Completions, Requests: 3}
	res, _ := json.Marshal(loadgen.Summarize(&c, reqs, time.Second))
	v := serve.Judge(engine.Finished{Outputs: map[string][]byte{serve.ResultFile: res}})
	if v.Status != results.StatusOK {
		t.Errorf("status %s (%s), want ok", v.Status, v.Error)
	}
	want := "1 of 3 requests was sent again: the server closed its connection before reading it (an idle keep-alive connection), so it was never served and is not counted as failed"
	if !slices.Contains(v.Warnings, want) {
		t.Errorf("warnings %q, want %q", v.Warnings, want)
	}
}

// TestPlan_BenchEngine: experiments without serve are the family's own.
func TestPlan_BenchEngine(t *testing.T) {
	pts := enginetest.LoadPoints(t, `
plain: schema.#Experiment & {
	model: path: "/models/tiny.gguf"
	engine: {family: "llama.cpp", source: {git: "https://example.invalid/engine.git", ref: "v2"}}
	bench: {p: 32, n: 16, r: 2}
}
`)
	e := serve.Wrap(llamacpp.Engine{Fork: spec.FamilyLlamaCpp})
	in := engine.Inputs{BinDir: "/e", Model: "/m.gguf", RunDir: "/r"}
	got, err := e.Plan(pts["c/plain"], in)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := llamacpp.Engine{Fork: spec.FamilyLlamaCpp}.Plan(pts["c/plain"], in)
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(want)
	if !bytes.Equal(a, b) {
		t.Errorf("a bench experiment's plan changed:\n%s\n%s", a, b)
	}
}

// TestConformance_vllm runs the suite on vLLM's serve mode: the same load
// generator outputs, `vllm serve`'s own rejections and load failures as a
// run reports a stopped worker, and Prepare describing the stand-in vllm
// built as an executable.
func TestConformance_vllm(t *testing.T) {
	pts := enginetest.LoadPoints(t, `
plain: schema.#Experiment & {
	model: path: "/models/m"
	engine: {family: "vllm", source: path: "vllm"}
	serve: port: 31791
	flags: maxNumSeqs: 4
	bench: {requests: 6, concurrency: 2, inputLen: 8, outputLen: 4}
}
`)
	p := pts["c/plain"]
	outs := measured(t)
	e := serve.Wrap(vllm.Engine{})
	enginetest.Run(t, enginetest.Case{
		Engine:           e,
		Capabilities:     []engine.Capability{engine.CapServer, engine.CapQualifier},
		Point:            p,
		Success:          engine.Finished{Outputs: outs},
		CrashAfterOutput: engine.Finished{Outputs: outs, ExitCode: 137, Signaled: true},
		RejectedArgs: engine.Finished{ExitCode: -1, Stopped: engine.StoppedWorker,
			StopErr: errors.New("worker vllm-serve exited during the run: exit status 2; its stderr ends: usage: vllm serve [model_tag] [options] | vllm: error: unrecognized arguments: --no-such-flag")},
		FailedLoad: engine.Finished{ExitCode: -1, Stopped: engine.StoppedWorker,
			StopErr: errors.New("worker vllm-serve exited during the run: exit status 1; its stderr ends: OSError: /models/m does not appear to have a file named config.json. | RuntimeError: Engine core initialization failed. See root cause above. Failed to load model")},
		Prepare: func(t *testing.T) engine.Request {
			bin := t.TempDir()
			cmd := exec.Command("go", "build", "-o", filepath.Join(bin, "vllm"), "../vllm/standin/vllm")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("building the stand-in: %v\n%s", err, out)
			}
			t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			return engine.Request{Experiment: p.Experiment, Lock: &lock.Entry{}, Cache: t.TempDir()}
		},
	})
}

// TestWrap_capabilities: engine.As finds exactly the family's
// capabilities through serve mode's wrapper, and the family's Sweeper
// never combines serve points (each is a server run of its own).
func TestWrap_capabilities(t *testing.T) {
	for _, c := range []struct {
		bench engine.Engine
		want  []engine.Capability
	}{
		{llamacpp.Engine{Fork: spec.FamilyLlamaCpp}, []engine.Capability{engine.CapSweeper, engine.CapLocator, engine.CapBuilder, engine.CapServer, engine.CapQualifier}},
		{vllm.Engine{}, []engine.Capability{engine.CapServer, engine.CapQualifier}},
		{endpoint.Engine{}, []engine.Capability{engine.CapServer, engine.CapQualifier}},
	} {
		e := serve.Wrap(c.bench)
		if got := engine.Capabilities(e); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: capabilities %v, want %v", c.bench.Family(), got, c.want)
		}
		if e.Family() != c.bench.Family() {
			t.Errorf("family %s, want %s", e.Family(), c.bench.Family())
		}
	}
	// Bench points that llama-bench runs as one process, made serve
	// points: they must not combine.
	pts := enginetest.LoadPoints(t, `
swept: schema.#Experiment & {
	model: path: "/models/tiny.gguf"
	engine: {family: "llama.cpp", source: path: "/opt/llama"}
	bench: {p: 32, n: 16}
	sweep: flags: ub: [16, 32]
}
`)
	sw, ok := engine.As[engine.Sweeper](serve.Wrap(llamacpp.Engine{Fork: spec.FamilyLlamaCpp}))
	if !ok {
		t.Fatal("llama.cpp is no Sweeper")
	}
	var points []*spec.Point
	for _, id := range []string{"c/swept[ub=16]", "c/swept[ub=32]"} {
		if pts[id] == nil {
			t.Fatalf("no point %s", id)
		}
		points = append(points, pts[id])
	}
	if _, ok := sw.Combine(points); !ok {
		t.Fatal("the bench points do not combine: the test proves nothing")
	}
	for i, p := range points {
		sp := *p
		sp.Spec.Serve = map[string]any{"port": 31792}
		points[i] = &sp
	}
	if c, ok := sw.Combine(points); ok {
		t.Errorf("serve points combined into %s", c.ID)
	}
}

// TestPlan_apiKeyEnv: a server rigor starts with a key (vllm serve reads
// VLLM_API_KEY) gets it from passEnv; the load generator is given the
// variable's name and receives its value as a secret, never in argv or
// the recorded env.
func TestPlan_apiKeyEnv(t *testing.T) {
	pts := enginetest.LoadPoints(t, `
keyed: schema.#Experiment & {
	model: path: "/models/m"
	engine: {family: "vllm", source: path: "vllm"}
	serve: {port: 31772, apiKeyEnv: "VLLM_API_KEY"}
	passEnv: ["VLLM_API_KEY"]
	bench: {requests: 4, inputLen: 8, outputLen: 4}
}
`)
	plan, err := serve.Wrap(vllm.Engine{}).Plan(pts["c/keyed"], engine.Inputs{Model: "/models/m", RunDir: "/tmp/run"})
	if err != nil {
		t.Fatal(err)
	}
	lg := plan.Processes[len(plan.Processes)-1]
	if !strings.Contains(strings.Join(lg.Argv, " "), "--api-key-env VLLM_API_KEY") || len(lg.SecretEnv) != 1 || lg.SecretEnv[0] != "VLLM_API_KEY" {
		t.Errorf("load generator %q, secret env %v: want the variable's name and its value as a secret", lg.Argv, lg.SecretEnv)
	}
	if !strings.Contains(strings.Join(lg.Argv, " "), "--ready-timeout") || strings.Contains(strings.Join(lg.Argv, " "), "--health=") {
		t.Errorf("load generator %q: a server rigor starts is waited for on /health", lg.Argv)
	}
}

// TestJudge_startedServerBuild: a server rigor started (llama-server built
// from the lock) has its record's engine.build from what it said of itself
// (/props's build_info, /v1/models), as a llama-bench run has llama-bench's
// report of its build; issue 25 found engine.build null for llama-server
// runs.
func TestJudge_startedServerBuild(t *testing.T) {
	pts := enginetest.LoadPoints(t, servePoint)
	p := pts["c/plain"]
	var res map[string]json.RawMessage
	if err := json.Unmarshal(measured(t)[serve.ResultFile], &res); err != nil {
		t.Fatal(err)
	}
	res["server"] = json.RawMessage(`{"/props":{"build_info":"b7-abc1234","total_slots":2},"/v1/models":{"data":[{"id":"tiny.gguf","owned_by":"llamacpp"}]}}`)
	data, _ := json.Marshal(res)
	e := serve.Wrap(llamacpp.Engine{Fork: spec.FamilyLlamaCpp})
	v := e.Judge(p, engine.Finished{Outputs: map[string][]byte{serve.ResultFile: data}})
	if v.Status != results.StatusOK {
		t.Fatalf("status %s: %s", v.Status, v.Error)
	}
	if v.Build == nil {
		t.Fatal("no engine.build for a server rigor started")
	}
	if v.Build.Flavour != "server (build b7-abc1234)" || !strings.Contains(string(v.Build.Reported["/props"]), `"b7-abc1234"`) || v.Build.Reported["/v1/models"] == nil {
		t.Errorf("build %+v: want flavour %q and what the server reported", v.Build, "server (build b7-abc1234)")
	}
	// A server that said nothing of itself leaves the build to the
	// earlier report of the same binaries (run's fallback).
	if v := e.Judge(p, engine.Finished{Outputs: measured(t)}); v.Build != nil {
		t.Errorf("build %+v from a server that reported nothing", v.Build)
	}
}

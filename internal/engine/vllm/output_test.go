package vllm

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rigorbench/rigor/internal/engine/vllm/standin"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/spec"
)

func find(ms []results.Metric, name string) (results.Metric, bool) {
	for _, m := range ms {
		if m.Name == name {
			return m, true
		}
	}
	return results.Metric{}, false
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// seed004JSON is what vllm bench throughput writes for seed 004's run
// (elapsed time chosen so that the totals match the seed's 103.734136 tok/s).
const seed004JSON = `{
    "elapsed_time": 7.403541,
    "num_requests": 1,
    "total_num_tokens": 768,
    "requests_per_second": 0.135070,
    "tokens_per_second": 103.734136
}`

func TestParseThroughput(t *testing.T) {
	elapsed := 7.403541
	for _, tc := range []struct {
		name, json, stdout string
		inputLen           int
		wantOut            float64
		wantDerived        string // substring; "" means not derived
		noOut              bool
	}{
		{"counts", seed004JSON, "", 512, 256 / elapsed, "num_requests 1 × input length 512", false},
		{"stdout total line", seed004JSON, "Throughput: 0.14 requests/s, 103.73 total tokens/s, 34.58 output tokens/s\nTotal num prompt tokens:  512\nTotal num output tokens:  256\n", 0, 256 / elapsed, "Total num output tokens: 256", false},
		{"stdout rate line", seed004JSON, "Throughput: 0.14 requests/s, 103.73 total tokens/s, 34.58 output tokens/s\n", 0, 34.58, "two decimals", false},
		{"file has output rate", `{"elapsed_time": 2, "num_requests": 1, "total_num_tokens": 30, "requests_per_second": 0.5, "tokens_per_second": "15.00", "output_tokens_per_second": "5.00"}`, "", 0, 5, "", false},
		{"nothing to derive from", seed004JSON, "", 0, 0, "", true},
	} {
		ms, err := ParseThroughput([]byte(tc.json), []byte(tc.stdout), tc.inputLen)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if m, ok := find(ms, "tokSTotal"); !ok || m.Value <= 0 || len(m.Samples) != 1 {
			t.Errorf("%s: tokSTotal = %+v, want a positive value with one sample", tc.name, m)
		}
		m, ok := find(ms, "tokSOut")
		if tc.noOut {
			if ok {
				t.Errorf("%s: got tokSOut %v, want none (no way to derive it)", tc.name, m.Value)
			}
			continue
		}
		if !ok || !near(m.Value, tc.wantOut) {
			t.Errorf("%s: got tokSOut %v, want %v", tc.name, m.Value, tc.wantOut)
		}
		if tc.wantDerived == "" && m.Derived != "" || tc.wantDerived != "" && !strings.Contains(m.Derived, tc.wantDerived) {
			t.Errorf("%s: got Derived %q, want it to say %q", tc.name, m.Derived, tc.wantDerived)
		}
	}
	// seed 004's figure comes out of the counts
	ms, _ := ParseThroughput([]byte(seed004JSON), nil, 512)
	if m, _ := find(ms, "tokSOut"); math.Abs(m.Value-34.578045) > 1e-5 {
		t.Errorf("seed 004 counts: got tokSOut %v, want 34.578045", m.Value)
	}
}

func TestParseLatency(t *testing.T) {
	in := `{"avg_latency": 1.5, "std_latency": 0.1, "latencies": [1.4, 1.5, 1.6], "percentiles": {"10": 1.42, "50": 1.5, "99": 1.598}}`
	ms, err := ParseLatency([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	l, _ := find(ms, "latencyMs")
	if l.Value != 1500 || !near(l.Stddev, 100) || len(l.Samples) != 3 || !near(l.Samples[2], 1600) || l.Direction != results.LowerIsBetter {
		t.Errorf("latencyMs of %s = %+v, want 1500 ms ± 100 with samples 1400, 1500, 1600", in, l)
	}
	if p, ok := find(ms, "latencyP99Ms"); !ok || !near(p.Value, 1598) {
		t.Errorf("latencyP99Ms of %s = %+v, want 1598", in, p)
	}
}

func TestParseServe(t *testing.T) {
	// an old version's file: no failed, max_*, rtfx; two requests saved
	// with --save-detailed
	in := `{"date":"20250101-000000","backend":"vllm","model_id":"m","num_prompts":2,"request_rate":"inf",
"duration":2.0,"completed":2,"total_input_tokens":20,"total_output_tokens":6,"request_throughput":1.0,
"output_throughput":3.0,"total_token_throughput":13.0,
"mean_ttft_ms":100,"median_ttft_ms":100,"std_ttft_ms":10,"p99_ttft_ms":109.8,
"mean_tpot_ms":50,"median_tpot_ms":50,"std_tpot_ms":0,"p99_tpot_ms":50,"p99.9_itl_ms":51,
"mean_itl_ms":50,"median_itl_ms":50,"std_itl_ms":1,"p99_itl_ms":50.9,
"input_lens":[10,10],"output_lens":[3,3],"ttfts":[0.09,0.11],"itls":[[0.05,0.05],[0.049,0.051]],"latencies":[0.19,0.21]}`
	ms, warns, err := ParseServe([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 0 {
		t.Errorf("warnings %v, want none", warns)
	}
	check := func(name string, value float64, n int) {
		t.Helper()
		m, ok := find(ms, name)
		if !ok || !near(m.Value, value) || len(m.Samples) != n {
			t.Errorf("%s = %+v, want value %v with %d samples", name, m, value, n)
		}
	}
	check("tokSOut", 3, 1)
	check("tokSTotal", 13, 1)
	check("requestThroughput", 1, 1)
	check("ttftMs", 100, 2)
	check("itlMs", 50, 4)
	check("e2elMs", 200, 2) // no mean saved: the mean of the latencies
	check("ttftMsMedian", 100, 0)
	check("ttftMsP99", 109.8, 0)
	check("itlMsP99.9", 51, 0)
	tp, _ := find(ms, "tpotMs")
	if len(tp.Samples) != 2 || !near(tp.Samples[0], 50) || !strings.Contains(tp.Derived, "output_len − 1") {
		t.Errorf("tpotMs = %+v, want per-request samples (0.19-0.09)/2 = 50 ms, derived", tp)
	}
	_, warns, _ = ParseServe([]byte(`{"output_throughput": 1, "completed": 8, "failed": 2}`))
	if len(warns) != 1 || !strings.Contains(warns[0], "2 of 10 requests failed") {
		t.Errorf("warnings %v, want one about 2 of 10 failed requests", warns)
	}
}

func TestParse_badFiles(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want error
		msg  string
	}{
		{"", ErrEmptyResult, "empty"},
		{"  \n", ErrEmptyResult, "empty"},
		{`{"elapsed_time": 7.4, "num_req`, ErrTruncatedResult, "truncated"},
		{`[1, 2]`, nil, "not a JSON object"},
		{`{"a": }`, nil, "not valid JSON"},
		{`{"a": 1} {"b": 2}`, nil, "data after"},
	} {
		_, err := ParseLatency([]byte(tc.in))
		if err == nil || tc.want != nil && !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("ParseLatency(%q): got %v, want an error saying %q", tc.in, err, tc.msg)
		}
	}
}

// standinRun runs the stand-in vllm in a temporary directory and returns
// what a run would collect.
func standinRun(t *testing.T, mode string, env map[string]string, extra ...string) Output {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, OutputFile)
	args := []string{"bench", mode, "--model", "/models/m", "--dataset-name", "random", "--random-input-len", "512", "--random-output-len", "256", "--num-prompts", "4"}
	if mode == ModeServe {
		args = append(args, "--save-result", "--save-detailed", "--result-dir", dir, "--result-filename", OutputFile)
	} else {
		args = append(args, "--output-json", out)
	}
	args = append(args, extra...)
	var stdout, stderr bytes.Buffer
	code := standin.Run(args, &stdout, &stderr, func(k string) string { return env[k] })
	o := Output{Mode: mode, Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: code, InputLen: 512}
	b, err := os.ReadFile(out)
	if err != nil {
		o.ResultMissing = true
	} else {
		o.Result = b
	}
	return o
}

func TestClassify_standin(t *testing.T) {
	for _, tc := range []struct {
		mode, fail string
		extra      []string
		status     string
		errHas     string
		metrics    []string
	}{
		{ModeThroughput, "", nil, results.StatusOK, "", []string{"tokSTotal", "tokSOut", "requestThroughput"}},
		{ModeLatency, "", []string{"--num-iters", "5"}, results.StatusOK, "", []string{"latencyMs", "latencyP50Ms"}},
		{ModeServe, "", nil, results.StatusOK, "", []string{"tokSOut", "ttftMs", "tpotMs", "itlMs", "e2elMs"}},
		{ModeThroughput, "traceback", nil, results.StatusFailed, "RuntimeError: XPU out of memory", nil},
		{ModeThroughput, "nojson", nil, results.StatusFailed, "wrote no result file", nil},
		{ModeLatency, "truncated", nil, results.StatusFailed, "truncated", nil},
		{ModeServe, "empty", nil, results.StatusFailed, "empty", nil},
		{ModeThroughput, "exit:3", nil, results.StatusFailed, "exited with status 3", nil},
		{ModeThroughput, "", []string{"--no-such-flag"}, results.StatusFailed, "engine rejected arguments: unrecognized arguments: --no-such-flag", nil},
		{ModeThroughput, "noload", nil, results.StatusFailed, "failed to load model: OSError: /models/m does not appear to have a file named config.json", nil},
	} {
		o := standinRun(t, tc.mode, map[string]string{"FAKE_VLLM_FAIL": tc.fail}, tc.extra...)
		got := Classify(o)
		if got.Status != tc.status || !strings.Contains(got.Error, tc.errHas) {
			t.Errorf("%s with FAKE_VLLM_FAIL=%q %v: got %s %q, want %s with %q", tc.mode, tc.fail, tc.extra, got.Status, got.Error, tc.status, tc.errHas)
		}
		for _, name := range tc.metrics {
			if _, ok := find(got.Metrics, name); !ok {
				t.Errorf("%s: no %s among %v", tc.mode, name, got.Metrics)
			}
		}
		if tc.status == results.StatusFailed && tc.fail != "nojson" && tc.fail != "truncated" && tc.fail != "empty" && got.LogTail == "" {
			t.Errorf("%s with FAKE_VLLM_FAIL=%q: no log tail", tc.mode, tc.fail)
		}
	}
	// The stand-in's throughput is consistent: tokSOut from stdout equals
	// the counts' derivation.
	o := standinRun(t, ModeThroughput, nil)
	a := Classify(o)
	o.Stdout = nil
	b := Classify(o)
	x, _ := find(a.Metrics, "tokSOut")
	y, _ := find(b.Metrics, "tokSOut")
	if !near(x.Value, y.Value) || x.Derived == y.Derived {
		t.Errorf("tokSOut from stdout %v (%s) and from counts %v (%s): want equal values, different derivations", x.Value, x.Derived, y.Value, y.Derived)
	}
}

func TestTracebackError(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"INFO hello\n", ""},
		{"Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n    f()\nValueError: bad\n", "ValueError: bad"},
		{"Traceback (most recent call last):\n  File \"a\"\nKeyError: 'x'\n\nDuring handling of the above exception, another exception occurred:\n\nTraceback (most recent call last):\n  File \"b\"\ntorch.OutOfMemoryError: XPU out of memory\nINFO shutting down\n", "torch.OutOfMemoryError: XPU out of memory"},
		{"Traceback (most recent call last):\n  File \"a\"\nKeyboardInterrupt\n", "KeyboardInterrupt"},
	} {
		if got := TracebackError([]byte(tc.in)); got != tc.want {
			t.Errorf("TracebackError(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestDescribe(t *testing.T) {
	dir := t.TempDir()
	// a python whose "vllm" and "pip" answer as the real ones do
	py := filepath.Join(dir, "python3")
	script := "#!/bin/sh\ncase \"$*\" in\n*vllm.entrypoints.cli.main\\ --version|*/vllm\\ --version) echo 0.20.1-local;;\n*pip\\ list*) printf 'torch==2.8.0\\nvllm==0.20.1-local\\n\\naiohttp==3.9.0\\n';;\n*) exit 9;;\nesac\n"
	if err := os.WriteFile(py, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := Describe(context.Background(), spec.Source{Python: py})
	if err != nil {
		t.Fatal(err)
	}
	wantDigest, n := PackagesDigest([]byte("vllm==0.20.1-local\naiohttp==3.9.0\ntorch==2.8.0\n"))
	if f.Version != "0.20.1-local" || f.PackagesDigest != wantDigest || f.Packages != 3 || n != 3 || f.Kind != "python" {
		t.Errorf("Describe(python) = %+v, want version 0.20.1-local, 3 packages, digest %s", f, wantDigest)
	}
	// a vllm console script whose #! names that python
	vl := filepath.Join(dir, "vllm")
	if err := os.WriteFile(vl, []byte("#!"+py+"\necho 0.20.1-local\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	f2, err := Describe(context.Background(), spec.Source{Path: "vllm"})
	if err != nil {
		t.Fatal(err)
	}
	if f2.Executable != vl || f2.Python != py || f2.PackagesDigest != wantDigest || len(f2.ExecutableSHA256) != 64 {
		t.Errorf("Describe(path vllm) = %+v, want %s run by %s with digest %s", f2, vl, py, wantDigest)
	}
	if _, err := Describe(context.Background(), spec.Source{Path: filepath.Join(dir, "missing")}); err == nil {
		t.Error("Describe of a missing executable: got no error")
	}
}

func TestInstallPlan(t *testing.T) {
	commit := strings.Repeat("ab", 20)
	steps, err := InstallPlan("python3", "/src", "/venv", commit, []string{"/p/1.patch"}, spec.Build{Backend: "sycl", Env: map[string]string{"CC": "icx"}})
	if err != nil {
		t.Fatal(err)
	}
	last := steps[len(steps)-1]
	if len(steps) != 5 || last.Env["VLLM_TARGET_DEVICE"] != "xpu" || last.Env["CC"] != "icx" || steps[2].Argv[4] != "--check" {
		t.Errorf("InstallPlan = %+v, want venv, checkout, check+apply, pip install with VLLM_TARGET_DEVICE=xpu", steps)
	}
	if _, err := InstallPlan("python3", "/src", "/venv", "9a26522", nil, spec.Build{}); err == nil {
		t.Error("InstallPlan with a short commit: got no error")
	}
	if _, err := InstallPlan("python3", "/src", "/venv", commit, nil, spec.Build{Backend: "metal"}); err == nil {
		t.Error("InstallPlan for metal: got no error")
	}
}

// TestMeasuredSeconds: the part of a vllm bench that was measured, from
// its result file, places the energy that gives tok/J (issue 32).
func TestMeasuredSeconds(t *testing.T) {
	for _, tc := range []struct {
		mode, json string
		want       float64
	}{
		{ModeThroughput, seed004JSON, 7.403541},
		{ModeServe, `{"duration":2.0,"completed":2}`, 2},
		{ModeLatency, `{"avg_latency":1.5,"latencies":[1.25,1.75,1.5]}`, 4.5},
		{ModeThroughput, `{"num_requests":1}`, 0},
		{ModeServe, ``, 0},
	} {
		if got := measuredSeconds(tc.mode, []byte(tc.json)); !near(got, tc.want) {
			t.Errorf("%s %s: got %v, want %v", tc.mode, tc.json, got, tc.want)
		}
	}
}

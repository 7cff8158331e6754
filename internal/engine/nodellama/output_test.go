package nodellama

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rigorbench/rigor/internal/results"
)

// readCase reads a recorded runner run from testdata/runner: <name>.stdout,
// .stderr and .rc, produced by running the real runner on node-llama-cpp
// 3.22.1 (see the integration test for how).
func readCase(t testing.TB, name string) (stdout, stderr []byte, rc int) {
	t.Helper()
	base := filepath.Join("testdata", "runner", name)
	var err error
	if stdout, err = os.ReadFile(base + ".stdout"); err != nil {
		t.Fatal(err)
	}
	if stderr, err = os.ReadFile(base + ".stderr"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(base + ".rc")
	if err != nil {
		t.Fatal(err)
	}
	if rc, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
		t.Fatal(err)
	}
	return stdout, stderr, rc
}

func TestParseOutput_Recorded(t *testing.T) {
	cases := []struct {
		name    string
		status  string
		err     string
		metrics []string // "name test" keys, in order
	}{
		{name: "ok_pp32_tg16_r2", status: results.StatusOK,
			metrics: []string{"tokSPrompt pp32", "engineTokSPrompt pp32", "tokSOut tg16", "engineTokSOut tg16"}},
		{name: "ok_public_sweep", status: results.StatusOK, metrics: []string{
			"tokSPrompt pp16", "engineTokSPrompt pp16", "tokSOut tg8", "engineTokSOut tg8", "tokSTotal pp8+tg4", "engineTokSTotal pp8+tg4",
			"tokSPrompt pp16 @ d16", "engineTokSPrompt pp16 @ d16", "tokSOut tg8 @ d16", "engineTokSOut tg8 @ d16", "tokSTotal pp8+tg4 @ d16", "engineTokSTotal pp8+tg4 @ d16",
			"tokSPrompt pp16", "engineTokSPrompt pp16", "tokSOut tg8", "engineTokSOut tg8", "tokSTotal pp8+tg4", "engineTokSTotal pp8+tg4",
			"tokSPrompt pp16 @ d16", "engineTokSPrompt pp16 @ d16", "tokSOut tg8 @ d16", "engineTokSOut tg8 @ d16", "tokSTotal pp8+tg4 @ d16", "engineTokSTotal pp8+tg4 @ d16",
		}},
		{name: "err_not_gguf", status: results.StatusFailed,
			err: `failed to load model '/etc/hostname': Invalid GGUF magic. Expected "GGUF" but got "vm`},
		{name: "err_unknown_arch", status: results.StatusFailed,
			err: `failed to load model '/models/badarch.gguf': unknown model architecture: 'qwama'`},
		{name: "err_missing_model", status: results.StatusFailed,
			err: `failed to load model '/nonexistent/model.gguf': no such file`},
		{name: "err_unknown_arg", status: results.StatusFailed, err: "runner rejected arguments: unknown argument: --bogus"},
		{name: "err_bad_value", status: results.StatusFailed,
			err: `runner rejected arguments: invalid parameter for argument: -p ("abc" is not a list of integers)`},
		{name: "err_small_context", status: results.StatusFailed,
			err: "runner rejected arguments: invalid parameter for argument: --context-size (64 is smaller than the longest test, 513 tokens)"},
		{name: "crash_killed", status: results.StatusCrashed,
			err: "engine crashed (exit 137, SIGKILL) after 1 row", metrics: []string{"tokSPrompt pp32", "engineTokSPrompt pp32"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, rc := readCase(t, c.name)
			o := ParseOutput(stdout, stderr, rc)
			if o.Status != c.status {
				t.Errorf("status: got %q, want %q (error %q)", o.Status, c.status, o.Error)
			}
			if o.Error != c.err {
				t.Errorf("error:\ngot  %q\nwant %q", o.Error, c.err)
			}
			var keys []string
			for _, m := range o.Metrics {
				keys = append(keys, m.Key())
			}
			if strings.Join(keys, "|") != strings.Join(c.metrics, "|") {
				t.Errorf("metrics:\ngot  %q\nwant %q", keys, c.metrics)
			}
			if c.status != results.StatusOK && o.LogTail == "" {
				t.Errorf("no log tail for a %s run", o.Status)
			}
		})
	}
}

func TestParseOutput_MetricsCarrySamples(t *testing.T) {
	stdout, stderr, rc := readCase(t, "ok_pp32_tg16_r2")
	o := ParseOutput(stdout, stderr, rc)
	if len(o.Rows) != 2 {
		t.Fatalf("rows: got %d, want 2", len(o.Rows))
	}
	r := o.Rows[1]
	if r.Test != "tg16" || r.NGen != 16 || r.NPrompt != 0 || r.NThreads != 1 || r.ModelType != "llama ?B F16" ||
		r.ModelSize != 3150848 || r.ModelNParams != 1574144 || r.BuildCommit != "v0.5.0" || r.Backends != "CPU" {
		t.Errorf("row 2: got test %q n_gen %d n_prompt %d threads %d type %q size %d params %d build %q backends %q",
			r.Test, r.NGen, r.NPrompt, r.NThreads, r.ModelType, r.ModelSize, r.ModelNParams, r.BuildCommit, r.Backends)
	}
	for _, m := range o.Metrics {
		if len(m.Samples) != 2 {
			t.Errorf("%s: got %d samples, want 2 (r=2)", m.Key(), len(m.Samples))
		}
		if m.Unit != "tok/s" || m.Direction != results.HigherIsBetter || m.Value <= 0 {
			t.Errorf("%s: got unit %q direction %q value %v", m.Key(), m.Unit, m.Direction, m.Value)
		}
		var sum float64
		for _, s := range m.Samples {
			sum += s
		}
		if mean := sum / float64(len(m.Samples)); mean/m.Value > 1.0001 || m.Value/mean > 1.0001 {
			t.Errorf("%s: value %v is not the mean of the samples %v", m.Key(), m.Value, m.Samples)
		}
		if strings.HasPrefix(m.Name, EngineMetricPrefix) != (m.Derived != "") {
			t.Errorf("%s: derived %q; engine-counter metrics (and only they) say how they were derived", m.Key(), m.Derived)
		}
	}
	// The engine's own time inside llama_decode cannot exceed the time the
	// runner measured around the same calls.
	for i := 0; i+1 < len(o.Metrics); i += 2 {
		runner, eng := o.Metrics[i], o.Metrics[i+1]
		for j := range runner.Samples {
			if eng.Samples[j] < runner.Samples[j]*0.999 {
				t.Errorf("%s sample %d: engine %v tok/s below the runner's %v", runner.Key(), j, eng.Samples[j], runner.Samples[j])
			}
		}
	}
}

func TestParseOutput_Synthetic(t *testing.T) {
	row := `{"build_commit":"v0.5.0","n_prompt":0,"n_gen":4,"test":"tg4","avg_ts":100,"samples_ts":[100],"samples_ns":[40000000],"engine_avg_ts":120,"engine_samples_ts":[120, 0, "x"]}`
	cases := []struct {
		name          string
		stdout        string
		stderr        string
		exit          int
		status, err   string
		engineSamples int
	}{
		{"engine samples skip junk", "[\n" + row + "\n]\n", "", 0, results.StatusOK, "", 1},
		{"no engine fields", "[\n{\"n_gen\":4,\"test\":\"tg4\",\"avg_ts\":100,\"samples_ts\":[100]}\n]\n", "", 0, results.StatusOK, "", -1},
		{"signal before rows", "", "error: failed to load model 'x': boom\n", -1, results.StatusFailed, "engine crashed (killed by a signal) before printing results: failed to load model 'x': boom", -1},
		{"no runner line", "", "Segmentation fault\n", 1, results.StatusFailed, "Segmentation fault", -1},
		{"last error line wins", "", "error: first\nnoise\nerror: second\n", 1, results.StatusFailed, "second", -1},
		{"empty array", "[]\n", "", 0, results.StatusFailed, "llama-bench ran no tests (are -p and -n both 0?)", -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := ParseOutput([]byte(c.stdout), []byte(c.stderr), c.exit)
			if o.Status != c.status || o.Error != c.err {
				t.Errorf("ParseOutput(%q, %q, %d): got %q %q, want %q %q", c.stdout, c.stderr, c.exit, o.Status, o.Error, c.status, c.err)
			}
			n := -1
			for _, m := range o.Metrics {
				if strings.HasPrefix(m.Name, EngineMetricPrefix) {
					n = len(m.Samples)
				}
			}
			if n != c.engineSamples {
				t.Errorf("engine samples: got %d, want %d (-1: no engine metric)", n, c.engineSamples)
			}
		})
	}
}

func FuzzParseOutput(f *testing.F) {
	for _, name := range []string{"ok_pp32_tg16_r2", "ok_public_sweep", "err_not_gguf", "err_unknown_arg", "crash_killed"} {
		stdout, stderr, rc := readCase(f, name)
		f.Add(stdout, stderr, rc)
	}
	f.Add([]byte(`[{"engine_samples_ts":[1e400,-1,null],"engine_avg_ts":"nan","test":"tg1","n_gen":1}]`), []byte("error: \xff"), 2)
	f.Fuzz(func(t *testing.T, stdout, stderr []byte, exit int) {
		o := ParseOutput(stdout, stderr, exit)
		switch o.Status {
		case results.StatusOK, results.StatusFailed, results.StatusCrashed:
		default:
			t.Fatalf("status %q", o.Status)
		}
		if o.Status != results.StatusOK && o.Error == "" {
			t.Fatalf("status %s without an error", o.Status)
		}
		for _, m := range o.Metrics {
			if m.Name == "" || m.Unit != "tok/s" {
				t.Fatalf("metric %+v", m)
			}
			if strings.HasPrefix(m.Name, EngineMetricPrefix) {
				for _, s := range m.Samples {
					if !(s > 0) {
						t.Fatalf("engine sample %v kept", s)
					}
				}
			}
		}
	})
}

// The recorded runs (node-llama-cpp 3.22.1's prebuilt linux-x64 binaries
// on an AVX-512 machine) say which binary ran; a run that printed no row
// says nothing of it.
func TestParseOutput_Build(t *testing.T) {
	stdout, stderr, rc := readCase(t, "ok_pp32_tg16_r2")
	b := ParseOutput(stdout, stderr, rc).Build
	if b == nil {
		t.Fatal("no build facts from a recorded run")
	}
	if b.Flavour != "prebuilt" || b.Backends != "CPU" || b.CPUVariant != "libggml-cpu-zen4.so" ||
		b.Binary != "@node-llama-cpp/linux-x64/bins/linux-x64/llama-addon.node" || !strings.HasPrefix(b.SystemInfo, "CPU : SSE3 = 1") {
		t.Errorf("build: %+v", *b)
	}
	want := []string{"SSE3", "SSSE3", "AVX", "AVX2", "F16C", "FMA", "BMI2", "AVX512", "AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16"}
	if !slices.Equal(b.CPUFeatures, want) {
		t.Errorf("CPU features: got %q, want %q", b.CPUFeatures, want)
	}
	if got := b.Summary(); got != "prebuilt (SSE3 SSSE3 AVX AVX2 F16C FMA BMI2 AVX512 AVX512_VBMI AVX512_VNNI AVX512_BF16)" {
		t.Errorf("summary: %q", got)
	}
	for _, name := range []string{"err_not_gguf", "err_unknown_arg"} {
		stdout, stderr, rc := readCase(t, name)
		if b := ParseOutput(stdout, stderr, rc).Build; b != nil {
			t.Errorf("%s: build %+v from a run that printed no row", name, *b)
		}
	}
	// Rows of an older runner, without the build fields: the devices only.
	old := []byte(`[{"build_commit":"v0.5.0","cpu_info":"AMD EPYC","gpu_info":"","backends":"CPU","test":"pp8","n_prompt":8,"n_gen":0,"avg_ts":10,"samples_ts":[10]}]`)
	if b := ParseOutput(old, nil, 0).Build; b == nil || b.Flavour != "" || b.CPU != "AMD EPYC" || b.Summary() != "" {
		t.Errorf("old rows: build %+v", b)
	}
}

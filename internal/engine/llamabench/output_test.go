package llamabench

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/rigorbench/rigor/internal/results"
)

// obj builds a minimal row object.
func obj(test string, avg float64) string {
	return fmt.Sprintf(`{"n_prompt": 0, "n_gen": 16, "test": %q, "avg_ts": %v, "samples_ts": [ %v ]}`, test, avg, avg)
}

func testsOf(rows []Row) string {
	var s []string
	for _, r := range rows {
		s = append(s, r.Test)
	}
	return strings.Join(s, ",")
}

func TestParseJSON(t *testing.T) {
	a, b := obj("tg16", 1), obj("tg32", 2)
	tests := []struct {
		in       string
		tests    string // the rows' labels
		complete bool
		errHas   string
	}{
		{in: "", complete: false},
		{in: " \n", complete: false},
		{in: "[\n", complete: false},
		{in: "[]", complete: true},
		{in: " [ ]\n", complete: true},
		{in: "[" + a + "]", tests: "tg16", complete: true},
		{in: "[\n  " + a + ",\n  " + b + "\n]\n", tests: "tg16,tg32", complete: true},
		// Cut short by a crash: after an object, after the comma, inside
		// the next object, inside a string of it.
		{in: "[\n" + a, tests: "tg16"},
		{in: "[\n" + a + ",\n", tests: "tg16"},
		{in: "[\n" + a + ",\n" + b[:20], tests: "tg16"},
		{in: "[\n" + a + ",\n" + `{"test": "tg3`, tests: "tg16"},
		{in: "[" + a[:len(a)-1], tests: ""},
		// Strings holding brackets, braces and escaped quotes.
		{in: `[{"model_filename": "a]}{[\"b\\", "test": "x"}]`, tests: "x", complete: true},
		// Nested arrays and objects.
		{in: `[{"samples_ts": [1, [2]], "o": {"test": "no"}, "test": "y"}]`, tests: "y", complete: true},
		// printf's non-finite floats.
		{in: `[{"test": "z", "avg_ts": -nan, "stddev_ts": inf, "s": "nan"}]`, tests: "z", complete: true},
		// JSONL through ParseJSON.
		{in: a + "\n" + b + "\n", tests: "tg16,tg32", complete: true},

		{in: "[" + a + ",]", tests: "tg16", errHas: "unexpected ]"},
		{in: "[" + a + "] trailing", tests: "tg16", complete: true, errHas: "unexpected data after the array"},
		{in: "[" + a + " x", tests: "tg16", errHas: "want , or ]"},
		{in: "[1, 2]", errHas: "element 1 is not an object"},
		{in: `[{"a": 1,}]`, errHas: "row 1"},
		{in: `[{"a": nope}]`, errHas: "row 1"},
		{in: "| model | size |\n| --- | --- |\n", errHas: "output is markdown, not JSON"},
		{in: "build_commit,build_number\n\"x\",\"1\"\n", errHas: "output is CSV"},
		{in: "CREATE TABLE IF NOT EXISTS test (\n", errHas: "output is SQL"},
		{in: "usage: ./llama-bench [options]\n", errHas: "usage text"},
		{in: "hello\x00world", errHas: `not JSON: starts with "hello\x00world"`},
	}
	for _, tt := range tests {
		rows, complete, err := ParseJSON([]byte(tt.in))
		if got := testsOf(rows); got != tt.tests || complete != tt.complete {
			t.Errorf("ParseJSON(%q) = rows %q, complete %v; want rows %q, complete %v", tt.in, got, complete, tt.tests, tt.complete)
		}
		switch {
		case tt.errHas == "" && err != nil:
			t.Errorf("ParseJSON(%q) error: %v", tt.in, err)
		case tt.errHas != "" && (err == nil || !strings.Contains(err.Error(), tt.errHas)):
			t.Errorf("ParseJSON(%q) error = %v, want one containing %q", tt.in, err, tt.errHas)
		}
	}
}

func TestParseJSON_nonFinite(t *testing.T) {
	rows, _, err := ParseJSON([]byte(`[{"test": "z", "avg_ts": -nan, "stddev_ts": inf, "samples_ts": [1, NaN, 3], "s": "nan"}]`))
	if err != nil || len(rows) != 1 {
		t.Fatalf("got %d rows, error %v; want 1 row", len(rows), err)
	}
	r := rows[0]
	if r.AvgTs != 0 || r.StddevTs != 0 || r.Fields["avg_ts"] != nil || r.Fields["s"] != "nan" {
		t.Errorf("got avg_ts %v stddev_ts %v fields %v; want non-finite read as null and strings untouched", r.AvgTs, r.StddevTs, r.Fields)
	}
	if !reflect.DeepEqual(r.SamplesTs, []float64{1, 3}) {
		t.Errorf("got samples_ts %v, want [1 3] (null dropped)", r.SamplesTs)
	}
	// With no avg_ts the metric is the mean of the samples.
	if ms := r.Metrics(); len(ms) != 1 || ms[0].Value != 2 {
		t.Errorf("Metrics() = %+v, want one metric with value 2", ms)
	}
}

func TestParseJSONL(t *testing.T) {
	a, b := obj("tg16", 1), obj("tg32", 2)
	tests := []struct {
		in       string
		tests    string
		complete bool
		errHas   string
	}{
		{in: ""},
		{in: a + "\n", tests: "tg16", complete: true},
		{in: a, tests: "tg16", complete: true},
		{in: a + "\r\n\n" + b + "\r\n", tests: "tg16,tg32", complete: true},
		{in: a + "\n" + b[:30], tests: "tg16"},
		{in: a + "\n" + b[:30] + "\n", tests: "tg16"},
		{in: a + "\n" + b[:30] + "\n" + a + "\n", tests: "tg16", errHas: "line 2: unterminated object"},
		{in: a + "\nllama-bench: benchmark 1/2: starting\n", tests: "tg16", errHas: "line 2: not a JSON object"},
		{in: a + " x\n", errHas: "line 1: unexpected data after the object"},
		{in: `{"a": }` + "\n", errHas: "line 1"},
		{in: "[" + a + "]", errHas: "a JSON array, not JSONL"},
		{in: "| model |\n", errHas: "markdown"},
	}
	for _, tt := range tests {
		rows, complete, err := ParseJSONL([]byte(tt.in))
		if got := testsOf(rows); got != tt.tests || complete != tt.complete {
			t.Errorf("ParseJSONL(%q) = rows %q, complete %v; want rows %q, complete %v", tt.in, got, complete, tt.tests, tt.complete)
		}
		switch {
		case tt.errHas == "" && err != nil:
			t.Errorf("ParseJSONL(%q) error: %v", tt.in, err)
		case tt.errHas != "" && (err == nil || !strings.Contains(err.Error(), tt.errHas)):
			t.Errorf("ParseJSONL(%q) error = %v, want one containing %q", tt.in, err, tt.errHas)
		}
	}
}

func TestParseJSON_formatError(t *testing.T) {
	_, _, err := ParseJSON([]byte("| model |\n"))
	var fe *OutputFormatError
	if !errors.As(err, &fe) || fe.Format != "markdown" {
		t.Fatalf("got %v, want an *OutputFormatError for markdown", err)
	}
	if !strings.Contains(err.Error(), "-o json") {
		t.Errorf("error %q does not say rigor reads -o json", err)
	}
}

func rowOf(t *testing.T, fields string) Row {
	t.Helper()
	rows, complete, err := ParseJSON([]byte("[" + fields + "]"))
	if err != nil || !complete || len(rows) != 1 {
		t.Fatalf("ParseJSON(%s): %d rows, complete %v, error %v", fields, len(rows), complete, err)
	}
	return rows[0]
}

func TestRow_lenientFields(t *testing.T) {
	tests := []struct {
		in   string
		get  func(Row) any
		want any
	}{
		{`{"no_kv_offload": true}`, func(r Row) any { return r.NoKVOffload }, true},
		{`{"no_kv_offload": 1}`, func(r Row) any { return r.NoKVOffload }, true},
		{`{"no_kv_offload": "1"}`, func(r Row) any { return r.NoKVOffload }, true},
		{`{"no_kv_offload": "0"}`, func(r Row) any { return r.NoKVOffload }, false},
		{`{"no_kv_offload": "false"}`, func(r Row) any { return r.NoKVOffload }, false},
		{`{}`, func(r Row) any { return r.NoKVOffload }, false},
		{`{"flash_attn": true}`, func(r Row) any { return r.FlashAttn }, 1},
		{`{"flash_attn": false}`, func(r Row) any { return r.FlashAttn }, 0},
		{`{"flash_attn": -1}`, func(r Row) any { return r.FlashAttn }, -1},
		{`{"flash_attn": "auto"}`, func(r Row) any { return r.FlashAttn }, -1},
		{`{"flash_attn": "on"}`, func(r Row) any { return r.FlashAttn }, 1},
		{`{"n_ubatch": "32"}`, func(r Row) any { return r.NUbatch }, 32},
		{`{"n_ubatch": 32.0}`, func(r Row) any { return r.NUbatch }, 32},
		{`{"n_ubatch": "x"}`, func(r Row) any { return r.NUbatch }, 0},
		{`{"model_size": 123456789012}`, func(r Row) any { return r.ModelSize }, int64(123456789012)},
		{`{"avg_ts": "12.5"}`, func(r Row) any { return r.AvgTs }, 12.5},
		{`{"test_time": "2026-11-30T04:46:35Z"}`, func(r Row) any { return r.TestTime.Format("15:04:05") }, "04:46:35"},
		{`{"test_time": "yesterday"}`, func(r Row) any { return r.TestTime.IsZero() }, true},
		{`{"backends": "CUDA,RPC", "rpc": "0"}`, func(r Row) any { return r.Backends }, "CUDA,RPC"},
		{`{"cuda": true, "vulkan": false, "rpc": "1"}`, func(r Row) any { return r.Backends }, "CUDA,RPC"},
		{`{"cuda": false, "rpc": "0"}`, func(r Row) any { return r.Backends }, "CPU"},
		{`{}`, func(r Row) any { return r.Backends }, ""},
		{`{"future_field": {"x": [1]}}`, func(r Row) any { return fmt.Sprint(r.Fields["future_field"]) }, "map[x:[1]]"},
		{`{"avg_ns": 12345678901234567}`, func(r Row) any { return r.Fields["avg_ns"] }, json.Number("12345678901234567")},
		{`{"avg_ns": 12345678901234567}`, func(r Row) any { return r.AvgNs }, int64(12345678901234567)},
		// Test labels: ik's own, else synthesized as mainline's markdown.
		{`{"n_prompt": 512, "n_gen": 0, "test": "pp512"}`, func(r Row) any { return r.Test }, "pp512"},
		{`{"n_prompt": 512, "n_gen": 0}`, func(r Row) any { return r.Test }, "pp512"},
		{`{"n_prompt": 0, "n_gen": 128}`, func(r Row) any { return r.Test }, "tg128"},
		{`{"n_prompt": 512, "n_gen": 128}`, func(r Row) any { return r.Test }, "pp512+tg128"},
		{`{"n_prompt": 512, "n_gen": 0, "n_depth": 4096}`, func(r Row) any { return r.Test }, "pp512 @ d4096"},
		{`{"n_prompt": 0, "n_gen": 128, "n_depth": 4096}`, func(r Row) any { return r.Test }, "tg128 @ d4096"},
		{`{"n_prompt": 4096, "n_gen": 128, "test": "tg128@pp4096"}`, func(r Row) any { return r.Test }, "tg128@pp4096"},
	}
	for _, tt := range tests {
		r := rowOf(t, tt.in)
		if got := tt.get(r); got != tt.want {
			t.Errorf("row %s: got %v (%T), want %v (%T)", tt.in, got, got, tt.want, tt.want)
		}
	}
}

func TestRow_Metrics(t *testing.T) {
	tests := []struct {
		in   string
		want string // name test
	}{
		{`{"n_prompt": 512, "n_gen": 0, "avg_ts": 1}`, "tokSPrompt pp512"},
		{`{"n_prompt": 512, "n_gen": 0, "n_depth": 8, "avg_ts": 1}`, "tokSPrompt pp512 @ d8"},
		{`{"n_prompt": 0, "n_gen": 64, "avg_ts": 1}`, "tokSOut tg64"},
		{`{"n_prompt": 512, "n_gen": 128, "avg_ts": 1}`, "tokSTotal pp512+tg128"},
		{`{"n_prompt": 4096, "n_gen": 128, "test": "tg128@pp4096", "avg_ts": 1}`, "tokSOut tg128@pp4096"},
		{`{"n_prompt": 0, "n_gen": 64, "test": "odd", "avg_ts": 1}`, "tokSOut odd"},
		{`{"n_prompt": 0, "n_gen": 0, "test": "odd", "avg_ts": 1}`, "tokSTotal odd"},
	}
	for _, tt := range tests {
		ms := rowOf(t, tt.in).Metrics()
		if len(ms) != 1 || ms[0].Key() != tt.want {
			t.Errorf("Metrics of %s = %+v, want one metric %q", tt.in, ms, tt.want)
		}
	}

	r := rowOf(t, `{"n_prompt": 0, "n_gen": 16, "avg_ts": 5.5, "stddev_ts": 0.5, "samples_ts": [5, 6]}`)
	got := r.Metrics()
	want := []results.Metric{{Name: "tokSOut", Test: "tg16", Unit: "tok/s", Direction: "higher", Value: 5.5, Stddev: 0.5, Samples: []float64{5, 6}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Metrics() = %+v, want %+v", got, want)
	}
	got[0].Samples[0] = 99
	if r.SamplesTs[0] != 5 {
		t.Errorf("Metrics shares its Samples with the row")
	}
	if ms := rowOf(t, `{"n_prompt": 0, "n_gen": 16}`).Metrics(); ms != nil {
		t.Errorf("Metrics of a row without avg_ts or samples = %+v, want none", ms)
	}
}

func TestClassify_synthetic(t *testing.T) {
	row := obj("tg16", 10)
	tests := []struct {
		name     string
		stdout   string
		stderr   string
		rc       int
		signaled bool
		status   string
		rows     int
		errHas   string
	}{
		{"ok", "[" + row + "]\n", "", 0, false, results.StatusOK, 1, ""},
		{"killed by signal, go style", "[" + row + ",\n", "", -1, true, results.StatusCrashed, 1, "engine crashed (killed by a signal) after 1 row"},
		{"killed by signal, shell style", "[" + row, "Segmentation fault\n", 139, true, results.StatusCrashed, 1, "(exit 139, SIGSEGV) after 1 row: Segmentation fault"},
		{"signal number", "[" + row, "", 9, true, results.StatusCrashed, 1, "(SIGKILL)"},
		{"exit 1 after rows", "[" + row + "]", "main: error: failed to load model 'b.gguf'\n", 1, false, results.StatusCrashed, 1, "status 1 after 1 row: failed to load model 'b.gguf'"},
		{"exit 0, array open", "[" + row, "", 0, false, results.StatusCrashed, 1, "left the JSON array open"},
		{"exit 0, rows then garbage", "[" + row + "] junk", "", 0, false, results.StatusCrashed, 1, "output broken after 1 row"},
		{"empty array", "[]", "", 0, false, results.StatusFailed, 0, "ran no tests"},
		{"nothing at all", "", "", 0, false, results.StatusFailed, 0, "exited with status 0 without printing results"},
		{"exit 2, silent", "[", "", 2, false, results.StatusFailed, 0, "engine exited with status 2 without printing results"},
		{"assert", "[", "ggml.c:123: GGML_ASSERT(x) failed\nAborted\n", 134, false, results.StatusFailed, 0, "before printing results: ggml.c:123: GGML_ASSERT(x) failed"},
		{"cuda oom", "[", "ggml_cuda: CUDA error: out of memory\n  current device: 0\n", 1, false, results.StatusFailed, 0, "CUDA error: out of memory"},
		{"unknown argument", "", "error: unknown argument: --foo\n", 1, false, results.StatusFailed, 0, "engine rejected arguments: --foo"},
		{"usage only", "usage: llama-bench [options]\n", "", 1, false, results.StatusFailed, 0, "engine rejected arguments: llama-bench printed its usage text"},
		{"jsonl ok", row + "\n", "", 0, false, results.StatusOK, 1, ""},
		{"jsonl crash", row + "\n" + row[:10], "double free or corruption (!prev)\n", 134, false, results.StatusCrashed, 1, "double free"},
	}
	for _, tt := range tests {
		o := Classify([]byte(tt.stdout), []byte(tt.stderr), tt.rc, tt.signaled)
		if o.Status != tt.status || len(o.Rows) != tt.rows || !strings.Contains(o.Error, tt.errHas) || (tt.errHas == "") != (o.Error == "") {
			t.Errorf("%s: Classify(%q, %q, %d, %v) = status %q, %d rows, error %q; want %q, %d rows, error containing %q",
				tt.name, tt.stdout, tt.stderr, tt.rc, tt.signaled, o.Status, len(o.Rows), o.Error, tt.status, tt.rows, tt.errHas)
		}
	}
}

func TestClassify_logTail(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	b.WriteString("\n\n")
	o := Classify([]byte("["), []byte(b.String()), 1, false)
	lines := strings.Split(o.LogTail, "\n")
	if len(lines) != 20 || lines[0] != "line 11" || lines[19] != "line 30" {
		t.Errorf("LogTail = %q, want lines 11 to 30", o.LogTail)
	}
	if o := Classify([]byte("["+obj("tg16", 1)+"]"), []byte(b.String()), 0, false); o.LogTail != "" {
		t.Errorf("LogTail of an ok run = %q, want none", o.LogTail)
	}
}

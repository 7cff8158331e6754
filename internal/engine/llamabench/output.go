// This file reads llama-bench's machine output (-o json and -o jsonl) from
// both mainline llama.cpp and ik_llama.cpp into typed rows.
//
// Rules for the whole file:
//   - Parsing is lenient about fields: unknown fields are kept in Row.Fields,
//     missing fields leave the typed field at its zero value, and a boolean may
//     arrive as a JSON bool, a number or a string ("0"/"1", ik's rpc field).
//   - Parsing is strict about structure: output that is not JSON is an error
//     that names what it is (markdown, CSV, SQL, usage text), and an array cut
//     short by a crash yields its complete objects with complete=false.
//   - llama-bench prints floats with printf, so a division by zero can put a
//     bare nan or inf into the JSON; such values are read as null.

package llamabench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/rigorbench/rigor/internal/metric"
	"github.com/rigorbench/rigor/internal/results"
)

// Row is one row of llama-bench output: one test (pp, tg, pg or ik's gp) of
// one parameter combination, with every repetition's sample.
//
// The typed fields hold what both forks print under the same name. Fields
// holds every field exactly as printed, including those the typed fields
// cover and fork-only ones (ik's mla_attn, fused_moe, …; mainline's
// cpu_mask, devices, …). Numbers in Fields are [encoding/json.Number], so
// their printed form is kept.
type Row struct {
	BuildCommit string // short hash as printed, e.g. "c392e5094"
	BuildNumber int
	CPUInfo     string
	GPUInfo     string
	// Backends is mainline's backends field ("CUDA", "RPC", "CPU"). ik has
	// no such field; it is synthesized from ik's cuda, vulkan, metal, sycl,
	// rpc and blas flags the way mainline spells it ("CUDA,RPC"; "CPU" when
	// none is set).
	Backends      string
	ModelFilename string
	ModelType     string
	ModelSize     int64 // bytes
	ModelNParams  int64
	NBatch        int
	NUbatch       int
	NThreads      int
	TypeK         string
	TypeV         string
	NGPULayers    int
	SplitMode     string
	MainGPU       int
	NoKVOffload   bool
	// FlashAttn is -1 (auto), 0 (off) or 1 (on); older builds and ik print a
	// bool, which reads as 0 or 1.
	FlashAttn   int
	TensorSplit string // as printed: "0.00", "1.00/1.00"
	NPrompt     int
	NGen        int
	NDepth      int // mainline -d; 0 when absent
	// Test labels the test in llama-bench's own markdown spelling: ik's
	// test field when present, else synthesized from n_prompt, n_gen and
	// n_depth as mainline's markdown printer does: "pp512" (prompt only),
	// "tg128" (generation only), "pp512+tg128" (both), with " @ d4096"
	// appended for a non-zero depth. ik's gp tests read "tg128@pp4096".
	Test      string
	TestTime  time.Time // zero when absent or unparsable
	AvgNs     int64
	StddevNs  int64
	AvgTs     float64 // mean of SamplesTs, as llama-bench reports it
	StddevTs  float64
	SamplesNs []int64
	SamplesTs []float64

	// Fields holds every field of the row as printed.
	Fields map[string]any
}

// OutputFormatError reports llama-bench output that is not JSON: the
// markdown, CSV or SQL that -o md/csv/sql print, llama-bench's usage text,
// or anything else.
type OutputFormatError struct {
	// Format names what the output is: "markdown", "CSV", "SQL",
	// "usage text", or "unrecognized".
	Format string
	// Line is the first line of the output, shortened, for an
	// unrecognized format.
	Line string
}

// Error says what the output is, and that rigor reads JSON.
func (e *OutputFormatError) Error() string {
	switch e.Format {
	case "usage text":
		return "llama-bench printed its usage text instead of results"
	case "unrecognized":
		return fmt.Sprintf("llama-bench output is not JSON: starts with %q", e.Line)
	}
	return fmt.Sprintf("llama-bench output is %s, not JSON (rigor reads only -o json or -o jsonl output)", e.Format)
}

// ParseJSON reads llama-bench -o json output: an array of row objects,
// flushed one object at a time, so a crash leaves a truncated array.
//
// It returns the rows of every complete object and reports whether the
// array was closed. A truncated array (the engine died mid-output), a lone
// "[" (a failed model load) and empty output are not errors: they return
// the complete objects seen, possibly none, with complete false. Output
// that is not a JSON array of objects is an error; when it is markdown,
// CSV, SQL or usage text the error is an [*OutputFormatError]. Output that
// starts with "{" is read as JSONL with [ParseJSONL], so one call reads a
// file of either kind.
//
// On error, rows still holds the rows read before the error.
func ParseJSON(stdout []byte) (rows []Row, complete bool, err error) {
	i := outSkipSpace(stdout, 0)
	if i == len(stdout) {
		return nil, false, nil
	}
	switch stdout[i] {
	case '{':
		return ParseJSONL(stdout)
	case '[':
	default:
		return nil, false, outSniff(stdout)
	}
	i++
	for n := 0; ; n++ {
		i = outSkipSpace(stdout, i)
		if i == len(stdout) {
			return rows, false, nil
		}
		if stdout[i] == ']' {
			if n > 0 {
				return rows, false, fmt.Errorf("parsing llama-bench json: offset %d: unexpected ] after ,", i)
			}
			return outClose(stdout, i, rows)
		}
		if stdout[i] != '{' {
			return rows, false, fmt.Errorf("parsing llama-bench json: offset %d: element %d is not an object", i, n+1)
		}
		end := outObjectEnd(stdout, i)
		if end < 0 {
			return rows, false, nil // cut short inside the object
		}
		row, err := outDecodeRow(stdout[i:end])
		if err != nil {
			return rows, false, fmt.Errorf("parsing llama-bench json: row %d: %w", n+1, err)
		}
		rows = append(rows, row)
		i = outSkipSpace(stdout, end)
		if i == len(stdout) {
			return rows, false, nil
		}
		switch stdout[i] {
		case ',':
			i++
		case ']':
			return outClose(stdout, i, rows)
		default:
			return rows, false, fmt.Errorf("parsing llama-bench json: offset %d: want , or ] after row %d, got %q", i, n+1, stdout[i])
		}
	}
}

// outClose finishes a JSON array closed at b[i]: only space may follow.
func outClose(b []byte, i int, rows []Row) ([]Row, bool, error) {
	if j := outSkipSpace(b, i+1); j != len(b) {
		return rows, true, fmt.Errorf("parsing llama-bench json: offset %d: unexpected data after the array", j)
	}
	return rows, true, nil
}

// ParseJSONL reads llama-bench -o jsonl output: one row object per line.
//
// complete reports whether every line was a whole object: a last line cut
// short inside its object (the engine died mid-write) is dropped and makes
// complete false, as does empty output. JSONL has no closing mark, so
// complete output of a crashed engine looks complete; the exit status
// decides (see [Classify]). A line that is not an object is an error; on
// error, rows holds the rows before that line.
func ParseJSONL(stdout []byte) (rows []Row, complete bool, err error) {
	if outSkipSpace(stdout, 0) == len(stdout) {
		return nil, false, nil
	}
	if b := bytes.TrimSpace(stdout); b[0] != '{' {
		if b[0] == '[' {
			return nil, false, fmt.Errorf("parsing llama-bench jsonl: output is a JSON array, not JSONL")
		}
		return nil, false, outSniff(stdout)
	}
	line := 0
	for rest := stdout; len(rest) > 0; {
		line++
		var l []byte
		l, rest, _ = bytes.Cut(rest, []byte{'\n'})
		l = bytes.TrimSpace(l)
		if len(l) == 0 {
			continue
		}
		if l[0] != '{' {
			return rows, false, fmt.Errorf("parsing llama-bench jsonl: line %d: not a JSON object", line)
		}
		end := outObjectEnd(l, 0)
		if end < 0 && len(bytes.TrimSpace(rest)) == 0 {
			return rows, false, nil // the last line, cut short
		}
		if end < 0 {
			return rows, false, fmt.Errorf("parsing llama-bench jsonl: line %d: unterminated object", line)
		}
		if end != len(l) {
			return rows, false, fmt.Errorf("parsing llama-bench jsonl: line %d: unexpected data after the object", line)
		}
		row, err := outDecodeRow(l)
		if err != nil {
			return rows, false, fmt.Errorf("parsing llama-bench jsonl: line %d: %w", line, err)
		}
		rows = append(rows, row)
	}
	return rows, true, nil
}

// outSniff names the format of output that is not JSON.
func outSniff(b []byte) error {
	t := bytes.TrimSpace(b)
	first, _, _ := bytes.Cut(t, []byte{'\n'})
	first = bytes.TrimSpace(first)
	switch {
	case bytes.HasPrefix(first, []byte("|")):
		return &OutputFormatError{Format: "markdown"}
	case bytes.HasPrefix(first, []byte("CREATE TABLE")), bytes.HasPrefix(first, []byte("INSERT INTO")):
		return &OutputFormatError{Format: "SQL"}
	case bytes.HasPrefix(first, []byte("build_commit,")), bytes.HasPrefix(first, []byte(`"build_commit",`)):
		return &OutputFormatError{Format: "CSV"}
	case bytes.HasPrefix(first, []byte("usage:")):
		return &OutputFormatError{Format: "usage text"}
	}
	s := string(first)
	if len(s) > 60 {
		s = s[:60]
	}
	return &OutputFormatError{Format: "unrecognized", Line: strings.ToValidUTF8(s, "?")}
}

func outSkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// outObjectEnd returns the offset just past the "}" that closes the object
// opening at b[start], or -1 when b ends first. It tracks nesting and
// strings only; the decoder validates the rest.
func outObjectEnd(b []byte, start int) int {
	depth := 0
	var str outStrScan
	for i := start; i < len(b); i++ {
		c := b[i]
		if str.in(c) {
			continue
		}
		switch c {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}

// outStrScan follows JSON strings through a byte stream.
type outStrScan struct{ inside, escaped bool }

// in takes the next byte and reports whether it belongs to a string,
// the quotes that open and close it included.
func (s *outStrScan) in(c byte) bool {
	switch {
	case !s.inside:
		s.inside = c == '"'
		return s.inside
	case s.escaped:
		s.escaped = false
	case c == '\\':
		s.escaped = true
	case c == '"':
		s.inside = false
	}
	return true
}

// outDecodeRow decodes one row object.
func outDecodeRow(obj []byte) (Row, error) {
	fields, err := outDecodeObject(obj)
	if err != nil {
		if fixed, ok := outNullNonFinite(obj); ok {
			fields, err = outDecodeObject(fixed)
		}
	}
	if err != nil {
		return Row{}, err
	}
	return outRow(fields), nil
}

func outDecodeObject(obj []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("not an object")
	}
	return m, nil
}

// outNullNonFinite replaces the bare words nan, -nan, inf, -inf and
// infinity (any case), which printf writes for non-finite floats, with
// null outside strings. It reports whether it replaced any.
func outNullNonFinite(b []byte) ([]byte, bool) {
	var out []byte
	changed := false
	var str outStrScan
	for i := 0; i < len(b); i++ {
		c := b[i]
		if str.in(c) {
			out = append(out, c)
			continue
		}
		j := i
		if c == '-' || c == '+' {
			j++
		}
		k := j
		for k < len(b) && ('a' <= b[k]|0x20 && b[k]|0x20 <= 'z') {
			k++
		}
		if k > j {
			switch strings.ToLower(string(b[j:k])) {
			case "nan", "inf", "infinity":
				out = append(out, "null"...)
				i = k - 1
				changed = true
				continue
			}
			out = append(out, b[i:k]...)
			i = k - 1
			continue
		}
		out = append(out, c)
	}
	return out, changed
}

// outRow fills the typed fields of a row from its raw fields.
func outRow(f map[string]any) Row {
	r := Row{Fields: f}
	r.BuildCommit = outStr(f["build_commit"])
	r.BuildNumber = int(outInt(f["build_number"]))
	r.CPUInfo = outStr(f["cpu_info"])
	r.GPUInfo = outStr(f["gpu_info"])
	r.Backends = outBackends(f)
	r.ModelFilename = outStr(f["model_filename"])
	r.ModelType = outStr(f["model_type"])
	r.ModelSize = outInt(f["model_size"])
	r.ModelNParams = outInt(f["model_n_params"])
	r.NBatch = int(outInt(f["n_batch"]))
	r.NUbatch = int(outInt(f["n_ubatch"]))
	r.NThreads = int(outInt(f["n_threads"]))
	r.TypeK = outStr(f["type_k"])
	r.TypeV = outStr(f["type_v"])
	r.NGPULayers = int(outInt(f["n_gpu_layers"]))
	r.SplitMode = outStr(f["split_mode"])
	r.MainGPU = int(outInt(f["main_gpu"]))
	r.NoKVOffload = outBool(f["no_kv_offload"])
	r.FlashAttn = outFlashAttn(f["flash_attn"])
	r.TensorSplit = outStr(f["tensor_split"])
	r.NPrompt = int(outInt(f["n_prompt"]))
	r.NGen = int(outInt(f["n_gen"]))
	r.NDepth = int(outInt(f["n_depth"]))
	if t, err := time.Parse(time.RFC3339, outStr(f["test_time"])); err == nil {
		r.TestTime = t
	}
	r.AvgNs = outInt(f["avg_ns"])
	r.StddevNs = outInt(f["stddev_ns"])
	r.AvgTs = outFloat(f["avg_ts"])
	r.StddevTs = outFloat(f["stddev_ts"])
	if a, ok := f["samples_ns"].([]any); ok {
		for _, v := range a {
			if v != nil {
				r.SamplesNs = append(r.SamplesNs, outInt(v))
			}
		}
	}
	if a, ok := f["samples_ts"].([]any); ok {
		for _, v := range a {
			if v != nil {
				r.SamplesTs = append(r.SamplesTs, outFloat(v))
			}
		}
	}
	r.Test = strings.TrimSpace(outStr(f["test"]))
	if r.Test == "" {
		r.Test = outTestLabel(r.NPrompt, r.NGen, r.NDepth)
	}
	return r
}

// outTestLabel spells a test as mainline llama-bench's markdown does.
func outTestLabel(nPrompt, nGen, nDepth int) string {
	var s string
	switch {
	case nPrompt > 0 && nGen == 0:
		s = fmt.Sprintf("pp%d", nPrompt)
	case nGen > 0 && nPrompt == 0:
		s = fmt.Sprintf("tg%d", nGen)
	default:
		s = fmt.Sprintf("pp%d+tg%d", nPrompt, nGen)
	}
	if nDepth > 0 {
		s += fmt.Sprintf(" @ d%d", nDepth)
	}
	return s
}

// outBackends returns mainline's backends field, or synthesizes it from
// ik's per-backend flags.
func outBackends(f map[string]any) string {
	if v, ok := f["backends"]; ok {
		return outStr(v)
	}
	var names []string
	seen := false
	for _, b := range []struct{ field, name string }{
		{"cuda", "CUDA"}, {"vulkan", "Vulkan"}, {"metal", "Metal"},
		{"sycl", "SYCL"}, {"rpc", "RPC"}, {"blas", "BLAS"},
	} {
		v, ok := f[b.field]
		if !ok {
			continue
		}
		seen = true
		if outBool(v) {
			names = append(names, b.name)
		}
	}
	if !seen {
		return ""
	}
	if len(names) == 0 {
		return "CPU"
	}
	return strings.Join(names, ",")
}

// outStr reads a string field; numbers and bools read as printed.
func outStr(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	}
	return ""
}

// outInt reads an integer field written as a number, a numeric string or
// a bool; anything else reads as 0.
func outInt(v any) int64 {
	switch v := v.(type) {
	case json.Number:
		return outParseInt(string(v))
	case string:
		return outParseInt(strings.TrimSpace(v))
	case bool:
		if v {
			return 1
		}
	}
	return 0
}

func outParseInt(s string) int64 {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) >= 1<<63 {
		return 0
	}
	return int64(f)
}

// outFloat reads a float field written as a number or a numeric string;
// anything else, and non-finite values, read as 0.
func outFloat(v any) float64 {
	var s string
	switch v := v.(type) {
	case json.Number:
		s = string(v)
	case string:
		s = strings.TrimSpace(v)
	default:
		return 0
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}

// outBool reads a boolean written as a bool, a number (non-zero is true)
// or a string ("1", "true", "on", "yes").
func outBool(v any) bool {
	switch v := v.(type) {
	case bool:
		return v
	case json.Number:
		return outParseInt(string(v)) != 0
	case string:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "1", "true", "on", "yes":
			return true
		}
		return outParseInt(strings.TrimSpace(v)) != 0
	}
	return false
}

// outFlashAttn reads flash_attn: a bool (older builds, ik), an int
// (-1 auto, 0, 1) or "on"/"off"/"auto".
func outFlashAttn(v any) int {
	switch v := v.(type) {
	case bool:
		if v {
			return 1
		}
		return 0
	case string:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "auto":
			return -1
		case "on", "true", "yes":
			return 1
		case "off", "false", "no":
			return 0
		}
	}
	return int(outInt(v))
}

// Metric names by kind of test.
const (
	outMetricPrompt = metric.TokSPrompt
	outMetricOut    = metric.TokSOut
	outMetricTotal  = metric.TokSTotal
)

// Metrics returns the row's throughput as a [results.Metric]: tokSPrompt
// for a pp test, tokSOut for a tg test and for ik's gp test ("tg128@pp4096",
// generation speed after a prompt), tokSTotal for a pg test
// ("pp512+tg128"). Test is the row's label, Value its avg_ts, Stddev its
// stddev_ts and Samples its samples_ts, in tok/s, higher is better.
//
// A row without avg_ts (and no samples to average) yields no metric.
func (r Row) Metrics() []results.Metric {
	value := r.AvgTs
	if _, ok := r.Fields["avg_ts"]; !ok || r.Fields["avg_ts"] == nil {
		if len(r.SamplesTs) == 0 {
			return nil
		}
		value = 0
		for _, s := range r.SamplesTs {
			value += s
		}
		value /= float64(len(r.SamplesTs))
	}
	m := results.Metric{
		Name:      outMetricName(r),
		Test:      r.Test,
		Unit:      metric.TokPerSec,
		Direction: results.HigherIsBetter,
		Value:     value,
		Stddev:    r.StddevTs,
	}
	if len(r.SamplesTs) > 0 {
		m.Samples = append([]float64(nil), r.SamplesTs...)
	}
	return []results.Metric{m}
}

// outMetricName picks the metric name from the test label, falling back
// on the token counts when the label is not one llama-bench writes.
func outMetricName(r Row) string {
	t := r.Test
	switch {
	case strings.HasPrefix(t, "tg") && strings.Contains(t, "@pp"):
		return outMetricOut // ik gp
	case strings.HasPrefix(t, "pp") && strings.Contains(t, "+tg"):
		return outMetricTotal
	case strings.HasPrefix(t, "pp"):
		return outMetricPrompt
	case strings.HasPrefix(t, "tg"):
		return outMetricOut
	}
	switch {
	case r.NPrompt > 0 && r.NGen == 0:
		return outMetricPrompt
	case r.NGen > 0 && r.NPrompt == 0:
		return outMetricOut
	}
	return outMetricTotal
}

// Build is what the rows say of the binary that printed them: its
// backends and devices (backends, cpu_info, gpu_info), from the first row
// that names any; nil when no row does. Every row of one process
// describes the same binary.
func Build(rows []Row) *results.Build {
	for _, r := range rows {
		b := results.Build{
			Backends: strings.TrimSpace(r.Backends),
			CPU:      strings.TrimSpace(r.CPUInfo),
			GPU:      strings.TrimSpace(r.GPUInfo),
		}
		if b.Backends != "" || b.CPU != "" || b.GPU != "" {
			return &b
		}
	}
	return nil
}

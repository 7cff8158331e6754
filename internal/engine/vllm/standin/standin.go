// Package standin is a stand-in for vLLM's command-line tool, for tests:
// it accepts the `vllm bench throughput|latency|serve` flags rigor plans,
// writes the JSON files vLLM writes (--output-json; --save-result with
// --result-dir and --result-filename) in vLLM's own shapes, prints vLLM's
// stdout lines, and answers `vllm --version`. No model is loaded: the
// numbers come from a fixed speed model, so runs are deterministic.
//
// `vllm serve MODEL --host H --port P [engine arguments]` serves the
// OpenAI-compatible streaming endpoints (/v1/completions,
// /v1/chat/completions, /v1/models, /health, /version) until it is
// stopped: the first token 10 ms after a request, then one every
// 1/FAKE_VLLM_TOKS seconds, and the usage chunk vLLM sends with
// stream_options.include_usage. It also answers POST /tokenize and, on
// /v1/completions, prompt_logprobs and echo with logprobs from a small
// byte-level model it computes (logprobs.go), up to --max-logprobs (20).
//
// Environment variables select behaviour:
//
//	FAKE_VLLM_VERSION    what --version prints (default 0.20.1+standin)
//	FAKE_VLLM_TOKS       decode speed in output tok/s (default 40)
//	FAKE_VLLM_FAIL       a failure mode: traceback (a Python traceback on
//	                     stderr, exit 1), noload (the traceback of a model
//	                     that cannot be loaded, exit 1), nojson (exit 0, no
//	                     result file),
//	                     truncated (half a result file, exit 0), empty (an
//	                     empty result file, exit 0), exit:N (exit N)
//	FAKE_VLLM_ARGS_FILE  a file to which the argv is appended, one line
//	VLLM_API_KEY         the key `vllm serve` requires on /v1/ (as does its
//	                     --api-key, which only serve takes): others get
//	                     vLLM's 401
//
// The testscripts register [Main] as the command fake-vllm; the program in
// ./vllm builds it as a binary named vllm for `source: path`.
package standin

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// DefaultVersion is what `vllm --version` prints without FAKE_VLLM_VERSION.
const DefaultVersion = "0.20.1+standin"

// valueFlags take a value; switchFlags do not. Both are the flags of the
// real `vllm bench` subcommands that rigor's schema can produce, plus the
// common engine arguments.
var valueFlags = set("--backend", "--model", "--tokenizer", "--dtype", "--quantization",
	"--tensor-parallel-size", "--pipeline-parallel-size", "--distributed-executor-backend",
	"--max-model-len", "--max-num-batched-tokens", "--max-num-seqs", "--gpu-memory-utilization",
	"--kv-cache-dtype", "--block-size", "--load-format", "--seed", "--speculative-config",
	"--revision", "--dataset-name", "--dataset-path", "--input-len", "--output-len",
	"--random-input-len", "--random-output-len", "--random-range-ratio", "--random-prefix-len",
	"--num-prompts", "--n", "--batch-size", "--num-iters", "--num-iters-warmup", "--output-json",
	"--request-rate", "--burstiness", "--max-concurrency", "--base-url", "--host", "--port",
	"--endpoint", "--result-dir", "--result-filename", "--label", "--percentile-metrics",
	"--metric-percentiles", "--served-model-name", "--num-warmups", "--tokenizer-mode", "--goodput",
	"--max-logprobs")

var switchFlags = set("--trust-remote-code", "--disable-log-stats", "--enforce-eager",
	"--enable-chunked-prefill", "--enable-prefix-caching", "--save-result", "--save-detailed",
	"--append-result", "--disable-detokenize", "--ignore-eos", "--async-engine", "--disable-tqdm",
	"--use-beam-search", "--insecure")

func set(s ...string) map[string]bool {
	m := map[string]bool{}
	for _, x := range s {
		m[x] = true
	}
	return m
}

// Main runs the stand-in with os.Args and the process environment.
func Main() int {
	return Run(os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
}

// Run runs the stand-in and returns its exit status.
func Run(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if f := getenv("FAKE_VLLM_ARGS_FILE"); f != "" {
		if fh, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintln(fh, strings.Join(args, " "))
			fh.Close()
		}
	}
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-v") {
		v := getenv("FAKE_VLLM_VERSION")
		if v == "" {
			v = DefaultVersion
		}
		fmt.Fprintln(stdout, v)
		return 0
	}
	if len(args) >= 1 && args[0] == "serve" {
		return server(args[1:], stdout, stderr, getenv)
	}
	if len(args) < 2 || args[0] != "bench" {
		fmt.Fprintln(stderr, "usage: vllm [-h] [-v] {chat,complete,serve,bench,collect-env,run-batch} ...")
		fmt.Fprintln(stderr, "vllm: error: the stand-in knows only 'vllm bench' and 'vllm --version'")
		return 2
	}
	mode := args[1]
	if mode != "throughput" && mode != "latency" && mode != "serve" {
		fmt.Fprintf(stderr, "usage: vllm bench [-h] {latency,serve,throughput} ...\nvllm bench: error: argument bench_type: invalid choice: '%s' (choose from 'latency', 'serve', 'throughput')\n", mode)
		return 2
	}
	flags := map[string]string{}
	var unknown []string
	for i := 2; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(a, "=")
		name = strings.ReplaceAll(name, "_", "-")
		switch {
		case valueFlags[name] && hasVal:
			flags[name] = val
		case valueFlags[name]:
			if i+1 >= len(args) {
				fmt.Fprintf(stderr, "vllm bench %s: error: argument %s: expected one argument\n", mode, name)
				return 2
			}
			i++
			flags[name] = args[i]
		case switchFlags[name] && !hasVal:
			flags[name] = "true"
		default:
			unknown = append(unknown, a)
		}
	}
	if len(unknown) > 0 {
		fmt.Fprintf(stderr, "usage: vllm bench %s [options]\nvllm bench %s: error: unrecognized arguments: %s\n", mode, mode, strings.Join(unknown, " "))
		return 2
	}
	if flags["--model"] == "" && mode != "serve" {
		fmt.Fprintf(stderr, "vllm bench %s: error: the following arguments are required: --model\n", mode)
		return 2
	}
	fail := getenv("FAKE_VLLM_FAIL")
	switch {
	case fail == "traceback":
		fmt.Fprintln(stderr, "INFO 05-08 03:27:53 [__init__.py:239] Automatically detected platform xpu.")
		fmt.Fprintln(stderr, "Traceback (most recent call last):")
		fmt.Fprintln(stderr, `  File "/usr/lib/python3/site-packages/vllm/v1/worker/xpu_worker.py", line 112, in determine_available_memory`)
		fmt.Fprintln(stderr, "    torch.xpu.empty_cache()")
		fmt.Fprintln(stderr, "RuntimeError: XPU out of memory. Tried to allocate 2.00 GiB")
		return 1
	case fail == "noload":
		// What transformers raises, through vLLM's config loading, for a
		// model directory without a config.json.
		fmt.Fprintln(stderr, "INFO 05-08 03:27:50 [__init__.py:239] Automatically detected platform xpu.")
		fmt.Fprintln(stderr, "Traceback (most recent call last):")
		fmt.Fprintln(stderr, `  File "/usr/lib/python3/site-packages/vllm/transformers_utils/config.py", line 383, in get_config`)
		fmt.Fprintln(stderr, "    config_dict, _ = PretrainedConfig.get_config_dict(")
		fmt.Fprintf(stderr, "OSError: %s does not appear to have a file named config.json. Checkout 'https://huggingface.co/%s/tree/main' for available files.\n", flags["--model"], flags["--model"])
		return 1
	case strings.HasPrefix(fail, "exit:"):
		n, err := strconv.Atoi(strings.TrimPrefix(fail, "exit:"))
		if err != nil {
			n = 1
		}
		fmt.Fprintf(stderr, "ERROR stand-in exiting with status %d\n", n)
		return n
	}
	speed := 40.0
	if s, err := strconv.ParseFloat(getenv("FAKE_VLLM_TOKS"), 64); err == nil && s > 0 {
		speed = s
	}
	var res any
	var outPath string
	switch mode {
	case "throughput":
		res, outPath = throughput(flags, speed, stdout)
	case "latency":
		res, outPath = latency(flags, speed, stdout)
	case "serve":
		var code int
		res, outPath, code = serve(flags, speed, stdout, stderr)
		if code != 0 {
			return code
		}
	}
	if outPath == "" || fail == "nojson" {
		return 0
	}
	b, _ := json.MarshalIndent(res, "", "    ")
	switch fail {
	case "truncated":
		b = b[:len(b)/2]
	case "empty":
		b = nil
	}
	if err := os.WriteFile(outPath, b, 0o644); err != nil {
		fmt.Fprintf(stderr, "Traceback (most recent call last):\n  File \"vllm/benchmarks/throughput.py\", line 1, in main\nFileNotFoundError: %v\n", err)
		return 1
	}
	return 0
}

func intFlag(flags map[string]string, def int, names ...string) int {
	for _, n := range names {
		if v, ok := flags[n]; ok {
			if i, err := strconv.Atoi(v); err == nil {
				return i
			}
		}
	}
	return def
}

// ordered is a JSON object that keeps vLLM's key order.
type ordered []kv

type kv struct {
	k string
	v any
}

func (o ordered) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, e := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(e.k)
		v, err := json.Marshal(e.v)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// wobble is a fixed pattern of relative deviations, so repeated
// iterations differ the way real ones do, deterministically.
var wobble = []float64{0.004, -0.002, 0.001, -0.005, 0.003, 0.0, -0.001, 0.002}

func throughput(flags map[string]string, speed float64, stdout io.Writer) (any, string) {
	in := intFlag(flags, 1024, "--random-input-len", "--input-len")
	out := intFlag(flags, 128, "--random-output-len", "--output-len")
	n := intFlag(flags, 1000, "--num-prompts")
	elapsed := float64(n) * (float64(in)/(speed*50) + float64(out)/speed)
	total := n * (in + out)
	fmt.Fprintf(stdout, "Throughput: %.2f requests/s, %.2f total tokens/s, %.2f output tokens/s\n",
		float64(n)/elapsed, float64(total)/elapsed, float64(n*out)/elapsed)
	fmt.Fprintf(stdout, "Total num prompt tokens:  %d\n", n*in)
	fmt.Fprintf(stdout, "Total num output tokens:  %d\n", n*out)
	return ordered{
		{"elapsed_time", elapsed},
		{"num_requests", n},
		{"total_num_tokens", total},
		{"requests_per_second", float64(n) / elapsed},
		{"tokens_per_second", float64(total) / elapsed},
	}, flags["--output-json"]
}

func latency(flags map[string]string, speed float64, stdout io.Writer) (any, string) {
	in := intFlag(flags, 32, "--input-len")
	out := intFlag(flags, 128, "--output-len")
	iters := intFlag(flags, 30, "--num-iters")
	base := float64(in)/(speed*50) + float64(out)/speed
	lat := make([]float64, iters)
	mean := 0.0
	for i := range lat {
		lat[i] = base * (1 + wobble[i%len(wobble)])
		mean += lat[i]
	}
	mean /= float64(iters)
	sd := 0.0
	for _, x := range lat {
		sd += (x - mean) * (x - mean)
	}
	sd = math.Sqrt(sd / float64(iters))
	pcts := ordered{}
	fmt.Fprintf(stdout, "Avg latency: %v seconds\n", mean)
	for _, p := range []int{10, 25, 50, 75, 90, 99} {
		v := percentile(lat, float64(p))
		pcts = append(pcts, kv{strconv.Itoa(p), v})
		fmt.Fprintf(stdout, "%d%% percentile latency: %v seconds\n", p, v)
	}
	return ordered{
		{"avg_latency", mean},
		{"std_latency", sd},
		{"latencies", lat},
		{"percentiles", pcts},
	}, flags["--output-json"]
}

// percentile is numpy's default (linear) percentile.
func percentile(xs []float64, p float64) float64 {
	s := append([]float64(nil), xs...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	if len(s) == 0 {
		return 0
	}
	r := p / 100 * float64(len(s)-1)
	lo := int(math.Floor(r))
	hi := int(math.Ceil(r))
	return s[lo] + (s[hi]-s[lo])*(r-float64(lo))
}

func serve(flags map[string]string, speed float64, stdout, stderr io.Writer) (any, string, int) {
	in := intFlag(flags, 1024, "--random-input-len", "--input-len")
	out := intFlag(flags, 128, "--random-output-len", "--output-len")
	n := intFlag(flags, 1000, "--num-prompts")
	conc := intFlag(flags, 1, "--max-concurrency")
	if conc < 1 {
		conc = 1
	}
	model := flags["--model"]
	if model == "" {
		model = "standin/model"
	}
	ttft := float64(in) / (speed * 50)
	tpot := 1 / speed
	e2el := ttft + tpot*float64(out-1)
	duration := e2el * float64(n) / float64(conc)
	ttfts := make([]float64, n)
	lats := make([]float64, n)
	outLens := make([]int, n)
	inLens := make([]int, n)
	itls := make([][]float64, n)
	for i := 0; i < n; i++ {
		w := 1 + wobble[i%len(wobble)]
		ttfts[i] = ttft * w
		lats[i] = ttfts[i] + tpot*w*float64(out-1)
		outLens[i], inLens[i] = out, in
		gaps := make([]float64, out-1)
		for j := range gaps {
			gaps[j] = tpot * w
		}
		itls[i] = gaps
	}
	backend := flags["--backend"]
	if backend == "" {
		backend = "openai"
	}
	fmt.Fprintln(stdout, "============ Serving Benchmark Result ============")
	fmt.Fprintf(stdout, "%-40s %-10d\n", "Successful requests:", n)
	fmt.Fprintf(stdout, "%-40s %-10.2f\n", "Benchmark duration (s):", duration)
	fmt.Fprintf(stdout, "%-40s %-10d\n", "Total input tokens:", n*in)
	fmt.Fprintf(stdout, "%-40s %-10d\n", "Total generated tokens:", n*out)
	fmt.Fprintf(stdout, "%-40s %-10.2f\n", "Request throughput (req/s):", float64(n)/duration)
	fmt.Fprintf(stdout, "%-40s %-10.2f\n", "Output token throughput (tok/s):", float64(n*out)/duration)
	fmt.Fprintf(stdout, "%-40s %-10.2f\n", "Total Token throughput (tok/s):", float64(n*(in+out))/duration)
	fmt.Fprintln(stdout, "==================================================")
	res := ordered{
		{"date", "20260801-101500"},
		{"endpoint_type", backend},
		{"backend", backend},
		{"label", nil},
		{"model_id", model},
		{"tokenizer_id", model},
		{"num_prompts", n},
		{"request_rate", "inf"},
		{"burstiness", 1.0},
		{"max_concurrency", conc},
		{"duration", duration},
		{"completed", n},
		{"failed", 0},
		{"total_input_tokens", n * in},
		{"total_output_tokens", n * out},
		{"request_throughput", float64(n) / duration},
		{"request_goodput", nil},
		{"output_throughput", float64(n*out) / duration},
		{"total_token_throughput", float64(n*(in+out)) / duration},
		{"max_output_tokens_per_s", speed * float64(conc)},
		{"max_concurrent_requests", conc},
		{"rtfx", 0.0},
		{"mean_ttft_ms", ttft * 1000}, {"median_ttft_ms", ttft * 1000}, {"std_ttft_ms", 0.0}, {"p99_ttft_ms", percentile(ttfts, 99) * 1000},
		{"mean_tpot_ms", tpot * 1000}, {"median_tpot_ms", tpot * 1000}, {"std_tpot_ms", 0.0}, {"p99_tpot_ms", tpot * 1000 * 1.004},
		{"mean_itl_ms", tpot * 1000}, {"median_itl_ms", tpot * 1000}, {"std_itl_ms", 0.0}, {"p99_itl_ms", tpot * 1000 * 1.004},
		{"latencies", lats},
	}
	if flags["--save-detailed"] == "true" {
		res = append(res, kv{"input_lens", inLens}, kv{"output_lens", outLens}, kv{"ttfts", ttfts}, kv{"itls", itls})
	}
	if flags["--save-result"] != "true" {
		return res, "", 0
	}
	name := flags["--result-filename"]
	if name == "" {
		name = fmt.Sprintf("%s-infqps-concurrency%d-%s-20260801-101500.json", backend, conc, filepath.Base(model))
	}
	dir := flags["--result-dir"]
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			fmt.Fprintf(stderr, "Traceback (most recent call last):\n  File \"vllm/benchmarks/serve.py\", line 1, in main\nOSError: %v\n", err)
			return nil, "", 1
		}
	}
	return res, filepath.Join(dir, name), 0
}

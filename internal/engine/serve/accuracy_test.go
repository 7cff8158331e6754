package serve_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/engine/llamacpp/testengine"
	"github.com/rigorbench/rigor/internal/loadgen"
)

// TestAccuracy measures the load generator against the test engine's
// llama-server, which streams on a known schedule (first token at TTFT,
// token k at TTFT + k·ITL, absolute times): how far the measured TTFT and
// inter-token gaps are from the schedule at concurrency 1 and 64, and what
// the generator itself costs (CPU, memory) at 64 streams. It asserts
// nothing about time (the figures go to BENCHMARKS.md); it runs only with
// RIGOR_SERVE_ACCURACY=1:
//
//	RIGOR_SERVE_ACCURACY=1 go test ./engine/serve -run Accuracy -v
func TestAccuracy(t *testing.T) {
	if os.Getenv("RIGOR_SERVE_ACCURACY") == "" {
		t.Skip("set RIGOR_SERVE_ACCURACY=1 to measure")
	}
	url, ttft, itl := scheduledServer(t)
	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("load before: %s", load)
	for _, c := range []int{1, 64} {
		cfg := loadgen.Config{URL: url, Endpoint: loadgen.Completions, Requests: max(200, 10*c), Concurrency: c,
			InputLen: 32, OutputLen: 64, IgnoreEOS: true, Warmup: c}
		var before, after syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &before)
		runtime.GC()
		var ms runtime.MemStats
		reqs, d, err := loadgen.Run(context.Background(), cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		syscall.Getrusage(syscall.RUSAGE_SELF, &after)
		runtime.ReadMemStats(&ms)
		res := loadgen.Summarize(&cfg, reqs, d)
		var dTTFT, dITL []float64
		for _, r := range reqs {
			if !r.OK() {
				continue
			}
			dTTFT = append(dTTFT, (r.TTFT-ttft.Seconds())*1000)
			for _, g := range r.ITL {
				dITL = append(dITL, (g-itl.Seconds())*1000)
			}
		}
		cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
		load, _ := os.ReadFile("/proc/loadavg")
		t.Logf("concurrency %d: %d requests (%d failed) in %.2fs, %.0f output tok/s; load %s", c, res.Completed+res.Failed, res.Failed, d.Seconds(), res.OutputThroughput, load)
		t.Logf("  TTFT − %v (ms): %s", ttft, dist(dTTFT))
		t.Logf("  ITL − %v (ms): %s", itl, dist(dITL))
		t.Logf("  generator CPU %.2fs over %.2fs wall (%.0f%% of one core); heap in use %.1f MiB, sys %.1f MiB, max RSS %.1f MiB",
			cpu.Seconds(), d.Seconds(), 100*cpu.Seconds()/d.Seconds(), float64(ms.HeapInuse)/(1<<20), float64(ms.Sys)/(1<<20), float64(after.Maxrss)/1024)
	}
}

// scheduledServer builds the test engine's llama-server (C, cmake),
// starts it streaming on its schedule (first token at ttft, token k at
// ttft + k·itl) and returns its base URL; it is killed when t ends.
func scheduledServer(t *testing.T) (url string, ttft, itl time.Duration) {
	t.Helper()
	if _, err := exec.LookPath("cmake"); err != nil {
		t.Skip("cmake is not installed")
	}
	dir := filepath.Join(t.TempDir(), "engine")
	if _, err := testengine.Write(dir, testengine.Options{}); err != nil {
		t.Fatal(err)
	}
	build := filepath.Join(dir, "build")
	for _, args := range [][]string{{"-S", dir, "-B", build, "-DCMAKE_BUILD_TYPE=Release"}, {"--build", build, "--target", "llama-server"}} {
		if out, err := exec.Command("cmake", args...).CombinedOutput(); err != nil {
			t.Fatalf("cmake %v: %v\n%s", args, err, out)
		}
	}
	model := filepath.Join(t.TempDir(), "m.gguf")
	os.WriteFile(model, []byte("GGUF"), 0o644)
	ttft, itl = 20*time.Millisecond, 10*time.Millisecond
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	srv := exec.Command(filepath.Join(build, "bin", "llama-server"), "-m", model, "--port", fmt.Sprint(port))
	srv.Env = append(os.Environ(), fmt.Sprintf("RIGOR_TESTENGINE_SERVER_TTFT_MS=%d", ttft.Milliseconds()),
		fmt.Sprintf("RIGOR_TESTENGINE_SERVER_ITL_MS=%d", itl.Milliseconds()))
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	url = fmt.Sprintf("http://127.0.0.1:%d", port)
	if err := loadgen.WaitHealthy(context.Background(), url+"/health", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	return url, ttft, itl
}

// dist is the mean, median, p99 and largest of xs, and the share within
// 0.5 ms in absolute value.
func dist(xs []float64) string {
	if len(xs) == 0 {
		return "none"
	}
	sort.Float64s(xs)
	var s float64
	in := 0
	for _, x := range xs {
		s += x
		if math.Abs(x) <= 0.5 {
			in++
		}
	}
	return fmt.Sprintf("n=%d mean %+.3f, median %+.3f, p99 %+.3f, max %+.3f; within ±0.5 ms: %.1f%%",
		len(xs), s/float64(len(xs)), loadgen.Percentile(xs, 50), loadgen.Percentile(xs, 99), xs[len(xs)-1], 100*float64(in)/float64(len(xs)))
}

// TestGeneratorCost sets rigor's load generator side by side with a
// client in the style of vLLM's `bench serve` (Python, asyncio and
// aiohttp: testdata/aiohttp_client.py, the same definitions of TTFT and
// ITL) under the same load against the same scheduled server: 64 streams,
// 640 requests of 64 tokens. It reports each one's CPU time, peak memory
// and timing error for BENCHMARKS.md and asserts nothing about time. It
// runs only with RIGOR_SERVE_ACCURACY=1 and needs python3 with aiohttp
// (Debian: apt-get install python3-aiohttp; RIGOR_PYTHON=/usr/bin/python3
// when another python3 comes first on PATH):
//
//	RIGOR_SERVE_ACCURACY=1 go test ./engine/serve -run GeneratorCost -v
func TestGeneratorCost(t *testing.T) {
	if os.Getenv("RIGOR_SERVE_ACCURACY") == "" {
		t.Skip("set RIGOR_SERVE_ACCURACY=1 to measure")
	}
	python := cmp.Or(os.Getenv("RIGOR_PYTHON"), "python3")
	if err := exec.Command(python, "-c", "import aiohttp").Run(); err != nil {
		t.Skipf("%s cannot import aiohttp (apt-get install python3-aiohttp; RIGOR_PYTHON names another interpreter)", python)
	}
	url, ttft, itl := scheduledServer(t)
	const conc, requests, words, tokens = 64, 640, 32, 64
	for round := 1; round <= 3; round++ {
		load, _ := os.ReadFile("/proc/loadavg")
		t.Logf("round %d, load %s", round, load)

		// rigor's generator runs in this process (the server is another).
		cfg := loadgen.Config{URL: url, Endpoint: loadgen.Completions, Requests: requests, Concurrency: conc,
			InputLen: words, OutputLen: tokens, IgnoreEOS: true, Warmup: conc}
		var before, after syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &before)
		reqs, d, err := loadgen.Run(context.Background(), cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		syscall.Getrusage(syscall.RUSAGE_SELF, &after)
		res := loadgen.Summarize(&cfg, reqs, d)
		var dTTFT, dITL []float64
		for _, r := range reqs {
			if r.OK() {
				dTTFT = append(dTTFT, (r.TTFT-ttft.Seconds())*1000)
				for _, g := range r.ITL {
					dITL = append(dITL, (g-itl.Seconds())*1000)
				}
			}
		}
		cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
		t.Logf("  rigor loadgen: %d completed, %d failed in %.2fs (%.0f output tok/s); CPU %.2fs (%.0f%% of one core); max RSS of the test process %.1f MiB",
			res.Completed, res.Failed, d.Seconds(), res.OutputThroughput, cpu.Seconds(), 100*cpu.Seconds()/d.Seconds(), float64(after.Maxrss)/1024)
		t.Logf("    TTFT − %v (ms): %s", ttft, dist(dTTFT))
		t.Logf("    ITL − %v (ms): %s", itl, dist(dITL))

		// The aiohttp client, a process of its own.
		cmd := exec.Command(python, filepath.Join("testdata", "aiohttp_client.py"), url,
			fmt.Sprint(requests), fmt.Sprint(conc), fmt.Sprint(words), fmt.Sprint(tokens))
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("aiohttp client: %v", err)
		}
		var py struct {
			Completed, Failed int
			Duration          float64
			TTFT, ITL         []float64
		}
		if err := json.Unmarshal(out, &py); err != nil {
			t.Fatalf("aiohttp client output: %v", err)
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		pcpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		dTTFT, dITL = nil, nil
		for _, x := range py.TTFT {
			dTTFT = append(dTTFT, (x-ttft.Seconds())*1000)
		}
		for _, x := range py.ITL {
			dITL = append(dITL, (x-itl.Seconds())*1000)
		}
		t.Logf("  aiohttp client: %d completed, %d failed in %.2fs (%.0f output tok/s); CPU %.2fs for the whole process (start-up and warm-up included); max RSS %.1f MiB",
			py.Completed, py.Failed, py.Duration, float64(py.Completed*tokens)/py.Duration, pcpu.Seconds(), float64(ru.Maxrss)/1024)
		t.Logf("    TTFT − %v (ms): %s", ttft, dist(dTTFT))
		t.Logf("    ITL − %v (ms): %s", itl, dist(dITL))
	}
}

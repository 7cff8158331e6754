package report

import (
	"crypto/sha1"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/rig"
)

// genExperiment describes one experiment of a generated results
// repository.
type genExperiment struct {
	id      string
	family  string
	rig     *rig.Rig
	runs    int
	axes    []genAxis // the sweep; nil for one point
	metrics []genMetric
	// every commitEvery runs the engine commit moves on (a lock drift);
	// at driverAt the driver changes (a rig drift).
	commitEvery, driverAt int
	// every failEvery-th run fails before decode.
	failEvery int
}

type genAxis struct {
	field  string
	values []any
}

type genMetric struct {
	name, test, unit, dir string
	base                  float64
}

var (
	rig4090 = &rig.Rig{Hostname: "bench-1", AcceleratorModelName: "NVIDIA GeForce RTX 4090", AcceleratorsPerNode: 2,
		AcceleratorMemoryCapacityGB: 24, AcceleratorDriverVersion: "580.82.07", HostProcessorModelName: "AMD Ryzen 9 7950X 16-Core Processor",
		HostProcessorCoreCount: 32, HostMemoryCapacityGB: 93.4, OperatingSystem: "Ubuntu 24.04.3 LTS", Kernel: "6.8.0-79-generic", Arch: "linux/amd64"}
	rigB70 = &rig.Rig{Hostname: "b70-box", AcceleratorModelName: "Intel Arc Pro B70", AcceleratorsPerNode: 4,
		AcceleratorMemoryCapacityGB: 32, AcceleratorDriverVersion: "1.6.33578", HostProcessorModelName: "AMD Ryzen Threadripper 7960X",
		HostProcessorCoreCount: 48, HostMemoryCapacityGB: 251.5, OperatingSystem: "Ubuntu 24.04.4 LTS", Kernel: "6.14.0-37-generic", Arch: "linux/amd64"}
	rigCPU = &rig.Rig{Hostname: "ci-runner", HostProcessorModelName: "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz",
		HostProcessorCoreCount: 2, HostMemoryCapacityGB: 23.4, OperatingSystem: "Debian GNU/Linux 12 (bookworm)", Kernel: "6.1.0-41-amd64", Arch: "linux/amd64"}
)

var llamaMetrics = []genMetric{
	{"tokSOut", "tg128", "tok/s", "higher", 52},
	{"tokSPrompt", "pp512", "tok/s", "higher", 4000},
}

// realisticRepo is the shape of a results repository after a year of use,
// 10,000 runs in all: long histories of two baselines, a two-axis ubatch
// sweep on four GPUs, a thread sweep on a CPU, vLLM throughput runs, and
// ten small experiments. Engines move on, a driver is updated, some runs
// fail, as in the records under results/ of this repository.
func realisticRepo() []genExperiment {
	exps := []genExperiment{
		{id: "qwen25-7b-4090/base", family: "llama.cpp", rig: rig4090, runs: 2000, metrics: llamaMetrics, commitEvery: 150, driverAt: 1200, failEvery: 97},
		{id: "qwen25-7b-4090/flashAttn", family: "llama.cpp", rig: rig4090, runs: 1000, metrics: llamaMetrics, commitEvery: 150, driverAt: 600, failEvery: 131},
		{id: "minimax-m27-b70/ubSweep", family: "ik_llama.cpp", rig: rigB70, runs: 3000,
			axes:    []genAxis{{"flags.ub", []any{16, 32, 64, 128, 256, 512}}, {"flags.nkvo", []any{0, 1}}},
			metrics: []genMetric{{"tokSOut", "tg64", "tok/s", "higher", 16}}, commitEvery: 400, failEvery: 211},
		{id: "llama31-8b-cpu/threads", family: "llama.cpp", rig: rigCPU, runs: 1000,
			axes:    []genAxis{{"flags.t", []any{1, 2, 4, 8, 16}}},
			metrics: []genMetric{{"tokSOut", "tg32", "tok/s", "higher", 9}, {"tokSPrompt", "pp128", "tok/s", "higher", 60}}, commitEvery: 250},
		{id: "minimax-m27-int4-b70/vllmThroughput", family: "vllm", rig: rigB70, runs: 1000,
			metrics: []genMetric{{"tokSTotal", "throughput", "tok/s", "higher", 70}, {"tokSOut", "throughput", "tok/s", "higher", 35},
				{"latencyMs", "throughput", "ms", "lower", 9000}}, commitEvery: 500, failEvery: 173},
	}
	for i := range 10 {
		exps = append(exps, genExperiment{id: fmt.Sprintf("smoke/variant%02d", i), family: "node-llama-cpp", rig: rigCPU, runs: 200,
			metrics:     []genMetric{{"tokSOut", "tg16", "tok/s", "higher", 5000 + 100*float64(i)}, {"tokSPrompt", "pp32", "tok/s", "higher", 8000}},
			commitEvery: 80})
	}
	return exps
}

// genRuns makes the runs of the experiments, scaled by scale (1: 10,000
// runs), deterministically.
func genRuns(exps []genExperiment, scale float64) []*results.Run {
	t0 := time.Date(2025, 12, 1, 8, 0, 0, 0, time.UTC)
	rnd := rand.New(rand.NewPCG(1, 2))
	var out []*results.Run
	for _, e := range exps {
		n := max(1, int(float64(e.runs)*scale))
		points := [][]any{{}}
		for _, a := range e.axes {
			var next [][]any
			for _, p := range points {
				for _, v := range a.values {
					next = append(next, append(append([]any(nil), p...), v))
				}
			}
			points = next
		}
		for i := range n {
			pt := points[i%len(points)]
			start := t0.Add(time.Duration(float64(i)/float64(n)*365*24) * time.Hour).Add(time.Duration(i%len(points)) * 7 * time.Minute)
			commit := i
			if e.commitEvery > 0 {
				commit = i / max(1, int(float64(e.commitEvery)*scale))
			}
			g := *e.rig
			if e.driverAt > 0 && i >= int(float64(e.driverAt)*scale) && g.AcceleratorDriverVersion != "" {
				g.AcceleratorDriverVersion = "590.44.01"
			}
			flags := map[string]any{"ngl": 99, "fa": 1, "ub": 512, "t": 8}
			swept := map[string]any{}
			label := ""
			for j, a := range e.axes {
				name := a.field[len("flags."):]
				flags[name] = pt[j]
				swept[a.field] = pt[j]
				if label != "" {
					label += ","
				}
				label += name + "=" + fmt.Sprint(pt[j])
			}
			spec, _ := json.Marshal(map[string]any{
				"model":  map[string]any{"hf": "bartowski/Qwen2.5-7B-Instruct-GGUF", "revision": "main", "files": []string{"Qwen2.5-7B-Instruct-Q4_K_M.gguf"}, "quant": "Q4_K_M"},
				"engine": map[string]any{"family": e.family, "source": map[string]any{"git": "https://github.com/ggml-org/llama.cpp", "ref": "b6123"}, "build": map[string]any{"backend": "cuda"}},
				"bench":  map[string]any{"p": 512, "n": 128, "r": 5},
				"flags":  flags,
				"env":    map[string]any{"CUDA_SCALE_LAUNCH_QUEUES": "4x"},
			})
			point := e.id
			if label != "" {
				point += "[" + label + "]"
			}
			commitHex := fmt.Sprintf("%x", sha1.Sum([]byte(e.id+strconv.Itoa(commit))))
			r := &results.Run{Schema: results.SchemaVersion, RigorVersion: "0.1.0",
				ID:         start.Format("20060102T150405Z") + "-" + strconv.FormatInt(int64(1000+i), 16),
				Experiment: e.id, Point: point, Swept: swept,
				SpecDigest: fmt.Sprintf("sha256:%064x", len(label)), LockDigest: fmt.Sprintf("sha256:%064x", commit),
				Spec: spec,
				Engine: results.Engine{Family: e.family, Source: "https://github.com/ggml-org/llama.cpp", Ref: "b6123", Commit: commitHex,
					BuildID: "sha256:" + commitHex[:16], Backend: "cuda"},
				Model: results.Model{HF: "bartowski/Qwen2.5-7B-Instruct-GGUF", Revision: "main", Commit: "bd8f2c6e0a1b3c4d5e6f7a8b9c0d1e2f3a4b5c6d", Quant: "Q4_K_M",
					Files: []results.File{{Path: "Qwen2.5-7B-Instruct-Q4_K_M.gguf", Size: 4683073952, SHA256: "6a1a2eb6d15622bf3c96857206351ba97e1af16c30d7a74ee38970e434e9407e"}}},
				Processes: []results.Process{{Role: "bench", Argv: []string{"llama-bench", "-m", "/models/Qwen2.5-7B-Instruct-Q4_K_M.gguf",
					"-p", "512", "-n", "128", "-r", "5", "-o", "json", "-ngl", "99"}, Env: map[string]string{"CUDA_SCALE_LAUNCH_QUEUES": "4x"}}},
				Rig:   &g,
				Start: start, End: start.Add(4 * time.Minute), Status: results.StatusOK,
			}
			if fe := max(5, int(float64(e.failEvery)*scale)); e.failEvery > 0 && i%fe == fe-1 {
				r.Status, r.Error = results.StatusFailed, "engine failed before decode: cudaMalloc failed: out of memory"
				r.LogTail = "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 20480.00 MiB on device 0: cudaMalloc failed: out of memory"
				out = append(out, r)
				continue
			}
			// A sweep's value grows with the swept numbers; each commit
			// shifts it a little, as engine changes do.
			gain := 1 + 0.01*float64(commit%5)
			for j := range pt {
				if v, ok := pt[j].(int); ok {
					gain *= 1 + 0.08*math.Log2(float64(v)+1)
				}
			}
			for _, m := range e.metrics {
				c := m.base * gain
				if m.dir == "lower" {
					c = m.base / gain
				}
				samples := make([]float64, 5)
				for k := range samples {
					samples[k] = c * (1 + 0.006*rnd.NormFloat64())
				}
				var sum float64
				for _, s := range samples {
					sum += s
				}
				r.Metrics = append(r.Metrics, results.Metric{Name: m.name, Test: m.test, Unit: m.unit, Direction: m.dir,
					Value: sum / 5, Samples: samples})
			}
			out = append(out, r)
		}
	}
	return out
}

// Package comparetest holds the recorded runs that the tests of
// internal/compare and of its renderers (internal/report/text) share: seed
// 000's two records, an ub sweep measured twice, a month of one
// experiment's history. It returns results, not compare's types, so that
// compare's own tests can use it.
package comparetest

import (
	"embed"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/rig"
)

//go:embed testdata
var testdata embed.FS

// Side is a label and its runs, convertible to compare.Side.
type Side struct {
	Label string
	Runs  []results.Run
}

// LoadRun reads a record from this package's testdata ("seed000/baseline.json").
func LoadRun(t testing.TB, name string) results.Run {
	t.Helper()
	r, err := Record(name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Record reads a record from this package's testdata.
func Record(name string) (results.Run, error) {
	var r results.Run
	b, err := testdata.ReadFile(path.Join("testdata", name))
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("decoding %s: %v", name, err)
	}
	return r, nil
}

// SeedSides are seed 000's baseline and K/Q/V offload r3 runs, as two
// recorded results.
func SeedSides(t testing.TB) (Side, Side) {
	return Side{"baseline", []results.Run{LoadRun(t, "seed000/baseline.json")}},
		Side{"kvoffload", []results.Run{LoadRun(t, "seed000/kvoffload.json")}}
}

// Noise is a fixed pattern of relative deviations (in percent) standing in
// for run-to-run Noise, so that goldens do not depend on a random number
// generator's implementation.
var Noise = []float64{-0.8, 0.3, 1.1, -0.2, 0.5, -1.0, 0.9, -0.4, 0.1, -0.6, 0.7, -0.3}

// Samples returns n values around center with the Noise pattern scaled to
// spread percent, starting at offset.
func Samples(center, spread float64, n, offset int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = center * (1 + Noise[(offset+i)%len(Noise)]*spread/100)
	}
	return x
}

func SpecJSON(flags map[string]any, extra map[string]any) json.RawMessage {
	s := map[string]any{
		"model":  map[string]any{"hf": "example/Demo-GGUF", "revision": "main", "quant": "Q4_K_M"},
		"engine": map[string]any{"family": "llama.cpp", "source": map[string]any{"git": "https://example.invalid/llama.cpp", "ref": "master"}},
		"bench":  map[string]any{"p": 512, "n": 128, "r": 5},
		"flags":  flags,
		"env":    map[string]any{},
	}
	for k, v := range extra {
		s[k] = v
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return b
}

func DemoRig(driver, kernel string) *rig.Rig {
	return &rig.Rig{Hostname: "bench-1", AcceleratorModelName: "NVIDIA GeForce RTX 4090", AcceleratorsPerNode: 2,
		AcceleratorMemoryCapacityGB: 24, AcceleratorDriverVersion: driver,
		HostProcessorModelName: "AMD Ryzen 9 7950X", HostProcessorCoreCount: 32, OperatingSystem: "Ubuntu 24.04.4 LTS",
		Kernel: kernel}
}

const (
	CommitMain  = "0104b15155a1e6c1c9f0d7e2b3a4c5d6e7f80912"
	CommitPatch = "8337e4cd2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c"
	ModelHash   = "3f9a1c2b4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8"
)

// SweepSides builds an ub sweep measured twice: A on the main engine, B on
// a patched one with a newer driver. Per point and side, two runs of five
// repetitions. B gains 8% tokSOut at ub=16, nothing at ub=32, loses 6% at
// ub=64; ub=128 is only in A, ub=8 only in B; one B run failed; the two A
// runs at ub=16 ran on different kernels.
func SweepSides() (Side, Side) {
	type pt struct {
		ub            int
		out, prompt   float64 // centers
		ttft          float64
		outB, promptB float64
		ttftB         float64
		onlyA, onlyB  bool
	}
	pts := []pt{
		{ub: 8, onlyB: true, outB: 40, promptB: 900, ttftB: 600},
		{ub: 16, out: 50, prompt: 1000, ttft: 520, outB: 54, promptB: 1003, ttftB: 470},
		{ub: 32, out: 52, prompt: 1500, ttft: 350, outB: 52.05, promptB: 1510, ttftB: 351},
		{ub: 64, out: 53, prompt: 1800, ttft: 290, outB: 49.82, promptB: 1795, ttftB: 292},
		{ub: 128, onlyA: true, out: 53.5, prompt: 1900, ttft: 280},
	}
	base := time.Date(2026, 5, 8, 3, 0, 0, 0, time.UTC)
	mk := func(side string, i, rep int, p pt, out, prompt, ttft float64, commit, driver, kernel string) results.Run {
		start := base.Add(time.Duration(i*10+rep) * time.Minute)
		if side == "B" {
			start = start.Add(24 * time.Hour)
		}
		off := i*3 + rep*5
		return results.Run{
			Schema: 1, ID: fmt.Sprintf("%s-%s-ub%d-%d", start.Format("20060102T150405Z"), strings.ToLower(side), p.ub, rep),
			Experiment: "demo/ubsweep", Point: fmt.Sprintf("demo/ubsweep[ub=%d]", p.ub),
			Swept: map[string]any{"flags.ub": p.ub},
			Spec:  SpecJSON(map[string]any{"ngl": 99, "ub": p.ub, "fa": 1}, nil),
			Engine: results.Engine{Family: "llama.cpp", Source: "https://example.invalid/llama.cpp", Ref: "master",
				Commit: commit, Backend: "cuda"},
			Model: results.Model{HF: "example/Demo-GGUF", Revision: "main", Commit: "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678",
				Quant: "Q4_K_M", Files: []results.File{{Path: "demo-Q4_K_M.gguf", Size: 4_368_439_584, SHA256: ModelHash}}},
			Rig: DemoRig(driver, kernel), Start: start, End: start.Add(4 * time.Minute), Status: results.StatusOK,
			Metrics: []results.Metric{
				{Name: "tokSPrompt", Test: "pp512", Unit: "tok/s", Direction: "higher", Samples: Samples(prompt, 1.2, 5, off+7)},
				{Name: "tokSOut", Test: "tg128", Unit: "tok/s", Direction: "higher", Samples: Samples(out, 1.5, 5, off)},
				{Name: "ttftMs", Unit: "ms", Direction: "lower", Samples: Samples(ttft, 2, 5, off+3)},
			},
		}
	}
	var a, b []results.Run
	for i, p := range pts {
		for rep := 0; rep < 2; rep++ {
			if !p.onlyB {
				kernel := "6.8.0-60-generic"
				if p.ub == 16 && rep == 0 {
					kernel = "6.8.0-59-generic"
				}
				a = append(a, mk("A", i, rep, p, p.out, p.prompt, p.ttft, CommitMain, "570.133.07", kernel))
			}
			if !p.onlyA {
				b = append(b, mk("B", i, rep, p, p.outB, p.promptB, p.ttftB, CommitPatch, "575.51.03", "6.8.0-60-generic"))
			}
		}
	}
	// A failed run on B: its (absent) Samples must not count.
	failed := mk("B", 9, 0, pts[2], 0, 0, 0, CommitPatch, "575.51.03", "6.8.0-60-generic")
	failed.Status, failed.Error, failed.Metrics = results.StatusFailed, "llama-bench exited 1: context creation failed", nil
	b = append(b, failed)
	for i := range b {
		b[i].Engine.Patches = []results.Patch{{Path: "patches/faster-mmq.patch", SHA256: "9c0d2e4f6a8b1c3d5e7f9a0b2c4d6e8f0a1b3c5d7e9f1a2b4c6d8e0f2a4b6c8d"}}
	}
	return Side{"main", a}, Side{"patched", b}
}

// HistoryRuns builds eight runs of one experiment over a month: the engine
// commit moves after the third run (a new lock), the driver is updated
// before the sixth, the fifth fails.
func HistoryRuns() []results.Run {
	base := time.Date(2026, 5, 8, 3, 27, 53, 0, time.UTC)
	centers := []float64{16.38, 16.41, 16.35, 16.9, 0, 17.02, 17.1, 16.98}
	var runs []results.Run
	for i, c := range centers {
		start := base.Add(time.Duration(i) * 97 * time.Hour)
		commit, lock, driver := CommitMain, "sha256:1111aaaa", "1.3.29735"
		if i >= 3 {
			commit, lock = CommitPatch, "sha256:2222bbbb"
		}
		if i >= 5 {
			driver = "1.3.30049"
		}
		r := results.Run{
			Schema: 1, ID: start.Format("20060102T150405Z") + fmt.Sprintf("-%04x", i*4099%65536),
			Experiment: "minimax-m27-b70/kvoffload", Point: "minimax-m27-b70/kvoffload",
			SpecDigest: "sha256:5pec", LockDigest: lock,
			Spec:   SpecJSON(map[string]any{"ngl": 99, "nkvo": 0, "ub": 32}, nil),
			Engine: results.Engine{Family: "ik_llama.cpp", Ref: "main", Commit: commit, Backend: "sycl"},
			Model: results.Model{HF: "unsloth/MiniMax-M2.7-GGUF", Quant: "UD-IQ4_XS",
				Files: []results.File{{Path: "UD-IQ4_XS/MiniMax-M2.7-UD-IQ4_XS-00001-of-00004.gguf", SHA256: ModelHash}}},
			Rig: &rig.Rig{Hostname: "b70-rig", AcceleratorModelName: "Intel Arc Pro B70", AcceleratorsPerNode: 4,
				AcceleratorDriverVersion: driver, OperatingSystem: "Ubuntu 24.04.4 LTS", Kernel: "6.14.0-15-generic"},
			Start: start, End: start.Add(3 * time.Minute), Status: results.StatusOK,
		}
		if c == 0 {
			r.Status, r.Error = results.StatusFailed, "context creation failed before decode"
		} else {
			r.Metrics = []results.Metric{
				{Name: "tokSOut", Test: "tg64", Unit: "tok/s", Direction: "higher", Samples: Samples(c, 0.7, 3, i)},
				{Name: "tokSPrompt", Test: "pp512", Unit: "tok/s", Direction: "higher", Samples: Samples(c*9.5, 1, 3, i+4)},
			}
		}
		runs = append(runs, r)
	}
	return runs
}

// RoundRuns builds one side's runs of one invocation: round i runs at
// center·load[i], its repetitions spread by ±0.2%.
func RoundRuns(exp, inv string, center float64, load []float64) []results.Run {
	var runs []results.Run
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i, f := range load {
		c := center * f
		runs = append(runs, results.Run{ID: fmt.Sprintf("%s-%d", exp, i), Experiment: exp, Point: exp, Status: "ok",
			Invocation: inv, Round: i + 1, Start: start.Add(time.Duration(i) * time.Minute),
			Metrics: []results.Metric{{Name: "tokSOut", Test: "tg64", Unit: "tok/s", Direction: "higher",
				Samples: []float64{c * 0.998, c, c * 1.002}}}})
	}
	return runs
}

// BusyRounds is a busy machine: the load changes from round to round and halves the
// throughput of both sides alike.
var BusyRounds = []float64{1.0, 0.55, 0.95, 0.6, 1.0}

//go:build unix

package results

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestGenerateRepository writes a results repository for the scale
// measurements in BENCHMARKS.md, outside the checkout:
//
//	RIGOR_GEN_RESULTS=/tmp/r100k RIGOR_GEN_N=100000 go test -run TestGenerateRepository -timeout 60m ./internal/results
//
// It makes a module (cue.mod/module.cue) with N records of the shape a
// run writes (the effective spec of a seed experiment, engine, model
// files, the rig, both processes, tokSOut and tokSPrompt with three
// samples each; about 5.5 KB) and two raw outputs each, committed and
// packed with the git CLI. A tenth of the records are runs of one
// 50-point sweep (lab/sweepA), another tenth of a second one
// (lab/sweepB); the rest are experiments of 50 runs (lab/gNNN/eNN), one in
// fifty runs failed, the engine commit changes every 500 runs.
func TestGenerateRepository(t *testing.T) {
	dir := os.Getenv("RIGOR_GEN_RESULTS")
	if dir == "" {
		t.Skip("RIGOR_GEN_RESULTS is not set")
	}
	n, err := strconv.Atoi(os.Getenv("RIGOR_GEN_N"))
	if err != nil || n < 10 {
		t.Fatalf("RIGOR_GEN_N=%q: want a number of records, at least 10", os.Getenv("RIGOR_GEN_N"))
	}
	if err := os.MkdirAll(filepath.Join(dir, "cue.mod"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "cue.mod", "module.cue"), []byte("module: \"example.com/lab@v0\"\nlanguage: version: \"v0.17.0\"\n"), 0o644)
	s := Open(dir)
	base := genTemplate(t)

	workers := runtime.GOMAXPROCS(0) * 2
	var wg sync.WaitGroup
	next := make(chan int, 256)
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := genRecord(s, base, i, n); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "gc.auto=0", "commit", "-q", "-m", fmt.Sprintf("%d records", n)}, {"gc", "-q"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=gen", "GIT_AUTHOR_EMAIL=gen@example.com",
			"GIT_COMMITTER_NAME=gen", "GIT_COMMITTER_EMAIL=gen@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// genTemplate is a run as rigor writes it, from the repository's own
// record of minimax-m27-b70/baseline with what a run adds (processes,
// a full rig, a second metric).
func genTemplate(t *testing.T) *Run {
	r, err := Load(filepath.Join("..", "..", "results", "minimax-m27-b70", "baseline", "20260508T032753Z-8e11ad.json"))
	if err != nil {
		t.Fatal(err)
	}
	tr := testRun("x", "x", t0, 1)
	r.Provenance, r.Unverified, r.Notes, r.Labels = nil, nil, "", nil
	r.LockDigest = tr.LockDigest
	r.Processes, r.Rig, r.Model = tr.Processes, tr.Rig, tr.Model
	r.Engine.Commit = tr.Engine.Commit
	r.Files = []string{"stderr", "stdout"}
	r.Model.Files[0].GGUF = map[string]any{"general.architecture": "minimax-m2", "general.name": "MiniMax-M2.7",
		"general.file_type": 30, "minimax-m2.block_count": 62, "minimax-m2.context_length": 196608,
		"minimax-m2.embedding_length": 3072, "minimax-m2.expert_count": 256, "minimax-m2.expert_used_count": 8,
		"minimax-m2.attention.head_count": 48, "minimax-m2.attention.head_count_kv": 8, "split.count": 4,
		"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "minimax-m2", "quantize.imatrix.file": "MiniMax-M2.7-GGUF/imatrix_unsloth.gguf",
		"quantize.imatrix.entries_count": 496, "quantize.imatrix.chunks_count": 720}
	r.Warnings = []string{"the rig's GPU clocks were not locked (nvidia-smi -lgc not available): expect more variance"}
	return r
}

func genRecord(s *Store, base *Run, i, n int) error {
	r := *base
	tenth := n / 10
	start := t0.Add(time.Duration(i) * 5 * time.Minute)
	r.Start, r.End = start, start.Add(3*time.Minute)
	r.ID = fmt.Sprintf("%s-%04x", start.Format("20060102T150405Z"), i%65536)
	switch {
	case i%10 == 0 && i/10 < tenth:
		r.Experiment = "lab/sweepA"
	case i%10 == 1 && i/10 < tenth:
		r.Experiment = "lab/sweepB"
	default:
		r.Experiment = fmt.Sprintf("lab/g%03d/e%02d", (i/50)/20, (i/50)%20)
	}
	r.Point, r.Swept = r.Experiment, nil
	if r.Experiment == "lab/sweepA" || r.Experiment == "lab/sweepB" {
		ub := 16 << ((i / 10) % 50 % 6)
		t := 1 + (i/10)%50/6
		r.Point = fmt.Sprintf("%s[t=%d,ub=%d]", r.Experiment, t, ub)
		r.Swept = map[string]any{"flags.ub": ub, "flags.t": t}
	}
	r.Engine.Commit = fmt.Sprintf("%040x", 0x9a26522+i/500)
	r.Status, r.Error = StatusOK, ""
	speed := 14 + math.Sin(float64(i)/97)
	r.Metrics = []Metric{
		{Name: "tokSOut", Test: "tg64", Unit: "tok/s", Direction: HigherIsBetter, Value: speed, Samples: []float64{speed - 0.2, speed, speed + 0.2}},
		{Name: "tokSPrompt", Test: "pp512", Unit: "tok/s", Direction: HigherIsBetter, Value: 20 * speed, Samples: []float64{20*speed - 3, 20 * speed, 20*speed + 3}},
	}
	if i%50 == 49 {
		r.Status, r.Error, r.Metrics = StatusFailed, "llama-bench exited with status 1: rpc-server on 127.0.0.1:50100 did not answer", nil
		r.LogTail = "ggml_sycl_init: found 4 SYCL devices\nrpc: connection refused\n"
	}
	data, err := json.MarshalIndent(&r, "", "  ")
	if err != nil {
		return err
	}
	p := s.RecordPath(r.Experiment, r.ID)
	raw := s.RawDir(r.Experiment, r.ID)
	if err := os.MkdirAll(raw, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(p, append(data, '\n'), 0o644); err != nil {
		return err
	}
	stdout := fmt.Sprintf(`[{"build_commit":"%s","model_type":"minimax-m2 230B.A10B IQ4_XS","n_prompt":512,"n_gen":0,"avg_ts":%f,"samples_ts":[%f,%f,%f]},`+
		`{"build_commit":"%s","model_type":"minimax-m2 230B.A10B IQ4_XS","n_prompt":0,"n_gen":64,"avg_ts":%f,"samples_ts":[%f,%f,%f]}]`+"\n",
		r.Engine.Commit[:7], 20*speed, 20*speed-3, 20*speed, 20*speed+3, r.Engine.Commit[:7], speed, speed-0.2, speed, speed+0.2)
	if err := os.WriteFile(filepath.Join(raw, "stdout"), []byte(stdout), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(raw, "stderr"), []byte("ggml_sycl_init: found 4 SYCL devices\nllama_model_load: loaded meta data with 44 key-value pairs\nmain: done\n"), 0o644)
}

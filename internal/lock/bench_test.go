package lock

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/hf"
	"github.com/rigorbench/rigor/internal/spec"
)

// benchFile writes a file of size bytes of pseudo-random data (a 1 MiB
// random block repeated) and returns its path.
func benchFile(b *testing.B, dir string, size int64, seed uint64) string {
	b.Helper()
	p := filepath.Join(dir, fmt.Sprintf("bench-%d.bin", seed))
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(seed, seed))
	for i := range block {
		block[i] = byte(rng.Uint32())
	}
	for n := int64(0); n < size; n += int64(len(block)) {
		k := min(int64(len(block)), size-n)
		if _, err := f.Write(block[:k]); err != nil {
			b.Fatal(err)
		}
	}
	return p
}

// benchSize is RIGOR_BENCH_HASH_MB megabytes (MiB), default def.
func benchSize(def int64) int64 {
	if v, err := strconv.ParseInt(os.Getenv("RIGOR_BENCH_HASH_MB"), 10, 64); err == nil && v > 0 {
		return v << 20
	}
	return def << 20
}

// BenchmarkHashFile hashes one 2 GiB file (from the page cache). After
// the timed loop it alternates HashFile and `openssl dgst -sha256` on the
// same file five times each and reports the best throughput of both and
// their ratio: on a shared, loaded machine the best of several runs is
// the figure least disturbed by other work.
func BenchmarkHashFile(b *testing.B) {
	size := benchSize(2048)
	p := benchFile(b, b.TempDir(), size, 1)
	ctx := context.Background()
	if _, _, err := HashFile(ctx, p); err != nil { // warm the page cache
		b.Fatal(err)
	}
	b.SetBytes(size)
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := HashFile(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if _, err := exec.LookPath("openssl"); err != nil {
		return
	}
	var ours, theirs time.Duration
	for i := range 5 {
		t0 := time.Now()
		sum, _, err := HashFile(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		d := time.Since(t0)
		if i == 0 || d < ours {
			ours = d
		}
		t0 = time.Now()
		out, err := exec.Command("openssl", "dgst", "-sha256", "-r", p).CombinedOutput()
		if err != nil {
			b.Fatalf("openssl: %v\n%s", err, out)
		}
		d = time.Since(t0)
		if i == 0 || d < theirs {
			theirs = d
		}
		if !strings.HasPrefix(string(out), sum) {
			b.Fatalf("openssl says %s, HashFile %s", out, sum)
		}
	}
	mb := func(d time.Duration) float64 { return float64(size) / d.Seconds() / 1e6 }
	b.ReportMetric(mb(ours), "best-MB/s")
	b.ReportMetric(mb(theirs), "openssl-best-MB/s")
	b.ReportMetric(mb(ours)/mb(theirs), "x-openssl")
}

// BenchmarkHashParallel hashes 4 files of 512 MiB with 1 worker and with
// GOMAXPROCS workers.
func BenchmarkHashParallel(b *testing.B) {
	size := benchSize(512)
	dir := b.TempDir()
	var paths []string
	for i := range 4 {
		paths = append(paths, benchFile(b, dir, size, uint64(i+1)))
	}
	for _, w := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			h := &Hasher{Workers: w}
			b.SetBytes(size * int64(len(paths)))
			for b.Loop() {
				if _, err := h.Hash(context.Background(), paths); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkVerifyCached re-verifies an unchanged 100 GiB (sparse) file
// from the stat cache: a stat and a small read, never the file's bytes.
func BenchmarkVerifyCached(b *testing.B) {
	dir := b.TempDir()
	p := filepath.Join(dir, "model.gguf")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	f.Truncate(100 << 30)
	f.Close()
	old := time.Now().Add(-time.Hour)
	os.Chtimes(p, old, old)
	h := &Hasher{Cache: filepath.Join(dir, "cache")}
	fi, _ := os.Stat(p)
	// Prime the cache as a hash taken now would (hashing 100 GiB of
	// zeros here would take a minute).
	h.store(p, keyOf(p, fi), strings.Repeat("0", 64), time.Now())
	b.ResetTimer()
	for b.Loop() {
		hs, err := h.Hash(context.Background(), []string{p})
		if err != nil || !hs[0].Cached {
			b.Fatalf("got %+v %v, want a cached hash", hs, err)
		}
	}
}

// genModule writes a module with n experiments in one package, each with
// a local model file and prebuilt binaries, and locks it.
func genModule(b *testing.B, n int) string {
	root := b.TempDir()
	os.MkdirAll(filepath.Join(root, "cue.mod"), 0o755)
	os.WriteFile(filepath.Join(root, "cue.mod", "module.cue"), []byte("module: \"example.com/gen@v0\"\nlanguage: version: \"v0.17.0\"\n"), 0o644)
	os.MkdirAll(filepath.Join(root, "experiments", "gen"), 0o755)
	os.MkdirAll(filepath.Join(root, "bin"), 0o755)
	os.MkdirAll(filepath.Join(root, "models"), 0o755)
	writeOld(b, filepath.Join(root, "bin", "llama-bench"), []byte("#!/bin/sh\n"))
	writeOld(b, filepath.Join(root, "models", "m.gguf"), []byte("model"))
	var src strings.Builder
	src.WriteString("package gen\n\nimport \"github.com/rigorbench/rigor/schema\"\n\n_base: schema.#Experiment & {\n\tmodel: path: \"models/m.gguf\"\n\tengine: {family: \"llama.cpp\", source: path: \"bin\"}\n\tbench: {p: 0, n: 16, r: 1}\n\tflags: {ngl: *0 | int}\n}\n")
	for i := range n {
		fmt.Fprintf(&src, "e%04d: _base & {flags: ngl: %d}\n", i, i%100)
	}
	os.WriteFile(filepath.Join(root, "experiments", "gen", "gen.cue"), []byte(src.String()), 0o644)
	return root
}

// BenchmarkCheck checks the locks of 1,000 experiments (loading the CUE
// is outside the timer; `rigor lock --check` adds it).
func BenchmarkCheck(b *testing.B) {
	root := genModule(b, 1000)
	set, err := spec.Load(spec.Options{Root: root})
	if err != nil || len(set.Problems) > 0 {
		b.Fatalf("load: %v %v", err, set.Problems)
	}
	cache := filepath.Join(root, ".cache")
	r := NewResolver(Options{Root: root, Cache: cache, HF: hf.NewClient(hf.ClientOptions{Offline: true})})
	res, err := r.Lock(context.Background(), set, "bench")
	if err != nil || len(res.Errors) > 0 {
		b.Fatalf("lock: %v %v", err, res.Errors)
	}
	b.ResetTimer()
	for b.Loop() {
		if st := CheckWith(set, CheckOptions{Cache: cache}); len(st) != 0 {
			b.Fatalf("stale: %v", st[0])
		}
	}
}

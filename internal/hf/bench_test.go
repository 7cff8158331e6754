package hf_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/hf"
	"github.com/rigorbench/rigor/internal/hf/hubtest"
)

const benchSize = 256 << 20

// benchHub serves one 256 MiB LFS file.
func benchHub(tb testing.TB) (*hubtest.Hub, []byte) {
	data := hubtest.RandomBytes(benchSize, 42)
	h := hubtest.New()
	h.AddRepo("bench/big", hubtest.RepoOptions{Files: []hubtest.File{{Path: "big.gguf", Data: data, LFS: true}}})
	return h, data
}

// BenchmarkDownload downloads a 256 MiB LFS file from the stand-in hub on
// loopback into a fresh cache: resolve, 302 to the CDN path, streaming
// write and sha256, rename, symlink. Compare with curl on the same URL
// (see TestServeForCurl). With RIGOR_HF_BENCH_ENDPOINT set to the
// ENDPOINT that TestServeForCurl prints, it downloads from that server
// process instead of one in its own process, exactly as curl does.
func BenchmarkDownload(b *testing.B) {
	endpoint := os.Getenv("RIGOR_HF_BENCH_ENDPOINT")
	if endpoint == "" {
		h, _ := benchHub(b)
		defer h.Close()
		endpoint = h.URL
	}
	c := hf.NewClient(hf.ClientOptions{Endpoint: endpoint})
	ctx := context.Background()
	commit, err := c.ResolveRevision(ctx, "bench/big", "main")
	if err != nil {
		b.Fatal(err)
	}
	files, err := c.ListFiles(ctx, "bench/big", commit)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(benchSize)
	b.ResetTimer()
	for b.Loop() {
		cache, err := os.MkdirTemp("", "hfbench")
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Download(ctx, "bench/big", commit, files, hf.DownloadOptions{CacheDir: cache}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		os.RemoveAll(cache)
		b.StartTimer()
	}
}

// TestServeForCurl serves the benchmark file until interrupted and prints
// its URL, for comparing BenchmarkDownload with curl by hand:
//
//	RIGOR_HF_SERVE=1 go test -run TestServeForCurl -v ./internal/hf
//	curl -sL -o /dev/null -w '%{speed_download}\n' URL
//	RIGOR_HF_BENCH_ENDPOINT=ENDPOINT go test -run XXX -bench Download ./internal/hf
func TestServeForCurl(t *testing.T) {
	if os.Getenv("RIGOR_HF_SERVE") == "" {
		t.Skip("set RIGOR_HF_SERVE=1 to serve the benchmark file for curl")
	}
	h, _ := benchHub(t)
	defer h.Close()
	c := hf.NewClient(hf.ClientOptions{Endpoint: h.URL})
	commit, err := c.ResolveRevision(context.Background(), "bench/big", "main")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("ENDPOINT %s\nURL %s/bench/big/resolve/%s/big.gguf\n", h.URL, h.URL, commit)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt)
	select {
	case <-stop:
	case <-time.After(10 * time.Minute):
	}
}

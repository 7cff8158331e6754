package toy

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"
)

// BenchMain is the toy bench: `toy-bench --model FILE [--threads T] [-n N]
// [-r R]`. It exits 2 on bad arguments and 1 when the model cannot be
// read.
func BenchMain() int {
	fs := flag.NewFlagSet(Bench, flag.ContinueOnError)
	model := fs.String("model", "", "the model file")
	threads := fs.Int("threads", 1, "goroutines generating tokens")
	n := fs.Int("n", 16, "tokens per repetition")
	r := fs.Int("r", 3, "repetitions")
	if err := fs.Parse(os.Args[1:]); err != nil || fs.NArg() > 0 || *model == "" || *threads < 1 || *n < 1 || *r < 1 {
		fmt.Fprintln(os.Stderr, "usage: toy-bench --model FILE [--threads T] [-n N] [-r R]")
		return 2
	}
	weights, err := os.ReadFile(*model)
	if err != nil {
		fmt.Fprintf(os.Stderr, "toy-bench: loading the model: %v\n", err)
		return 1
	}
	enc := json.NewEncoder(os.Stdout)
	for range *r {
		start := time.Now()
		generate(weights, *n, *threads)
		secs := time.Since(start).Seconds()
		if secs <= 0 {
			secs = 1e-9
		}
		enc.Encode(Row{Test: fmt.Sprintf("tg%d", *n), Threads: *threads, TPS: float64(*n) / secs})
	}
	return 0
}

// generate makes n tokens on threads goroutines, each a sha256 of the
// weights and its index.
func generate(weights []byte, n, threads int) {
	var wg sync.WaitGroup
	for t := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var idx [8]byte
			for i := t; i < n; i += threads {
				h := sha256.New()
				h.Write(weights)
				binary.LittleEndian.PutUint64(idx[:], uint64(i))
				h.Write(idx[:])
				h.Sum(nil)
			}
		}()
	}
	wg.Wait()
}

package llamacpp_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/engine/llamabench"
	"github.com/rigorbench/rigor/internal/engine/llamacpp"
	"github.com/rigorbench/rigor/internal/engine/llamacpp/testengine"
	"github.com/rigorbench/rigor/internal/results"
)

// TestTestEngine builds both flavours of the test engine and checks that
// its programs behave as the real ones do, as this package's parsers read
// them.
func TestTestEngine(t *testing.T) {
	for _, ik := range []bool{false, true} {
		t.Run(fmt.Sprintf("ik=%v", ik), func(t *testing.T) {
			s := newEngineSrc(t, ik)
			opts := s.opts(t, testengine.V2)
			opts.RPC = true
			b, err := llamacpp.Build(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			bench, model := b.Bins["llama-bench"], fakeModel(t)
			classify := func(env []string, args ...string) llamabench.Outcome {
				t.Helper()
				stdout, stderr, code, sig := runBin(t, env, bench, args...)
				return llamabench.Classify(stdout, stderr, code, sig)
			}

			// A sweep: one row per test and per combination.
			o := classify(nil, "-m", model, "-p", "16", "-n", "4", "-r", "3", "-ub", "16,32", "-t", "1,2", "-o", "json")
			if o.Status != results.StatusOK || len(o.Rows) != 8 {
				t.Fatalf("sweep: status %s (%s), %d rows; want ok, 8 rows", o.Status, o.Error, len(o.Rows))
			}
			groups := llamabench.SplitRows(o.Rows, []string{"n_ubatch", "n_threads"})
			if len(groups) != 4 {
				t.Errorf("sweep: %d groups, want 4", len(groups))
			}
			for _, r := range o.Rows {
				if len(r.SamplesNs) != 3 || r.AvgTs <= 0 {
					t.Errorf("row %s: %d samples, avg_ts %v; want 3 samples and a speed", r.Test, len(r.SamplesNs), r.AvgTs)
				}
			}
			// llama-bench's order: ubatch outer, threads inner, tests innermost.
			if err := llamabench.VerifyRows(o.Rows[2:4], map[string]any{"ub": 16, "t": 2, "p": 16, "n": 4}); err != nil {
				t.Errorf("VerifyRows(rows 3-4): %v", err)
			}

			// Failures, as Classify reads them.
			for _, c := range []struct {
				name   string
				env    []string
				args   []string
				status string
				errHas string
				rows   int
			}{
				{"unknown flag", nil, []string{"-m", model, "--no-such-flag", "1", "-o", "json"}, results.StatusFailed, "--no-such-flag", 0},
				{"missing model", nil, []string{"-m", "/nonexistent.gguf", "-o", "json"}, results.StatusFailed, "failed to load model", 0},
				{"crash", []string{"RIGOR_TESTENGINE_CRASH_AFTER_ROWS=1"}, []string{"-m", model, "-p", "8", "-n", "4", "-r", "1", "-o", "json"}, results.StatusCrashed, "double free", 1},
				{"context", []string{"RIGOR_TESTENGINE_FAIL_CTX=1"}, []string{"-m", model, "-o", "json"}, results.StatusFailed, "failed to create context", 0},
				{"rpc unreachable", nil, []string{"-m", model, "-rpc", "127.0.0.1:1", "-o", "json"}, "", "", 0},
			} {
				o := classify(c.env, c.args...)
				if c.status == "" {
					if o.Status == results.StatusOK {
						t.Errorf("%s: status ok, want a failure", c.name)
					}
					continue
				}
				if o.Status != c.status || !strings.Contains(o.Error, c.errHas) || len(o.Rows) != c.rows {
					t.Errorf("%s: status %s, error %q, %d rows; want %s, %q, %d rows", c.name, o.Status, o.Error, len(o.Rows), c.status, c.errHas, c.rows)
				}
			}

			// rpc-server listens, prints its banner, and llama-bench uses it.
			port := freePort(t)
			hostFlag := "-H"
			if ik {
				hostFlag = "-h" // ik's rpc-server takes -h as the host
			}
			srv := exec.Command(b.Bins["rpc-server"], hostFlag, "127.0.0.1", "-p", port)
			out, err := srv.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := srv.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { srv.Process.Kill(); srv.Wait() }()
			banner, err := bufio.NewReader(out).ReadString('\n')
			if err != nil || !strings.HasPrefix(banner, "Starting RPC server") {
				t.Fatalf("rpc-server banner %q, %v", banner, err)
			}
			waitListening(t, "127.0.0.1:"+port)
			ep := "127.0.0.1:" + port
			if ik {
				ep += "|0"
			}
			o = classify(nil, "-m", model, "-p", "8", "-n", "0", "-r", "1", "-rpc", ep, "-o", "json")
			if o.Status != results.StatusOK || len(o.Rows) != 1 {
				t.Errorf("over rpc: status %s (%s), %d rows; want ok, 1 row", o.Status, o.Error, len(o.Rows))
			}
		})
	}
}

func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
}

func waitListening(t *testing.T, addr string) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("nothing listens on %s", addr)
}

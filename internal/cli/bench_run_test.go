package cli

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/engine/llamabench"
	"github.com/rigorbench/rigor/internal/engine/llamacpp/testengine"
	"github.com/rigorbench/rigor/internal/results"
)

// BenchmarkRunOverhead measures what rigor adds to one run of a point with
// two rpc-server workers: `rigor run` (load and check the experiment, check
// the lock and the model bytes, detect the rig, find the cached build, run,
// parse, write the record) against starting the same processes directly
// (workers, wait for their ports, llama-bench, stop the workers). Both
// report the engine's own tg16 tok/s, which rigor must not change.
func BenchmarkRunOverhead(b *testing.B) {
	if _, err := exec.LookPath("cmake"); err != nil {
		b.Skip("cmake is not installed")
	}
	dir := b.TempDir()
	b.Setenv("RIGOR_CACHE", filepath.Join(dir, "cache"))
	b.Setenv("RIGOR_RIG_FILE", "")
	if _, err := testengine.Write(filepath.Join(dir, "engine"), testengine.Options{IK: true}); err != nil {
		b.Fatal(err)
	}
	mod := filepath.Join(dir, "mod")
	files := map[string]string{
		"cue.mod/module.cue": "module: \"example.com/b@v0\"\nlanguage: version: \"v0.17.0\"\n",
		"models/m.gguf":      "GGUF pretend model",
		"experiments/e/e.cue": `package e

import "github.com/rigorbench/rigor/schema"

one: schema.#Experiment & {
	model: path: "models/m.gguf"
	engine: {family: "ik_llama.cpp", source: {git: "../engine", ref: "v2"}, rpc: {servers: 2, basePort: 53100}}
	bench: {p: 32, n: 16, r: 3}
	flags: {ngl: 99, t: 1}
}
`,
	}
	for name, content := range files {
		p := filepath.Join(mod, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(content), 0o644)
	}
	run := func(args ...string) string {
		var out, errb bytes.Buffer
		if code := Run(append([]string{"-C", mod}, args...), &out, &errb); code != 0 {
			b.Fatalf("rigor %v: exit %d\n%s", args, code, errb.String())
		}
		return out.String()
	}
	run("lock", "e")
	var first []*results.Run
	if err := json.Unmarshal([]byte(run("run", "e/one", "--no-commit", "--json")), &first); err != nil || len(first) != 1 {
		b.Fatalf("first run: %v", err)
	}
	procs := first[0].Processes

	tokS := func(stdout []byte) float64 {
		o := llamabench.Classify(stdout, nil, 0, false)
		for _, r := range o.Rows {
			if r.NGen > 0 {
				return r.AvgTs
			}
		}
		return 0
	}
	b.Run("rigor", func(b *testing.B) {
		var sum float64
		for b.Loop() {
			var runs []*results.Run
			json.Unmarshal([]byte(run("run", "e/one", "--no-commit", "--json")), &runs)
			for _, m := range runs[0].Metrics {
				if m.Name == "tokSOut" {
					sum += m.Value
				}
			}
		}
		b.ReportMetric(sum/float64(b.N), "tg-tok/s")
	})
	b.Run("direct", func(b *testing.B) {
		var sum float64
		for b.Loop() {
			var workers []*exec.Cmd
			for _, p := range procs[:len(procs)-1] {
				c := exec.Command(p.Argv[0], p.Argv[1:]...)
				if err := c.Start(); err != nil {
					b.Fatal(err)
				}
				workers = append(workers, c)
			}
			for _, port := range []string{"53100", "53101"} {
				for {
					if c, err := net.Dial("tcp", "127.0.0.1:"+port); err == nil {
						c.Close()
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			bench := procs[len(procs)-1]
			out, err := exec.Command(bench.Argv[0], bench.Argv[1:]...).Output()
			if err != nil {
				b.Fatal(err)
			}
			sum += tokS(out)
			for _, w := range workers {
				w.Process.Kill()
				w.Wait()
			}
		}
		b.ReportMetric(sum/float64(b.N), "tg-tok/s")
	})
}

package toy_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/engine/enginetest"
	"github.com/rigorbench/rigor/internal/engine/toy"
	"github.com/rigorbench/rigor/internal/lock"
	"github.com/rigorbench/rigor/schema"
)

// TestConformance runs the engine suite on the toy family, which has no
// capability beyond engine.Engine. Its schema row is added the way
// rigor-toy adds it.
func TestConformance(t *testing.T) {
	schema.Add("toy.cue", toy.Schema)
	pts := enginetest.LoadPoints(t, `
plain: schema.#Experiment & {
	model: path: "/models/toy.bin"
	engine: {family: "toy", source: path: "toy-bench"}
	flags: threads: 2
}
`)
	p := pts["c/plain"]
	rows := []byte(`{"test":"tg16","threads":2,"tps":410.5}` + "\n" + `{"test":"tg16","threads":2,"tps":398.1}` + "\n")
	enginetest.Run(t, enginetest.Case{
		Engine:           toy.Engine{},
		Point:            p,
		Success:          engine.Finished{Stdout: rows},
		CrashAfterOutput: engine.Finished{Stdout: rows, ExitCode: 139, Signaled: true},
		RejectedArgs:     engine.Finished{ExitCode: 2, Stderr: []byte("flag provided but not defined: -bogus\nusage: toy-bench --model FILE [--threads T] [-n N] [-r R]\n")},
		FailedLoad:       engine.Finished{ExitCode: 1, Stderr: []byte("toy-bench: loading the model: open /models/toy.bin: no such file or directory\n")},
		Prepare: func(t *testing.T) engine.Request {
			bench := filepath.Join(t.TempDir(), toy.Bench)
			if err := os.WriteFile(bench, []byte("a toy bench's bytes\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			x := *p.Experiment
			x.Spec.Engine.Source.Path = bench
			return engine.Request{Experiment: &x, Lock: &lock.Entry{}, Cache: t.TempDir()}
		},
	})
}

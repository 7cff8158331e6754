package vllm

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/engine/enginetest"
	"github.com/rigorbench/rigor/internal/engine/vllm/standin"
	"github.com/rigorbench/rigor/internal/lock"
)

// finished runs the stand-in vllm on a plan's argv, as a run collects it.
func finished(t *testing.T, plan *engine.Plan, runDir string, env map[string]string) engine.Finished {
	t.Helper()
	argv := plan.Processes[len(plan.Processes)-1].Argv
	var stdout, stderr bytes.Buffer
	code := standin.Run(argv[1:], &stdout, &stderr, func(k string) string { return env[k] })
	f := engine.Finished{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: code, Outputs: map[string][]byte{}}
	if b, err := os.ReadFile(filepath.Join(runDir, OutputFile)); err == nil {
		f.Outputs[OutputFile] = b
	}
	return f
}

// TestConformance runs the engine suite on the stand-in vllm: its outputs
// and, for Prepare, the stand-in built as an executable named vllm.
func TestConformance(t *testing.T) {
	pts := enginetest.LoadPoints(t, `
plain: schema.#Experiment & {
	model: path: "/models/m"
	engine: {family: "vllm", source: path: "vllm"}
	bench: {mode: "throughput", backend: "vllm", dataset: "random", inputLen: 64, outputLen: 32, numPrompts: 2}
}
`)
	p := pts["c/plain"]
	run := func(env map[string]string, extra ...string) engine.Finished {
		dir := t.TempDir()
		q := *p
		q.Spec.ExtraArgs = extra
		plan, err := Engine{}.Plan(&q, engine.Inputs{Model: "/models/m", RunDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return finished(t, plan, dir, env)
	}
	crash := run(nil)
	crash.Stderr = append(crash.Stderr, "Fatal Python error: Segmentation fault\n"...)
	crash.ExitCode, crash.Signaled = 139, true
	enginetest.Run(t, enginetest.Case{
		Engine:           Engine{},
		Capabilities:     []engine.Capability{engine.CapServer, engine.CapQualifier},
		Point:            p,
		Success:          run(nil),
		CrashAfterOutput: crash,
		RejectedArgs:     run(nil, "--no-such-flag"),
		FailedLoad:       run(map[string]string{"FAKE_VLLM_FAIL": "noload"}),
		Prepare: func(t *testing.T) engine.Request {
			bin := t.TempDir()
			cmd := exec.Command("go", "build", "-o", filepath.Join(bin, "vllm"), "./standin/vllm")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("building the stand-in: %v\n%s", err, out)
			}
			t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			return engine.Request{Experiment: p.Experiment, Lock: &lock.Entry{}, Cache: t.TempDir()}
		},
	})
}

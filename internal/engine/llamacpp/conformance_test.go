package llamacpp_test

import (
	"path/filepath"
	"testing"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/engine/enginetest"
	"github.com/rigorbench/rigor/internal/engine/llamacpp"
	"github.com/rigorbench/rigor/internal/engine/llamacpp/testengine"
	"github.com/rigorbench/rigor/internal/lock"
	"github.com/rigorbench/rigor/internal/spec"
)

// fixture is a recorded llama-bench process from engine/llamabench's
// copies of the shared fixtures.
func fixture(t *testing.T, name string) engine.Finished {
	return enginetest.ReadFinished(t, filepath.Join("..", "llamabench", "testdata", "output", name))
}

// TestConformance runs the engine suite for both forks: mainline builds
// the test engine from a local git repository with real cmake;
// ik_llama.cpp locates that build as a prebuilt engine.
func TestConformance(t *testing.T) {
	var built string
	cache := filepath.Join(t.TempDir(), "cache") // outlives the subtests
	for _, fork := range []string{spec.FamilyLlamaCpp, spec.FamilyIkLlamaCpp} {
		t.Run(fork, func(t *testing.T) {
			prefix := fork
			pts := enginetest.LoadPoints(t, `
plain: schema.#Experiment & {
	model: path: "/models/tiny.gguf"
	engine: {family: "`+fork+`", source: {git: "https://example.invalid/engine.git", ref: "v2"}}
	bench: {p: 32, n: 16, r: 2}
}
`)
			c := enginetest.Case{
				Engine:           llamacpp.Engine{Fork: fork},
				Capabilities:     []engine.Capability{engine.CapSweeper, engine.CapLocator, engine.CapBuilder, engine.CapServer, engine.CapQualifier},
				Point:            pts["c/plain"],
				Success:          fixture(t, prefix+"_pp32_tg16_r2_json"),
				ReportsBuild:     true,
				CrashAfterOutput: fixture(t, "ik_llama.cpp_rpc_crash_verbose"),
				RejectedArgs:     fixture(t, prefix+"_err_unknown_flag"),
				FailedLoad:       fixture(t, prefix+"_err_missing_model"),
			}
			c.Prepare = func(t *testing.T) engine.Request {
				needCmake(t)
				if fork == spec.FamilyLlamaCpp {
					s := newEngineSrc(t, false)
					pts := enginetest.LoadPoints(t, `
built: schema.#Experiment & {
	model: path: "/models/tiny.gguf"
	engine: {family: "llama.cpp", source: {git: "`+s.dir+`", ref: "v2"}}
}
`)
					x := pts["c/built"].Experiment
					entry := &lock.Entry{Engine: lock.EngineLock{Family: fork, Commit: s.commits[testengine.V2]}}
					req := engine.Request{Experiment: x, Lock: entry, Cache: cache, Jobs: 2}
					p, err := llamacpp.Engine{Fork: fork}.Prepare(t.Context(), req)
					if err != nil {
						t.Fatalf("building the test engine: %v", err)
					}
					if p.Cached {
						t.Error("the first build of an empty cache is cached")
					}
					built = p.BinDir
					return req
				}
				if built == "" {
					t.Skip("no mainline build to locate")
				}
				pts := enginetest.LoadPoints(t, `
prebuilt: schema.#Experiment & {
	model: path: "/models/tiny.gguf"
	engine: {family: "ik_llama.cpp", source: path: "`+built+`"}
}
`)
				return engine.Request{Experiment: pts["c/prebuilt"].Experiment, Lock: &lock.Entry{}, Cache: t.TempDir()}
			}
			enginetest.Run(t, c)
		})
	}
}

package nodellama

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/engine/enginetest"
	"github.com/rigorbench/rigor/internal/lock"
)

// TestConformance runs the engine suite on the runner's recorded outputs
// and on an install made by a stand-in npm (the real npm install is the
// quick start's testscript).
func TestConformance(t *testing.T) {
	pts := enginetest.LoadPoints(t, `
plain: schema.#Experiment & {
	model: path: "/models/tiny.gguf"
	engine: {family: "node-llama-cpp", source: npm: "3.22.1"}
	bench: {p: 32, n: 16, r: 2}
}
`)
	rec := func(name string) engine.Finished {
		return enginetest.ReadFinished(t, filepath.Join("testdata", "runner", name))
	}
	enginetest.Run(t, enginetest.Case{
		Engine:           Engine{},
		Capabilities:     []engine.Capability{engine.CapLocator, engine.CapBuilder, engine.CapServer, engine.CapQualifier},
		Point:            pts["c/plain"],
		Success:          rec("ok_pp32_tg16_r2"),
		ReportsBuild:     true,
		CrashAfterOutput: rec("crash_killed"),
		RejectedArgs:     rec("err_unknown_arg"),
		FailedLoad:       rec("err_missing_model"),
		Prepare: func(t *testing.T) engine.Request {
			f := newFakeTools(t, "v20.20.2")
			t.Setenv("PATH", f.dir+string(os.PathListSeparator)+os.Getenv("PATH"))
			entry := &lock.Entry{Engine: lock.EngineLock{Family: "node-llama-cpp", Version: "3.22.1",
				NPM: &lock.NPMLock{Package: Package, Version: "3.22.1",
					Platform: &lock.NPMLock{Package: PlatformPackage("linux-x64"), Version: "3.22.1"}}}}
			return engine.Request{Experiment: pts["c/plain"].Experiment, Lock: entry, Cache: t.TempDir()}
		},
	})
}

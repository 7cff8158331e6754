// Package testscripts drives the real rigor binary through the scripts in
// this directory (testscript, as cmd/go and cmd/cue do).
package testscripts

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	cuecmd "cuelang.org/go/cmd/cue/cmd"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/rigorbench/rigor/internal/cli"
	"github.com/rigorbench/rigor/internal/engine/all"
	"github.com/rigorbench/rigor/internal/engine/toy"
	"github.com/rigorbench/rigor/internal/engine/vllm/standin"
	"github.com/rigorbench/rigor/schema"
)

func TestMain(m *testing.M) {
	testscript.Main(parallelM{m}, map[string]func(){
		"rigor": func() { raceNoSleep(); os.Exit(cli.Main()) },
		// A stand-in for vLLM's CLI (internal/engine/vllm/standin).
		"fake-vllm": func() { raceNoSleep(); os.Exit(standin.Main()) },
		// rigor with one more engine family, the test-only internal/engine/toy:
		// its package, this one registry line and its one row of the
		// schema's #Families (family_toy).
		"rigor-toy": func() {
			all.Register(toy.Engine{})
			schema.Add("toy.cue", toy.Schema)
			raceNoSleep()
			os.Exit(cli.Main())
		},
		// The toy family's benchmark program.
		"toy-bench": func() { os.Exit(toy.BenchMain()) },
		// The stock cue tool, pinned in go.mod, to prove that modules rigor
		// writes pass `cue vet -c` and `cue export` as they are.
		"cue": func() { os.Exit(cuecmd.Main()) },
	})
}

// scriptConds are the custom testscript conditions.
var scriptConds = map[string]func() (bool, error){}

func TestScripts(t *testing.T) {
	// Beside TestReadmeTour: each waits for a slot of -parallel, and
	// neither waits for the other to finish.
	t.Parallel()
	_, file, _, _ := runtime.Caller(0)
	repo := filepath.Dir(filepath.Dir(file))
	races := raceLogs(t)
	if err := weighScripts(t.Name(), "."); err != nil {
		t.Fatal(err)
	}
	runOrdered(t, testscript.Params{
		Dir:                 ".",
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		UpdateScripts:       os.Getenv("RIGOR_UPDATE") != "",
		// Custom commands: add one with an init() in its own file:
		// scriptCmds["name"] = fn (see cmds_test.go).
		Cmds: scriptCmds,
		// Custom conditions: add one with an init() in its own file:
		// scriptConds["name"] = fn (see slurm_test.go).
		Condition: func(cond string) (bool, error) {
			if f, ok := scriptConds[cond]; ok {
				return f()
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Setup: setup(repo, races),
	})
}

// setup gives each script a home, caches and a Hugging Face home of its
// own under $WORK, the npm client's configuration of this machine, and
// the race detector's settings (raceEnv) for the rigor processes it runs.
func setup(repo, races string) func(env *testscript.Env) error {
	return func(env *testscript.Env) error {
		env.Setenv("GORACE", raceEnv(races, filepath.Base(env.WorkDir)))
		// REPO points at this checkout, for scripts that read the
		// module's own experiments.
		env.Setenv("REPO", repo)
		env.Setenv("HOME", env.WorkDir)
		env.Setenv("XDG_CACHE_HOME", filepath.Join(env.WorkDir, ".cache"))
		env.Setenv("RIGOR_CACHE", filepath.Join(env.WorkDir, ".cache", "rigor"))
		env.Setenv("HF_HOME", filepath.Join(env.WorkDir, ".cache", "huggingface"))
		env.Setenv("CUE_CACHE_DIR", filepath.Join(env.WorkDir, ".cache", "cue"))
		// The test OCI registry (registry_test.go), for the archive scripts.
		for _, k := range registryEnv {
			if v := os.Getenv(k); v != "" {
				env.Setenv(k, v)
			}
		}
		// The npm client, as configured on this machine: its CA bundle
		// and proxy come from the environment.
		for _, kv := range os.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			if npmEnv(k) {
				env.Setenv(k, v)
			}
		}
		if os.Getenv("npm_config_cache") == "" {
			if dir := npmCache(); dir != "" {
				env.Setenv("npm_config_cache", dir)
			}
		}
		return nil
	}
}

// npmCache is npm's download cache shared by every script (and kept
// between runs, as Go's build cache is): the scripts that install
// node-llama-cpp from the registry download its ~70 MB once. npm checks
// each tarball against its integrity, and each script still installs into
// its own RIGOR_CACHE, so sharing couples nothing. "" when there is no
// user cache directory.
var npmCache = sync.OnceValue(func() string {
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	dir := filepath.Join(base, "rigor-test", "npm")
	if os.MkdirAll(dir, 0o755) != nil {
		return ""
	}
	return dir
})

// npmEnv reports whether a variable configures how npm and node reach the
// registry (certificates, proxies, npm's own settings).
func npmEnv(k string) bool {
	switch strings.ToUpper(k) {
	case "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY":
		return true
	}
	return strings.HasPrefix(strings.ToLower(k), "npm_config_")
}

// Package llamacpp is the engine for llama.cpp and its fork ik_llama.cpp:
// llama-bench with rpc-server workers. The two forks differ in flags, in the
// -rpc syntax and in their JSON output; this package knows both.
package llamacpp

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/spec"
)

// pinVar is the variable that restricts a worker to one device, per backend.
var pinVar = map[string]func(i int) (string, string){
	"sycl":   func(i int) (string, string) { return "ONEAPI_DEVICE_SELECTOR", "level_zero:" + strconv.Itoa(i) },
	"cuda":   func(i int) (string, string) { return "CUDA_VISIBLE_DEVICES", strconv.Itoa(i) },
	"hip":    func(i int) (string, string) { return "HIP_VISIBLE_DEVICES", strconv.Itoa(i) },
	"vulkan": func(i int) (string, string) { return "GGML_VK_VISIBLE_DEVICES", strconv.Itoa(i) },
}

// reserved are llama-bench flags rigor sets itself.
var reserved = map[string]string{
	"-m": "the model comes from model:", "--model": "the model comes from model:",
	"-o": "rigor parses JSON output", "--output": "rigor parses JSON output",
	"-rpc": "workers come from engine.rpc", "--rpc": "workers come from engine.rpc",
	"-r": "repetitions are bench.r", "--repetitions": "repetitions are bench.r",
}

// RPCString renders the -rpc value for the fork: ik_llama.cpp takes
// "host:port|device" per worker, mainline "host:port".
func RPCString(fork string, r *spec.RPC) string {
	parts := make([]string, r.Servers)
	for i := range parts {
		parts[i] = r.HostOrDefault() + ":" + strconv.Itoa(r.Port(i))
		if fork == spec.FamilyIkLlamaCpp {
			parts[i] += "|" + strconv.Itoa(r.Device)
		}
	}
	return strings.Join(parts, ",")
}

// Plan builds the processes of a point: one rpc-server per worker, then
// llama-bench with -o json.
func (e Engine) Plan(p *spec.Point, in engine.Inputs) (*engine.Plan, error) {
	s := p.Spec
	for _, a := range s.ExtraArgs {
		if why, ok := reserved[a]; ok {
			return nil, &engine.ReservedArgError{Arg: a, Why: why}
		}
	}
	plan := &engine.Plan{Point: p.ID, Family: s.Engine.Family}
	if r := s.Engine.RPC; r != nil {
		backend := s.Engine.Build.BackendOrCPU()
		for i := 0; i < r.Servers; i++ {
			argv := []string{in.Bin("rpc-server"), "-H", r.HostOrDefault(), "-p", strconv.Itoa(r.Port(i))}
			if r.Threads > 0 {
				argv = append(argv, "-t", strconv.Itoa(r.Threads))
			}
			if r.Cache {
				argv = append(argv, "-c")
			}
			env := engine.Env(s.Env, r.Env)
			if r.Pin != "none" {
				if f, ok := pinVar[backend]; ok {
					k, v := f(i)
					env = engine.Env(env, map[string]string{k: v})
				}
			}
			plan.Processes = append(plan.Processes, engine.Process{
				Role: "rpc-server", Name: fmt.Sprintf("rpc-%d", i), Argv: argv, Env: env,
				PassEnv: s.PassEnv, ReadyAddr: r.HostOrDefault() + ":" + strconv.Itoa(r.Port(i)),
			})
		}
	}
	model := in.Model
	if model == "" {
		model = engine.ModelPath(s.Model, "")
	}
	argv := []string{in.Bin("llama-bench"), "-m", model}
	if r := s.Engine.RPC; r != nil {
		argv = append(argv, "-rpc", RPCString(s.Engine.Family, r))
	}
	for _, a := range p.Bench {
		argv = append(argv, a.Argv()...)
	}
	for _, a := range p.Flags {
		argv = append(argv, a.Argv()...)
	}
	argv = append(argv, s.ExtraArgs...)
	argv = append(argv, "-o", "json")
	plan.Processes = append(plan.Processes, engine.Process{
		Role: "bench", Name: "llama-bench", Argv: argv, Env: engine.Env(s.Env), PassEnv: s.PassEnv,
	})
	return plan, nil
}

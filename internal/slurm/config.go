package slurm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
)

// ConfigFile is the module's Slurm settings, at the module root.
const ConfigFile = "slurm.cue"

// configSchema is what slurm.cue may hold. It is CUE so that a mistake is
// reported with its position, like an experiment's.
const configSchema = `
#Facts: {
	gpu?: {
		name?:   string
		vendor?: string
		count?:  int
		vramGB?: number
		driver?: string
	}
	cpu?: {
		name?:  string
		cores?: int
	}
	ramGB?:  number
	os?:     string
	kernel?: string
	arch?:   string
}
#Config: {
	partition?: string
	account?:   string
	time?:      string
	sbatchArgs?: [...=~"^-"]
	remote?:     string
	rigor?:      string & !=""
	gres?:       =~"^[A-Za-z0-9_]+$"
	features?: [=~"^[A-Za-z0-9_.-]+$"]: #Facts
	gpuTypes?: [=~"^[A-Za-z0-9_.-]+$"]: #Facts
}
`

// Config is a module's slurm.cue: defaults for every submission and the
// mapping from the facts #requires talks about to what the cluster calls
// them.
//
//	partition: "gpu"
//	account:   "lab"
//	time:      "02:00:00"
//	sbatchArgs: ["--qos=bench"]
//	remote:    "origin"           // where jobs push their records
//	rigor:     "/opt/rigor/bin/rigor" // rigor on the nodes (default: rigor on the job's PATH)
//	features: {                   // node features, by the facts their nodes have
//		b70:  gpu: {name: "Intel Arc Pro B70", vendor: "intel", vramGB: 32}
//		a100: gpu: {name: "NVIDIA A100-SXM4-80GB", vendor: "nvidia", vramGB: 80}
//	}
//	gpuTypes: {                   // GRES types of gpu, by the facts of the GPU
//		a100: gpu: name: "NVIDIA A100-SXM4-80GB"
//	}
type Config struct {
	Partition  string   `json:"partition,omitempty"`
	Account    string   `json:"account,omitempty"`
	Time       string   `json:"time,omitempty"`
	SbatchArgs []string `json:"sbatchArgs,omitempty"`
	// Remote is the git remote jobs push their records to; default origin.
	Remote string `json:"remote,omitempty"`
	// Rigor is the rigor executable on the nodes; default rigor on the
	// job's PATH.
	Rigor string `json:"rigor,omitempty"`
	// Gres is the GRES name of GPUs; default gpu.
	Gres string `json:"gres,omitempty"`
	// Features maps a node feature to the facts of the nodes that have it.
	Features map[string]map[string]any `json:"features,omitempty"`
	// GPUTypes maps a GRES type of Gres to the facts of that GPU.
	GPUTypes map[string]map[string]any `json:"gpuTypes,omitempty"`

	// features and gpuTypes as CUE values, to unify requirements with.
	features, gpuTypes map[string]cue.Value
}

// LoadConfig reads root/slurm.cue. A module without one gets the zero
// Config: no mapping, every fact #requires states beyond GPU count, CPUs
// and memory is checked by the job on its node.
func LoadConfig(root string) (*Config, error) {
	path := filepath.Join(root, ConfigFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &Config{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", ConfigFile, err)
	}
	return ParseConfig(path, data)
}

// ParseConfig decodes a slurm.cue whose text is data; filename names it in
// errors.
func ParseConfig(filename string, data []byte) (*Config, error) {
	ctx := cuecontext.New()
	schema := ctx.CompileString(configSchema).LookupPath(cue.ParsePath("#Config"))
	v := ctx.CompileBytes(data, cue.Filename(filename))
	if err := v.Err(); err != nil {
		return nil, &ConfigError{File: filename, Err: err}
	}
	v = schema.Unify(v)
	if err := v.Validate(cue.Concrete(true)); err != nil {
		return nil, &ConfigError{File: filename, Err: err}
	}
	var c Config
	if err := v.Decode(&c); err != nil {
		return nil, &ConfigError{File: filename, Err: err}
	}
	c.features = fieldValues(v.LookupPath(cue.ParsePath("features")))
	c.gpuTypes = fieldValues(v.LookupPath(cue.ParsePath("gpuTypes")))
	return &c, nil
}

func fieldValues(v cue.Value) map[string]cue.Value {
	out := map[string]cue.Value{}
	if !v.Exists() {
		return out
	}
	it, err := v.Fields()
	if err != nil {
		return out
	}
	for it.Next() {
		out[it.Selector().Unquoted()] = it.Value()
	}
	return out
}

// ConfigError is a slurm.cue that does not parse or does not fit the
// schema. Err is a CUE error: print it with cue/errors to get positions.
type ConfigError struct {
	File string
	Err  error
}

func (e *ConfigError) Error() string { return "reading " + ConfigFile + ": " + e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

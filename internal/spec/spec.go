package spec

import (
	"encoding/json"
	"strings"
)

// Spec is the effective configuration of one experiment or point, decoded
// from CUE. Field names follow the schema (schema/*.cue).
type Spec struct {
	Description    string            `json:"description,omitempty"`
	Notes          any               `json:"notes,omitempty"`
	Tags           []string          `json:"tags,omitempty"`
	Labels         []string          `json:"labels,omitempty"`
	Model          Model             `json:"model"`
	Engine         Engine            `json:"engine"`
	Bench          map[string]any    `json:"bench,omitempty"`
	Flags          map[string]any    `json:"flags,omitempty"`
	ExtraArgs      []string          `json:"extraArgs,omitempty"`
	Env            map[string]string `json:"env,omitempty"`
	PassEnv        []string          `json:"passEnv,omitempty"`
	Sweep          map[string]any    `json:"sweep,omitempty"`
	Quality        Quality           `json:"quality"`
	TimeoutSeconds int               `json:"timeoutSeconds,omitempty"`
	// Serve is set for a serve experiment (schema #Serve): the engine runs
	// as a server and rigor's load generator measures it. Its fields are
	// the engine's to read.
	Serve map[string]any `json:"serve,omitempty"`
}

// ServePrefix prefixes a family in the keys of the serve-mode flag and
// workload tables ([TableKey]).
const ServePrefix = "serve:"

// TableKey is the key of an experiment's flag and bench tables: the
// family, or ServePrefix+family for a serve experiment, whose flags are
// the server's and whose bench is a workload.
func TableKey(family string, serve bool) string {
	if serve {
		return ServePrefix + family
	}
	return family
}

// TableKey is the key of the spec's flag and bench tables.
func (s Spec) TableKey() string { return TableKey(s.Engine.Family, s.Serve != nil) }

// Model mirrors schema #Model.
type Model struct {
	HF        string     `json:"hf,omitempty"`
	Revision  string     `json:"revision,omitempty"`
	Files     []string   `json:"files,omitempty"`
	Path      string     `json:"path,omitempty"`
	Synthetic *Synthetic `json:"synthetic,omitempty"`
	Quant     string     `json:"quant,omitempty"`
	BaseModel string     `json:"baseModel,omitempty"`
	Format    string     `json:"format,omitempty"`
	// Name is the model's name as a server rigor did not start knows it
	// (the endpoint family): the model field of every request.
	Name string `json:"name,omitempty"`
}

// Rev is the requested revision, "main" when unset.
func (m Model) Rev() string {
	if m.Revision == "" {
		return "main"
	}
	return m.Revision
}

// Synthetic mirrors schema #Synthetic.
type Synthetic struct {
	Arch    string `json:"arch"`
	Layers  int    `json:"layers"`
	Embd    int    `json:"embd"`
	Heads   int    `json:"heads"`
	KVHeads int    `json:"kvHeads"`
	FF      int    `json:"ff"`
	Vocab   int    `json:"vocab"`
	Ctx     int    `json:"ctx"`
	Type    string `json:"type"`
	Seed    uint64 `json:"seed"`
}

// Engine mirrors schema #Engine.
type Engine struct {
	Family  string   `json:"family"`
	Source  Source   `json:"source"`
	Patches []string `json:"patches,omitempty"`
	Build   Build    `json:"build"`
	RPC     *RPC     `json:"rpc,omitempty"`
	Version string   `json:"version,omitempty"`
}

// Engine families that Go code treats specially. The families themselves
// are the schema's table (#Families, [Families], [LookupFamily]); a family
// that needs no special case has no constant.
const (
	FamilyLlamaCpp   = "llama.cpp"
	FamilyIkLlamaCpp = "ik_llama.cpp"
	FamilyVLLM       = "vllm"
	FamilyNodeLlama  = "node-llama-cpp"
	// FamilyEndpoint is an OpenAI-compatible server rigor did not start,
	// reached at engine.source.url in serve mode; nothing of it is pinned.
	FamilyEndpoint = "endpoint"
)

// Source mirrors schema #Source.
type Source struct {
	Git    string `json:"git,omitempty"`
	Ref    string `json:"ref,omitempty"`
	NPM    string `json:"npm,omitempty"`
	Python string `json:"python,omitempty"`
	Path   string `json:"path,omitempty"`
	URL    string `json:"url,omitempty"`
}

// Kind names which source is set: git, npm, python, path or url.
func (s Source) Kind() string {
	switch {
	case s.Git != "":
		return "git"
	case s.NPM != "":
		return "npm"
	case s.Python != "":
		return "python"
	case s.Path != "":
		return "path"
	case s.URL != "":
		return "url"
	}
	return ""
}

// Build mirrors schema #Build.
type Build struct {
	Backend string            `json:"backend,omitempty"`
	CMake   []string          `json:"cmake,omitempty"`
	Targets []string          `json:"targets,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// Flavour is node-llama-cpp's binary flavour: "prebuilt" (also when
	// unset) or "localBuild" (compiled by rigor from the bundled source).
	Flavour string `json:"flavour,omitempty"`
}

// Flavour values of [Build.Flavour], as records name them.
const (
	FlavourPrebuilt   = "prebuilt"
	FlavourLocalBuild = "localBuild"
)

// LocalBuild reports whether the engine is compiled from node-llama-cpp's
// bundled source rather than taken prebuilt.
func (b Build) LocalBuild() bool { return b.Flavour == FlavourLocalBuild }

// BackendOrCPU is the build backend, "cpu" when unset.
func (b Build) BackendOrCPU() string {
	if b.Backend == "" {
		return "cpu"
	}
	return b.Backend
}

// RPC mirrors schema #RPC.
type RPC struct {
	Servers             int               `json:"servers"`
	Host                string            `json:"host,omitempty"`
	BasePort            int               `json:"basePort,omitempty"`
	Device              int               `json:"device,omitempty"`
	Pin                 string            `json:"pin,omitempty"`
	Threads             int               `json:"threads,omitempty"`
	Cache               bool              `json:"cache,omitempty"`
	Env                 map[string]string `json:"env,omitempty"`
	ReadyTimeoutSeconds int               `json:"readyTimeoutSeconds,omitempty"`
}

// HostOrDefault is the worker address, 127.0.0.1 when unset.
func (r RPC) HostOrDefault() string {
	if r.Host == "" {
		return "127.0.0.1"
	}
	return r.Host
}

// Port is the port of worker i.
func (r RPC) Port(i int) int {
	base := r.BasePort
	if base == 0 {
		base = 50052
	}
	return base + i
}

// Quality mirrors schema #Quality.
type Quality struct {
	KVCache         string  `json:"kvCache,omitempty"`
	Speculative     *bool   `json:"speculative,omitempty"`
	ExpertReduction *bool   `json:"expertReduction,omitempty"`
	PowerLimitW     float64 `json:"powerLimitW,omitempty"`
	Tradeoff        string  `json:"tradeoff,omitempty"`
	// Measure asks for quality to be measured (schema #QualityMeasure).
	Measure *QualityMeasure `json:"measure,omitempty"`
}

// QualityMeasure mirrors schema #QualityMeasure.
type QualityMeasure struct {
	Corpus   Corpus `json:"corpus"`
	Ctx      int    `json:"ctx"`
	Chunks   int    `json:"chunks"`
	Baseline string `json:"baseline"`
	// TopK is the number of log-probabilities per position of the top-k
	// form; 0 for the full form.
	TopK int `json:"topK,omitempty"`
}

// Corpus mirrors schema quality.measure.corpus: a name (a file of the
// module, or "builtin:…") or a file of a Hugging Face repo (#HubCorpus).
type Corpus struct {
	// Name is a module file or a shipped corpus; "" for a hub file.
	Name string
	// HF is the hub repo, "owner/name"; File the file in it; Revision
	// the branch, tag or commit written ("" means main).
	HF, File, Revision string
}

// UnmarshalJSON reads a name or a {hf, file, revision} object.
func (c *Corpus) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		*c = Corpus{}
		return json.Unmarshal(b, &c.Name)
	}
	var h struct {
		HF       string `json:"hf"`
		File     string `json:"file"`
		Revision string `json:"revision"`
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return err
	}
	*c = Corpus{HF: h.HF, File: h.File, Revision: h.Revision}
	return nil
}

// MarshalJSON writes the corpus as the experiment does.
func (c Corpus) MarshalJSON() ([]byte, error) {
	if c.HF == "" {
		return json.Marshal(c.Name)
	}
	return json.Marshal(struct {
		HF       string `json:"hf"`
		File     string `json:"file"`
		Revision string `json:"revision,omitempty"`
	}{c.HF, c.File, c.Revision})
}

// Hub reports whether the corpus is a file of a hub repo.
func (c Corpus) Hub() bool { return c.HF != "" }

// Rev is the hub revision asked for: Revision, or "main".
func (c Corpus) Rev() string {
	if c.Revision == "" {
		return "main"
	}
	return c.Revision
}

// String names the corpus in messages and records: the name, or a hub
// file as huggingface_hub's file system names it,
// "hf://owner/name@revision/file" (no "@revision" for main).
func (c Corpus) String() string {
	if c.HF == "" {
		return c.Name
	}
	rev := ""
	if c.Revision != "" {
		rev = "@" + c.Revision
	}
	return "hf://" + c.HF + rev + "/" + c.File
}

// BuiltinCorpusPrefix starts a corpus shipped with rigor
// ("builtin:gutenberg") rather than a file of the module.
const BuiltinCorpusPrefix = "builtin:"

// BaselineID is the full id of a quality baseline named in package pkg:
// a bare name is the package's own experiment.
func BaselineID(pkg, baseline string) string {
	if strings.Contains(baseline, "/") || pkg == "." || pkg == "" {
		return baseline
	}
	return pkg + "/" + baseline
}

// Package engine is the boundary between rigor and the inference engines.
//
// Each engine family lives in its own subpackage (llamacpp for llama.cpp and
// ik_llama.cpp, vllm, nodellama) and turns a concrete experiment point into a
// plan: the exact processes a run starts, workers first and the bench
// process last, with their argv, environment and working directory. Argv
// words are never joined into a shell command; Plan.Shell renders them for
// people only.
//
// This package and its subpackages are rigor's own, not an API for other
// modules: their types are internal/spec's, internal/lock's and
// internal/results', which no other module can name. They belong under
// internal/ (ARCHITECTURE.md, "Why engine/ is not under internal/ (yet)").
package engine

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/rigorbench/rigor/internal/spec"
)

// Process is one process of a plan.
type Process struct {
	// Role is "rpc-server" for a worker, "bench" for the benchmark.
	Role string `json:"role"`
	// Name identifies the process in logs, e.g. "rpc-0".
	Name string            `json:"name"`
	Argv []string          `json:"argv"`
	Env  map[string]string `json:"env,omitempty"`
	// PassEnv names variables whose values come from the caller.
	PassEnv []string `json:"passEnv,omitempty"`
	// SecretEnv names variables whose values come from the caller and are
	// secrets (an endpoint's API key): the process gets them, no record,
	// log or plan holds their values.
	SecretEnv []string `json:"secretEnv,omitempty"`
	Dir       string   `json:"dir,omitempty"`
	// ReadyAddr is the host:port a worker must accept connections on
	// before the bench starts.
	ReadyAddr string `json:"readyAddr,omitempty"`
	// Outputs names files the process writes that rigor parses, relative
	// to the run directory (vLLM's --output-json).
	Outputs []string `json:"outputs,omitempty"`
}

// Plan is what a run executes.
type Plan struct {
	Point     string    `json:"point"`
	Family    string    `json:"family"`
	Processes []Process `json:"processes"`
}

// Inputs are the resolved locations a plan refers to. Empty fields are
// rendered as placeholders, so a plan can be shown before anything is
// locked or built.
type Inputs struct {
	// BinDir is the directory holding the engine's binaries.
	BinDir string
	// Model is the path of the model file (or directory) to load.
	Model string
	// RunDir is the directory the run writes its outputs to.
	RunDir string
}

// Placeholders used when an input is not known yet.
const (
	BinDirPlaceholder = "<engine>"
	RunDirPlaceholder = "<run>"
)

// Bin joins the bin directory (or its placeholder) with a program name.
func (in Inputs) Bin(name string) string {
	dir := in.BinDir
	if dir == "" {
		dir = BinDirPlaceholder
	}
	return path.Join(dir, name)
}

// Run joins the run directory (or its placeholder) with a file name.
func (in Inputs) Run(name string) string {
	dir := in.RunDir
	if dir == "" {
		dir = RunDirPlaceholder
	}
	return path.Join(dir, name)
}

// ModelPath is where a point's model is expected when the lock has not
// named it: the local path (plus the entry file), or the Hugging Face cache
// snapshot of the locked commit.
func ModelPath(m spec.Model, commit string) string {
	entry := spec.EntryFile(m.Files)
	switch {
	case m.Path != "" && entry != "":
		return path.Join(m.Path, entry)
	case m.Path != "":
		return m.Path
	case m.HF != "":
		if commit == "" {
			commit = "<locked-commit>"
		}
		return path.Join("${HF_HUB_CACHE}", "models--"+strings.ReplaceAll(m.HF, "/", "--"), "snapshots", commit, entry)
	case m.Synthetic != nil:
		return "<synthetic model>"
	}
	return ""
}

// Env merges environments; later maps win.
func Env(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Shell renders a process as a shell command line, for people: env
// assignments, then the argv, each word quoted where needed.
func (p Process) Shell() string {
	var words []string
	keys := make([]string, 0, len(p.Env))
	for k := range p.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		words = append(words, k+"="+Quote(p.Env[k]))
	}
	for _, a := range p.Argv {
		words = append(words, Quote(a))
	}
	return strings.Join(words, " ")
}

var safeWord = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./<>{}$-]+$`)

// Quote quotes a word for a POSIX shell when it needs it.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	if safeWord.MatchString(s) && !strings.ContainsAny(s, "<>{}$") {
		return s
	}
	if safeWord.MatchString(s) && (strings.HasPrefix(s, "<") || strings.HasPrefix(s, "${")) {
		// placeholders stay readable
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ReservedArgError reports an extraArgs word that rigor itself controls.
type ReservedArgError struct {
	Arg, Why string
}

func (e *ReservedArgError) Error() string {
	return fmt.Sprintf("extraArgs: %s is set by rigor (%s)", e.Arg, e.Why)
}

// Package results defines the run record, rigor's unit of evidence, and the
// results store that keeps one JSON file per run under results/.
package results

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/rigorbench/rigor/internal/hoststate"
	"github.com/rigorbench/rigor/internal/metric"
	"github.com/rigorbench/rigor/internal/redact"
	"github.com/rigorbench/rigor/internal/rig"
)

// SchemaVersion is the version of the record format written by this rigor.
const SchemaVersion = 1

// Status values of a run.
const (
	StatusOK          = "ok"          // every test produced its rows
	StatusFailed      = "failed"      // the engine failed; Error says how
	StatusCrashed     = "crashed"     // the engine died after printing rows; metrics are kept
	StatusTimeout     = "timeout"     // rigor stopped the engine at its deadline
	StatusInterrupted = "interrupted" // the user stopped the run (SIGINT/SIGTERM)
)

// Run is one execution of one point on one rig: the file
// results/<experiment id>/<run id>.json.
type Run struct {
	// known are the secret values the run carried before it was
	// redacted, and those its maker was told of ([Run.KnowSecrets]):
	// never encoded, kept so that every later writer (the raw files, the
	// record's text as a whole) removes them wherever they appear.
	known *redact.Scrubber

	Schema       int    `json:"schema"`
	RigorVersion string `json:"rigorVersion"`
	// ID names the run: a UTC timestamp plus a short random suffix,
	// e.g. "20260508T032753Z-3f9a". Sorting ids sorts runs by start time.
	ID string `json:"id"`
	// Experiment is the experiment id, e.g. "minimax-m27-b70/kvoffload".
	Experiment string `json:"experiment"`
	// Point is the point id; equal to Experiment when there is no sweep,
	// e.g. "minimax-m27-b70/ubSweep[ub=16]".
	Point string `json:"point"`
	// Swept holds the sweep coordinates of the point, keyed by field path
	// ("flags.ub"); empty without a sweep. Points of two sweeps are matched
	// by these values.
	Swept map[string]any `json:"swept,omitempty"`

	// Invocation identifies the `rigor run` that made the record: every
	// record of one invocation (all its rounds and points) shares it.
	Invocation string `json:"invocation,omitempty"`
	// Round is the record's round within its invocation, from 1, when the
	// invocation ran rounds (--rounds): records of one invocation and
	// round ran in the same block of time and can be compared as pairs.
	Round int `json:"round,omitempty"`
	// Rounds is how many rounds the invocation asked for (--rounds K),
	// RoundsSeed the seed its rounds' orders were shuffled from, and
	// Order the record's place in its round (from 1): round k runs the
	// listed experiments' executions in the order math/rand/v2's
	// PCG(RoundsSeed, k) shuffles them to. All three are 0 without rounds.
	Rounds     int    `json:"rounds,omitempty"`
	RoundsSeed uint64 `json:"roundsSeed,omitempty"`
	Order      int    `json:"order,omitempty"`

	// Slurm names the Slurm job that ran the record (rigor run --slurm),
	// or whose account rigor jobs recorded it from.
	Slurm *SlurmJob `json:"slurm,omitempty"`

	// Provenance says where the record came from when rigor did not run it
	// itself (rigor import).
	Provenance *Provenance `json:"provenance,omitempty"`
	// Unverified lists what the record cannot prove, as field paths with a
	// reason, e.g. "engine.commit: short sha 9a26522".
	Unverified []string `json:"unverified,omitempty"`

	SpecDigest string `json:"specDigest,omitempty"`
	LockDigest string `json:"lockDigest,omitempty"`
	// Spec is the effective configuration of the point as evaluated from
	// CUE (model, engine, bench, flags, env, quality, …). The configuration
	// diff compares these trees.
	Spec json.RawMessage `json:"spec,omitempty"`

	Engine Engine `json:"engine"`
	Model  Model  `json:"model"`
	// Hashes says how the model's and the engine's hashes were checked
	// before the run: "read" when every file was hashed from its bytes
	// (rigor run --verify, or files changed since they were last read),
	// "cached" when some were trusted from the stat cache because their
	// size, mtime, ctime, inode and device had not changed since. Absent
	// when nothing was hashed, and in records made before rigor said.
	Hashes string `json:"hashes,omitempty"`

	// Processes are the processes rigor started, workers first, the bench
	// process last, exactly as executed (secrets redacted).
	Processes []Process `json:"processes,omitempty"`

	Rig *rig.Rig `json:"rig,omitempty"`
	// Machine is the machine's state before and while the engine ran:
	// load, other processes' CPU time, clocks, temperatures, memory, GPUs.
	Machine *hoststate.State `json:"machine,omitempty"`
	// IgnoredRequires is true when the run went ahead although the rig did
	// not meet the experiment's #requires (--ignore-requires); the
	// mismatches are in Warnings.
	IgnoredRequires bool `json:"ignoredRequires,omitempty"`

	Start  time.Time `json:"start"`
	End    time.Time `json:"end,omitzero"`
	Status string    `json:"status"`
	// Error is the reason for a status other than ok.
	Error string `json:"error,omitempty"`
	// LogTail is the last lines of the engine's stderr when it failed.
	LogTail  string   `json:"logTail,omitempty"`
	Warnings []string `json:"warnings,omitempty"`

	Metrics []Metric `json:"metrics,omitempty"`
	// Quality is the run's quality as measured against a baseline
	// (quality.measure in the experiment); absent when none was asked.
	Quality *Quality `json:"quality,omitempty"`

	Labels []string `json:"labels,omitempty"`
	Notes  string   `json:"notes,omitempty"`
	// Files lists the raw outputs kept beside the record
	// (stdout, stderr, worker logs), relative to the record's directory.
	Files []string `json:"files,omitempty"`
	// Dirty is true when the experiment's files or its lockfile differed
	// from the last commit when the run was made; DirtyFiles names them
	// (module-relative). A rerun months later cannot check that version
	// out.
	Dirty      bool     `json:"dirty,omitempty"`
	DirtyFiles []string `json:"dirtyFiles,omitempty"`
}

// SlurmJob is the Slurm job of a record made by rigor run --slurm.
type SlurmJob struct {
	// Batch is rigor's batch id (the submission).
	Batch string `json:"batch"`
	// JobID is Slurm's own id of the job ($SLURM_JOB_ID); for an array
	// task ArrayJobID and ArrayIndex name it as users do (123_4).
	JobID      string `json:"jobId,omitempty"`
	ArrayJobID string `json:"arrayJobId,omitempty"`
	ArrayIndex int    `json:"arrayIndex"`
	// Node and Partition are where the job ran ("" when it never ran).
	Node      string `json:"node,omitempty"`
	Partition string `json:"partition,omitempty"`
}

// Provenance records an imported run's origin.
type Provenance struct {
	Kind       string    `json:"kind"`   // "import"
	Format     string    `json:"format"` // seed-summary, localmaxxing, registry-v1, llama-bench-json
	File       string    `json:"file"`
	SHA256     string    `json:"sha256,omitempty"`
	Label      string    `json:"label,omitempty"` // the source's own name for the run
	ExternalID string    `json:"externalId,omitempty"`
	ImportedAt time.Time `json:"importedAt,omitzero"`
}

// Engine identifies the exact engine build.
type Engine struct {
	Family  string  `json:"family"`           // llama.cpp, ik_llama.cpp, vllm, node-llama-cpp
	Source  string  `json:"source,omitempty"` // git URL, npm package, or path
	Ref     string  `json:"ref,omitempty"`    // as requested
	Commit  string  `json:"commit,omitempty"` // full 40-hex when locked
	Version string  `json:"version,omitempty"`
	BuildID string  `json:"buildId,omitempty"`
	Backend string  `json:"backend,omitempty"`
	Patches []Patch `json:"patches,omitempty"`
	// Binaries maps the name of each executable or library the run
	// started or loaded (llama-bench, rpc-server, the node runner and its
	// native library, the vllm entry point) to the sha256 of its bytes,
	// so that two records say whether they ran the same build. Records
	// made before rigor hashed binaries leave it out.
	Binaries map[string]string `json:"binaries,omitempty"`
	// Build is what the engine said, in its own output, about the binary
	// that ran; absent when the family reports nothing of it (and in
	// records made before rigor read it).
	Build *Build `json:"build,omitempty"`
	// Unpinned says why the engine is not pinned (an endpoint rigor did
	// not start: nothing of its build or model is locked); empty for
	// every engine rigor builds, installs or starts.
	Unpinned string `json:"unpinned,omitempty"`
	// From says where the engine came from for this run: "cache",
	// "upstream" (built from its source — SourceFrom says when that
	// source came from the archive — or installed from its registry for
	// this run) or "archive" (rigor archive's substitute, with the same
	// hashes). Absent for a prebuilt engine, an endpoint, and in
	// records made before rigor said it.
	From string `json:"from,omitempty"`
	// SourceFrom is "archive" when the engine was built for this run from
	// a git source that rigor archive's bundle of the locked commit
	// brought (the remote gone, or force-pushed away from the commit);
	// absent otherwise.
	SourceFrom string `json:"sourceFrom,omitempty"`
}

// Build is what an engine reports of the binary that ran, read from its
// output by the family's Judge: the same version of an engine can run as
// different code (node-llama-cpp's prebuilt portable binaries or a build
// made on this machine; other CPU features), and the comparability guard
// treats a different flavour or CPU feature set as a difference.
type Build struct {
	// Flavour is how the binary came to be, in the engine's words:
	// node-llama-cpp's llama.buildType, "prebuilt" (the portable
	// binaries shipped with the package) or "localBuild" (compiled on
	// this machine).
	Flavour string `json:"flavour,omitempty"`
	// CPUFeatures are the CPU features the binary uses, in the order
	// llama.cpp's system info lists them ("AVX2", "FMA", …).
	CPUFeatures []string `json:"cpuFeatures,omitempty"`
	// CPUVariant is the CPU backend library ggml chose at run time, when
	// it chooses one ("libggml-cpu-zen4.so").
	CPUVariant string `json:"cpuVariant,omitempty"`
	// Backends are the compute backends the engine reports ("CPU",
	// "SYCL", "CUDA": llama-bench's backends).
	Backends string `json:"backends,omitempty"`
	// CPU and GPU are the devices as the engine names them (llama-bench's
	// cpu_info and gpu_info).
	CPU string `json:"cpu,omitempty"`
	GPU string `json:"gpu,omitempty"`
	// Binary is the native library that ran, relative to the engine's
	// install ("@node-llama-cpp/linux-x64/bins/linux-x64/llama-addon.node").
	Binary string `json:"binary,omitempty"`
	// SystemInfo is llama.cpp's system info line as the engine printed it.
	SystemInfo string `json:"systemInfo,omitempty"`
	// Reported is what a server rigor did not start says of itself, by
	// path: the JSON of /v1/models, and of /props (llama-server) or
	// /version (vLLM) where it answers them, secrets redacted and long
	// strings (a chat template) cut.
	Reported map[string]json.RawMessage `json:"reported,omitempty"`
	// From says where the facts come from when not from this run's own
	// output: a run that failed before the engine reported anything takes
	// the report of an earlier run of the same binaries (by hash).
	From string `json:"from,omitempty"`
}

// Summary is the flavour and the CPU features, as the comparability guard
// shows them: "prebuilt (AVX2 FMA)"; "" when the build records neither.
func (b *Build) Summary() string {
	if b == nil {
		return ""
	}
	s := b.Flavour
	if len(b.CPUFeatures) > 0 {
		if s == "" {
			s = "unknown flavour"
		}
		s += " (" + strings.Join(b.CPUFeatures, " ") + ")"
	}
	return s
}

// CPUFeatures reads the features a llama.cpp system info line says the
// binary uses ("CPU : SSE3 = 1 | AVX2 = 1 | AVX512 = 0 | …" gives SSE3 and
// AVX2), in its order, each once. Only the CPU backend's entries count
// (newer lines name each backend: "CUDA : ARCHS = 890 | … | CPU : …";
// older ones name none and are all CPU), and entries that say how ggml was
// built rather than what the CPU must support (LLAMAFILE, OPENMP, REPACK)
// are left out.
func CPUFeatures(systemInfo string) []string {
	var out []string
	backend := "CPU"
	for _, part := range strings.FieldsFunc(systemInfo, func(r rune) bool { return r == '|' || r == '\n' }) {
		// The first entry of each backend carries its name: "CPU : SSE3 = 1".
		if i := strings.LastIndex(part, ":"); i >= 0 {
			backend = strings.TrimSpace(part[:i])
			part = part[i+1:]
		}
		name, val, ok := strings.Cut(part, "=")
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		if backend != "CPU" || !ok || name == "" || val == "0" || val == "" || strings.ContainsAny(name, " \t") || notCPUFeature[name] || slices.Contains(out, name) {
			continue
		}
		out = append(out, name)
	}
	return out
}

// notCPUFeature are system info entries that say how ggml was built, not
// what the CPU must support.
var notCPUFeature = map[string]bool{"LLAMAFILE": true, "OPENMP": true, "REPACK": true, "KLEIDIAI": true, "ACCELERATE": true}

// Patch is one patch applied to the engine source, in order.
type Patch struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256,omitempty"`
}

// Model identifies the exact model bytes.
type Model struct {
	HF       string `json:"hf,omitempty"`
	Revision string `json:"revision,omitempty"`
	Commit   string `json:"commit,omitempty"`
	Path     string `json:"path,omitempty"`
	// RealPath is where a local model's file really is, symlinks
	// resolved (models live on big disks, often linked into the module).
	RealPath string `json:"realPath,omitempty"`
	Quant    string `json:"quant,omitempty"`
	Files    []File `json:"files,omitempty"`
	// Name is the model's name as a server rigor did not start serves it
	// (the endpoint family); its bytes are not known.
	Name string `json:"name,omitempty"`
}

// File is one model file with its hash.
type File struct {
	Path   string `json:"path"`
	Size   int64  `json:"size,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// GGUF holds facts read from the file's header, when it is GGUF.
	GGUF map[string]any `json:"gguf,omitempty"`
	// From says where the file's bytes came from for this run, as
	// Engine.From does for the engine: "cache" (the Hugging Face cache or
	// rigor's held them already), "upstream" (a synthetic model written
	// now from the recipe the lock holds, its source) or "archive"
	// (rigor archive's copy, checked against the same sha256). Absent
	// for a local file found at its path, and in records made before
	// rigor said it; the comparability guard ignores it.
	From string `json:"from,omitempty"`
}

// Process is one process as executed.
type Process struct {
	Role string            `json:"role"` // "rpc-server", "bench"
	Argv []string          `json:"argv"`
	Env  map[string]string `json:"env,omitempty"`
	Dir  string            `json:"dir,omitempty"`
	// Exit is the exit status; 128+N when signal N killed the process,
	// which Signal then names ("SIGABRT").
	Exit   *int   `json:"exit,omitempty"`
	Signal string `json:"signal,omitempty"`
}

// Direction of a metric: which way is better.
const (
	HigherIsBetter = metric.Higher
	LowerIsBetter  = metric.Lower
)

// Metric is one measured quantity of one test, with every raw sample.
//
// Names are the same across engines (tokSOut, tokSPrompt, tokSTotal,
// ttftMs, …): [metric.Table] lists them with their units and directions.
type Metric struct {
	Name string `json:"name"`
	// Test names the workload the metric belongs to, in llama-bench's
	// spelling: "tg64", "pp512", "pp512+tg128", "tg128@pp4096"; or the vLLM
	// mode ("throughput").
	Test      string `json:"test,omitempty"`
	Unit      string `json:"unit"`
	Direction string `json:"direction"`
	// Value is the engine's own summary (llama-bench's avg_ts: the mean of
	// the samples), kept as reported.
	Value float64 `json:"value"`
	// Stddev as reported by the engine, when it reports one.
	Stddev  float64   `json:"stddev,omitempty"`
	Samples []float64 `json:"samples,omitempty"`
	// WarmupSamples are the repetitions run before Samples and discarded
	// (bench.warmup); no statistic uses them.
	WarmupSamples []float64 `json:"warmupSamples,omitempty"`
	// Derived explains how rigor computed a metric the engine does not
	// report directly.
	Derived string `json:"derived,omitempty"`
}

// MetricKey identifies a metric within a run: name plus test.
func (m Metric) Key() string {
	if m.Test == "" {
		return m.Name
	}
	return m.Name + " " + m.Test
}

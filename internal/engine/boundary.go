package engine

import (
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/rigorbench/rigor/internal/lock"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/spec"
	"golang.org/x/sys/unix"
)

// Engine is one engine family: how rigor makes it ready, what a run of a
// point starts, and what a finished run achieved. Every family implements
// it; packages outside engine/ reach the families only through it and the
// registry in engine/all. engine/enginetest is the suite every family
// passes.
//
// Capabilities that only some families have are separate interfaces, found
// with one lookup, [As]: [Sweeper] (several points in one process),
// [Locator] (where a prepared engine is, without preparing it), [Builder]
// (engines rigor compiles into its build cache), [Server] (serve mode) and
// [Qualifier] (quality measured against a baseline).
// Each family asserts at compile time the capabilities it means to have,
// and its conformance run (engine/enginetest, Case.Capabilities) fails
// when one disappears.
type Engine interface {
	// Family is the spec.Family* name the engine serves.
	Family() string

	// Prepare makes the engine a locked experiment names ready to run and
	// describes it: it builds it (llama.cpp: the locked commit and
	// patches, into the content-addressed build cache), installs it
	// (node-llama-cpp: the locked npm packages, into the engine cache) or
	// describes what is there (vLLM, a prebuilt directory).
	//
	// Contract: Prepare is idempotent; a second call with the same lock
	// finds the first one's work in the cache and says so (Cached). With
	// req.Offline it opens no network connection: what is not cached is
	// an error that says so. It returns the executables a run starts, each
	// with the sha256 of its bytes, so that a record names the exact
	// binary that measured it. Progress goes to req's callbacks only.
	Prepare(ctx context.Context, req Request) (*Prepared, error)

	// Plan returns the processes a run of the point starts, workers first
	// and the bench process last. Contract: argv only, never a shell
	// command; deterministic (the same point and inputs give the same
	// plan, byte for byte); no side effects; inputs that are not known
	// yet (an unbuilt engine) are rendered as placeholders. extraArgs that
	// rigor itself controls are a *ReservedArgError.
	Plan(p *spec.Point, in Inputs) (*Plan, error)

	// Judge reads what the bench process of a plan left behind into the
	// common outcome: status (results.StatusOK, StatusFailed or
	// StatusCrashed), the reason when not ok naming the cause found in the
	// output, the measurements (kept whatever the status), warnings and
	// the tail of the engine's log. Contract: it never fails and never
	// panics, whatever the bytes; it only reads its argument. How the run
	// stopped (timeout, interrupt, a worker's death) is merged in by
	// [Conclude], which callers use instead of calling Judge directly.
	Judge(p *spec.Point, f Finished) Verdict
}

// Qualifier is an engine that measures model quality beside speed
// (quality.measure): perplexity and KL divergence of a point's next-token
// distributions against a baseline's, on a corpus.
type Qualifier interface {
	// QualityPlan returns the process of a quality job: with
	// job.WriteBase, the one that writes the baseline's reference to
	// job.Base; else the one that scores the point against it. The same
	// contract as Plan: argv only, deterministic, no side effects.
	QualityPlan(p *spec.Point, in Inputs, job QualityJob) (*Plan, error)
	// JudgeQuality reads what the process left behind: the statistics of
	// a scoring job, nil for a base job that succeeded, an error saying
	// what is missing otherwise.
	JudgeQuality(job QualityJob, f Finished) (*results.QualityMeasured, error)
	// ReferenceBytes is the size of the reference a base job writes,
	// said before it is written: nVocab is the number of
	// log-probabilities kept per scored token, the vocabulary's size for
	// the full form, k for the top-k form (quality.measure.topK).
	ReferenceBytes(nVocab, ctx, chunks int64) int64
}

// QualityFormError says that an experiment asks for a form of the KL
// divergence its family cannot compute (a topK where the family keeps the
// whole vocabulary, none where a server gives only the top k). Path is the
// field at fault.
type QualityFormError struct {
	Path, Msg, Hint string
}

func (e *QualityFormError) Error() string { return e.Msg }

// FullFormOnly refuses quality.measure.topK for a family whose program
// keeps the whole vocabulary's log-probabilities.
func FullFormOnly(program string) *QualityFormError {
	return &QualityFormError{Path: "quality.measure.topK",
		Msg:  "quality.measure.topK is for servers that give only the top k log-probabilities (vLLM, endpoints): " + program + " computes the full KL divergence over the whole vocabulary",
		Hint: "remove topK: the full form is exact, and the top-k form only a lower bound of it"}
}

// QualityTargetError says that an experiment measures quality with a
// build whose targets leave out the program that measures it.
type QualityTargetError struct {
	Program string
	Targets []string
}

func (e *QualityTargetError) Error() string {
	return fmt.Sprintf("engine.build.targets %v leave out %s, which quality.measure runs", e.Targets, e.Program)
}

// QualityJob is one quality process: the corpus file, context size and
// chunk count, and the baseline's reference file, written or read.
type QualityJob struct {
	Corpus      string
	Ctx, Chunks int
	Base        string
	WriteBase   bool
	// TopK is quality.measure.topK: the top-k form with k
	// log-probabilities per position; 0 for the full form.
	TopK int
	// Listen is where a server the quality process needs binds (vLLM's
	// `vllm serve`): a free port on the loopback, chosen by the runner.
	Listen Listen
}

// Sweeper is an engine whose bench process can run several points of a
// sweep at once (llama-bench's comma lists): the model loads once.
type Sweeper interface {
	// Combine returns the one point that runs all of points in a single
	// process, and false when they cannot share one (then each runs on
	// its own). The combined point's ID is the experiment's. Serve points
	// (Spec.Serve set) never combine: each is a server run of its own.
	Combine(points []*spec.Point) (*spec.Point, bool)
	// Split returns one point's measurements out of the verdict on a
	// combined process; none when the engine printed nothing for it.
	Split(v Verdict, p *spec.Point) []results.Metric
}

// Locator is an engine that can say where a prepared engine is without
// preparing it: for `run --dry-run` and `show`. It never builds, installs
// or opens a connection; a nil *Prepared means "not prepared yet".
type Locator interface {
	Locate(ctx context.Context, req Request) (*Prepared, error)
}

// Builder is an engine that rigor compiles from source into its build
// cache (<cache>/builds).
type Builder interface {
	// BuildKey is the build cache key Prepare would build req under, ""
	// when this experiment's engine is not built by rigor (prebuilt):
	// `cache prune` keeps the builds that some lockfile still uses.
	BuildKey(ctx context.Context, req Request) (string, error)
}

// As finds the capability T of an engine (one of the interfaces above): the
// engine itself when it is a T, else the engine it wraps (an
// `Unwrap() Engine` method, as serve mode's wrapper has), and so on down,
// the way net/http's ResponseController finds what a ResponseWriter can
// do through the writers wrapped around it. A wrapper that must change
// how a capability behaves implements it itself and is found first; one
// that does not is invisible, so a wrapper never claims a capability the
// family lacks, and adding a capability adds no wrapper type.
func As[T any](e Engine) (T, bool) {
	for e != nil {
		if t, ok := e.(T); ok {
			return t, true
		}
		w, ok := e.(interface{ Unwrap() Engine })
		if !ok {
			break
		}
		e = w.Unwrap()
	}
	var zero T
	return zero, false
}

// Capability names one of the optional interfaces an engine may have.
type Capability string

// The capabilities, by their interfaces' names.
const (
	CapSweeper Capability = "Sweeper"
	CapLocator Capability = "Locator"
	CapBuilder Capability = "Builder"
	CapServer  Capability = "Server"
	// CapQualifier: quality.measure (perplexity and KL divergence).
	CapQualifier Capability = "Qualifier"
)

// Capabilities lists what [As] finds of e, in the order of the constants.
func Capabilities(e Engine) []Capability {
	var out []Capability
	add := func(c Capability, ok bool) {
		if ok {
			out = append(out, c)
		}
	}
	_, ok := As[Sweeper](e)
	add(CapSweeper, ok)
	_, ok = As[Locator](e)
	add(CapLocator, ok)
	_, ok = As[Builder](e)
	add(CapBuilder, ok)
	_, ok = As[Server](e)
	add(CapServer, ok)
	_, ok = As[Qualifier](e)
	add(CapQualifier, ok)
	return out
}

// Request is what Prepare, Locate and BuildKey get: a locked experiment and
// where things are.
type Request struct {
	Experiment *spec.Experiment
	// Lock is the experiment's lock entry.
	Lock *lock.Entry
	// Root is the module root; relative paths of the experiment and the
	// lock (patches, a prebuilt engine, a local git source) are relative
	// to it.
	Root string
	// Cache is rigor's cache directory (builds, git mirrors, engine
	// installs).
	Cache string
	// Offline forbids network access.
	Offline bool
	// Getenv reads rigor's environment (a served endpoint's API key by
	// the name the experiment gives); nil reads nothing.
	Getenv func(string) (string, bool)
	// Rebuild discards a cached build and builds again.
	Rebuild bool
	// Jobs bounds parallel compile jobs; 0 means the number of CPUs.
	Jobs int
	// Progress receives one line per step.
	Progress func(string)
	// BuildProgress receives a build's percentage and its latest line.
	BuildProgress func(pct int, line string)
	// BuildLog receives a build's output as it happens.
	BuildLog io.Writer
}

// Say sends a progress line, if anyone listens.
func (r Request) Say(format string, args ...any) {
	if r.Progress != nil {
		r.Progress(fmt.Sprintf(format, args...))
	}
}

// Abs makes a path of the experiment or the lock absolute against the
// module root. A bare name without a slash or a dot stays as it is (a
// command looked up on PATH).
func (r Request) Abs(p string) string {
	if p == "" || filepath.IsAbs(p) || !strings.Contains(p, "/") && !strings.Contains(p, ".") {
		return p
	}
	return filepath.Join(r.Root, filepath.FromSlash(p))
}

// Prepared is an engine ready to run.
type Prepared struct {
	// BinDir is the directory of the engine's programs (Inputs.BinDir).
	BinDir string `json:"bin"`
	// Engine is what a record says of the engine: family, source, ref,
	// commit, version, build id, backend, patches and binaries.
	Engine results.Engine `json:"engine"`
	// Binaries maps each executable a run may start, and each library it
	// loads, by name, to the sha256 of its bytes. A name is the file's
	// path relative to BinDir, unless Paths says otherwise.
	Binaries map[string]string `json:"binaries,omitempty"`
	// Paths maps the names of Binaries whose files are not BinDir/name
	// to their absolute paths (a cached llama.cpp build's libraries, named
	// by their path under the build tree: "lib/libggml-base.so").
	Paths map[string]string `json:"paths,omitempty"`
	// BuildCommit is the commit the engine reports it was built from,
	// when it reports one.
	BuildCommit string `json:"buildCommit,omitempty"`
	// Cached is true when nothing had to be built or installed.
	Cached bool `json:"cached"`
	// Toolchain adds to the rig's toolchain versions (node for
	// node-llama-cpp).
	Toolchain map[string]string `json:"toolchain,omitempty"`
	// Warnings are recorded with every run of the engine.
	Warnings []string `json:"warnings,omitempty"`
	// InstallDir is the engine install a build was made from when a rerun
	// needs it too (node-llama-cpp's localBuild: the build's key names the
	// install, which must be there to find the build); its key is the
	// directory's name. rigor archive keeps it beside the build.
	InstallDir string `json:"installDir,omitempty"`
}

// Finished is what a run's bench process left behind.
type Finished struct {
	Stdout, Stderr []byte
	// ExitCode is the exit status; 128+signal (or -1) with Signaled for a
	// process killed by a signal.
	ExitCode int
	Signaled bool
	// Outputs are the files the plan declared (Process.Outputs), by name;
	// a file the process did not write is absent.
	Outputs map[string][]byte
	// Commit is the locked commit of an engine built from git; an engine
	// that reports another build commit did not run the lock.
	Commit string
	// Stopped says why rigor stopped the run early, if it did.
	Stopped Stop
	// StopErr says more about Stopped.
	StopErr error
	// WorkerDeath describes the workers that died by themselves while the
	// bench ran (the bench then ended by itself); it leads the error of a
	// run that did not succeed.
	WorkerDeath string
}

// Stop is why a run ended before its bench process did.
type Stop int

const (
	// NotStopped: the bench process ended by itself.
	NotStopped Stop = iota
	// StoppedTimeout: the run took longer than its timeout.
	StoppedTimeout
	// StoppedInterrupt: the user interrupted rigor.
	StoppedInterrupt
	// StoppedWorker: a worker died or never became ready.
	StoppedWorker
	// StoppedStart: a process could not be started.
	StoppedStart
)

// Verdict is what a finished run achieved.
type Verdict struct {
	// Status is a results.Status* value.
	Status string
	// Error says why the status is not ok.
	Error string
	// LogTail is the end of the engine's log when the status is not ok.
	LogTail string
	// Metrics are the measurements, kept whatever the status.
	Metrics []results.Metric
	// Warnings are recorded with the run.
	Warnings []string
	// Build is what the engine's output says of the binary that ran (its
	// flavour, CPU features, backends), nil when it says nothing; records
	// carry it as engine.build, and the comparability guard compares it.
	Build *results.Build
	// Detail is the engine's own reading of the output, for its
	// [Sweeper.Split].
	Detail any
	// TimedSeconds is the length of the engine's measured part as it
	// reports it (the load generator's duration); 0 when it does not say,
	// and the runner places the section from the repetitions' tokens and
	// tok/s. The power sampler's energy of that section gives tok/J.
	TimedSeconds float64
	// StopReason, when set, says why a worker stopped the run in the
	// engine's terms, read from the stop error that carries the end of the
	// worker's log (a server of serve mode that rejected its arguments or
	// failed to load the model); [Conclude] uses it instead of the
	// generic message when a worker stopped the run.
	StopReason string
}

// Conclude judges a finished run with its engine and merges in how the run
// stopped: a timeout, an interrupt or a dead worker decides the status,
// and measurements printed before it are kept with a warning; a process
// that could not start has nothing to judge. A run that reports no
// measurements is never ok.
func Conclude(e Engine, p *spec.Point, f Finished) Verdict {
	var stopped Verdict
	switch f.Stopped {
	case StoppedTimeout:
		stopped.Status = results.StatusTimeout
	case StoppedInterrupt:
		stopped.Status = results.StatusInterrupted
		stopped.Error = "interrupted by the user"
	case StoppedWorker, StoppedStart:
		stopped.Status = results.StatusFailed
	}
	if f.StopErr != nil && stopped.Error == "" {
		stopped.Error = f.StopErr.Error()
	}
	if f.Stopped == StoppedStart {
		return stopped
	}
	v := e.Judge(p, f)
	if f.Stopped == NotStopped && v.Status != results.StatusOK && v.Status != "" {
		// The engine's reading of its own end is not the whole story when
		// something else ended it: a worker that died first, or a signal
		// rigor did not send.
		if f.WorkerDeath != "" {
			v.Error = f.WorkerDeath + "; then the engine failed: " + v.Error
		} else if sig := signalOf(f); outsideSignals[sig] {
			v.Error = "the engine " + DescribeSignal(sig, 128+int(unix.SignalNum(sig)))
			if n := len(v.Metrics); n > 0 {
				v.Error += fmt.Sprintf(", after %d %s", n, plural(n, "measurement", "measurements"))
			}
		}
	}
	if stopped.Status != "" {
		if len(v.Metrics) > 0 && f.Stopped != StoppedInterrupt {
			v.Warnings = append(v.Warnings, fmt.Sprintf("%d %s printed before the run stopped; %s kept",
				len(v.Metrics), plural(len(v.Metrics), "measurement was", "measurements were"), plural(len(v.Metrics), "it is", "they are")))
		}
		tail := v.LogTail
		if f.Stopped == StoppedWorker && v.StopReason != "" {
			stopped.Error = v.StopReason
		}
		v.Status, v.Error, v.LogTail = stopped.Status, stopped.Error, ""
		if tail != "" {
			v.LogTail = tail
		}
	}
	if v.Status == "" {
		v.Status, v.Error = results.StatusFailed, "no verdict"
	}
	if v.Status == results.StatusOK && len(v.Metrics) == 0 {
		v.Status, v.Error = results.StatusFailed, "the engine reported no measurements"
	}
	return v
}

// outsideSignals are the signals a failing program does not raise itself:
// a process killed by one that rigor did not send was killed by someone
// else (a user, a scheduler, the OOM killer for SIGKILL).
var outsideSignals = map[string]bool{
	"SIGHUP": true, "SIGINT": true, "SIGQUIT": true, "SIGKILL": true,
	"SIGTERM": true, "SIGUSR1": true, "SIGUSR2": true,
}

// DescribeSignal says how a process that rigor did not stop was ended by
// the signal sig ("SIGABRT"): "died of SIGABRT (exit 134)", or, for a
// signal a program does not raise itself, "was killed by SIGTERM from
// outside rigor (exit 143)".
func DescribeSignal(sig string, exit int) string {
	if outsideSignals[sig] {
		s := fmt.Sprintf("was killed by %s from outside rigor (exit %d)", sig, exit)
		if sig == "SIGKILL" {
			s += ": another process or the kernel's OOM killer"
		}
		return s
	}
	return fmt.Sprintf("died of %s (exit %d)", sig, exit)
}

// signalOf names the signal that ended a finished process ("SIGTERM"),
// from its exit status 128+N (or Signaled); "" when none did.
func signalOf(f Finished) string {
	n := 0
	switch {
	case f.ExitCode > 128 && f.ExitCode < 128+65:
		n = f.ExitCode - 128
	case f.Signaled && f.ExitCode > 0 && f.ExitCode < 65:
		n = f.ExitCode
	}
	if n == 0 {
		return ""
	}
	return unix.SignalName(syscall.Signal(n))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// HashBinaries returns the sha256 of each named file in dir, by name,
// through the stat-keyed hash cache under cache (a file whose size, mtime,
// inode and ctime did not change is not read again). A missing file is an
// error naming it.
func HashBinaries(ctx context.Context, cache, dir string, names ...string) (map[string]string, error) {
	paths := make([]string, len(names))
	for i, n := range names {
		paths[i] = filepath.Join(dir, n)
	}
	h := &lock.Hasher{Cache: cache}
	sums, err := h.Hash(ctx, paths)
	if err != nil {
		return nil, fmt.Errorf("hashing the engine's binaries: %w", err)
	}
	out := make(map[string]string, len(names))
	for i, n := range names {
		out[n] = sums[i].SHA256
	}
	return out, nil
}

// Server is a family that can serve: serve mode (engine/serve) runs it as
// an OpenAI-compatible server, or reaches one that is already running, and
// measures it with rigor's load generator. A family that lacks it cannot
// serve; engine/all wraps every family with serve mode, and the wrapper
// asks the family for this capability, so adding a family that serves
// touches only its own package and the registry.
type Server interface {
	// PrepareServer is Prepare for a serve experiment: the engine with the
	// server's executable among its binaries (for a server rigor starts),
	// or the description of a server it reaches. Prepare's contract
	// holds.
	PrepareServer(ctx context.Context, req Request) (*Prepared, error)
	// Serve says how a run of the serve point reaches its server: the
	// processes that start it (workers first, the server last, bound to
	// at; none for a server rigor does not start) and the address the
	// load generator talks to. Plan's contract holds: argv only,
	// deterministic, no side effects.
	Serve(p *spec.Point, in Inputs, at Listen) (*Served, error)
}

// Listen is the address a server that rigor starts binds to (schema
// #Serve's host and port).
type Listen struct {
	Host string
	Port int
}

// Addr is host:port.
func (l Listen) Addr() string { return net.JoinHostPort(l.Host, strconv.Itoa(l.Port)) }

// URL is the base URL of a server bound to l.
func (l Listen) URL() string { return "http://" + l.Addr() }

// Served is how a serve run reaches its server.
type Served struct {
	// Processes start the server, workers first; none when rigor does not
	// start it.
	Processes []Process
	// URL is the server's base URL, without credentials; the load
	// generator appends /v1/completions and the like.
	URL string
	// Health is the path the load generator polls until it answers 200
	// before measuring (a server rigor started is loading its model);
	// "" for none.
	Health string
	// APIKeyEnv names the variable holding the API key the load
	// generator sends; its value reaches the load generator through
	// Process.SecretEnv and is never recorded.
	APIKeyEnv string
}

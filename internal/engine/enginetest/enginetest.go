// Package enginetest is the conformance suite every engine family runs in
// its own tests (as litestream's integration tests do for every replica
// client): what the engine boundary promises, checked the same way for
// llama.cpp, ik_llama.cpp, vLLM and node-llama-cpp.
//
//   - Plans are argv only (no shell), name the inputs they are given, render
//     placeholders for inputs not known yet, and are deterministic.
//   - Recorded outputs of a success, a crash after output, rejected
//     arguments and a model that failed to load give the same statuses in
//     every family; a timeout and an interrupt keep what was measured; a
//     process that never started is failed without being judged; no bytes
//     make Judge panic or return no status.
//   - Preparing offline opens no network connection, preparing twice is a
//     cache hit, and the binaries a run starts are hashed.
package enginetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/spec"
)

// Case is what a family gives the suite.
type Case struct {
	Engine engine.Engine
	// Point is a point of an experiment of the family (see [LoadPoints]),
	// planned and judged by the suite. Its model should be a path.
	Point *spec.Point
	// Recorded outputs of the bench process, each as a run collected it.
	Success, CrashAfterOutput, RejectedArgs, FailedLoad engine.Finished
	// Unpinned says the family reaches a server rigor did not start (the
	// endpoint family): nothing is built, installed or hashed, Prepare
	// says the engine is not pinned, and plans name the model by its
	// name rather than a path. RejectedArgs and FailedLoad may then be
	// left zero: rigor starts nothing that could reject them.
	Unpinned bool
	// ReportsBuild says the family's output says which binary ran
	// (llama-bench's backends and devices, the node runner's build type
	// and CPU features): judging Success must give a Verdict.Build.
	ReportsBuild bool
	// Capabilities are the capabilities the family means to have
	// (engine.Capabilities' order): the suite fails when engine.As finds
	// one more or one less, directly or through a wrapper.
	Capabilities []engine.Capability
	// Prepare returns a request whose engine can be prepared on this
	// machine without the network (a test engine built from a local git
	// repository, an install seeded into the cache, a stand-in), or skips
	// with a reason. The suite points every proxy and registry variable at
	// a port that fails the test when anything connects.
	Prepare func(t *testing.T) engine.Request
}

// Run runs the suite.
func Run(t *testing.T, c Case) {
	t.Helper()
	if c.Engine == nil || c.Point == nil {
		t.Fatal("enginetest: Case needs an Engine and a Point")
	}
	if got := c.Point.Spec.Engine.Family; got != c.Engine.Family() {
		t.Fatalf("enginetest: the point's family is %q, the engine's %q", got, c.Engine.Family())
	}
	t.Run("Capabilities", func(t *testing.T) { testCapabilities(t, c) })
	t.Run("Plan", func(t *testing.T) { testPlan(t, c) })
	t.Run("Judge", func(t *testing.T) { testJudge(t, c) })
	t.Run("Prepare", func(t *testing.T) { testPrepare(t, c) })
}

// unwrapOnly wraps an engine and claims nothing: engine.As must find the
// wrapped engine's capabilities through it.
type unwrapOnly struct{ engine.Engine }

func (w unwrapOnly) Unwrap() engine.Engine { return w.Engine }

func testCapabilities(t *testing.T, c Case) {
	want := fmt.Sprint(c.Capabilities)
	if got := fmt.Sprint(engine.Capabilities(c.Engine)); got != want {
		t.Errorf("engine.As finds the capabilities %s of %s, want %s", got, c.Engine.Family(), want)
	}
	if got := fmt.Sprint(engine.Capabilities(unwrapOnly{c.Engine})); got != want {
		t.Errorf("through a wrapper, engine.As finds the capabilities %s of %s, want %s", got, c.Engine.Family(), want)
	}
}

func testPlan(t *testing.T, c Case) {
	in := engine.Inputs{BinDir: "/opt/engine/bin", Model: "/models/conformance.gguf", RunDir: "/tmp/run-x"}
	a, err := c.Engine.Plan(c.Point, in)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	b, err := c.Engine.Plan(c.Point, in)
	if err != nil {
		t.Fatalf("Plan again: %v", err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Errorf("Plan is not deterministic:\n%s\n%s", ja, jb)
	}
	if len(a.Processes) == 0 {
		t.Fatal("Plan has no processes")
	}
	if a.Family != c.Engine.Family() || a.Point != c.Point.ID {
		t.Errorf("Plan is of %s/%s, want %s/%s", a.Family, a.Point, c.Engine.Family(), c.Point.ID)
	}
	bench := a.Processes[len(a.Processes)-1]
	if bench.Role != "bench" {
		t.Errorf("the last process is a %q, want the bench", bench.Role)
	}
	for _, p := range a.Processes {
		if len(p.Argv) == 0 || p.Argv[0] == "" {
			t.Errorf("process %s has no program", p.Name)
			continue
		}
		prog := filepath.Base(p.Argv[0])
		if (prog == "sh" || prog == "bash" || prog == "dash") && len(p.Argv) > 1 && p.Argv[1] == "-c" {
			t.Errorf("process %s runs a shell: %q", p.Name, p.Argv)
		}
		for _, w := range p.Argv {
			if w == "" && p.Role != "bench" {
				t.Errorf("process %s has an empty argv word: %q", p.Name, p.Argv)
			}
		}
	}
	model := in.Model
	if c.Unpinned {
		model = c.Point.Spec.Model.Name
	}
	if !strings.Contains(strings.Join(bench.Argv, " "), model) {
		t.Errorf("the bench argv does not name the model %s: %q", model, bench.Argv)
	}
	usesBin := false
	for _, w := range bench.Argv {
		usesBin = usesBin || strings.HasPrefix(w, in.BinDir)
	}
	// An engine found on PATH or by its interpreter (vLLM) needs no bin
	// directory; one that has it must use it and show a placeholder
	// without it.
	if usesBin {
		p, err := c.Engine.Plan(c.Point, engine.Inputs{Model: in.Model})
		if err != nil {
			t.Fatalf("Plan without a bin directory: %v", err)
		}
		if s := p.Processes[len(p.Processes)-1].Shell(); !strings.Contains(s, engine.BinDirPlaceholder) {
			t.Errorf("a plan before the engine is prepared shows no %s: %s", engine.BinDirPlaceholder, s)
		}
	}
	// extraArgs that rigor controls are refused with a typed error.
	bad := *c.Point
	bad.Spec.ExtraArgs = append(append([]string(nil), c.Point.Spec.ExtraArgs...), "--model", "x")
	if _, err := c.Engine.Plan(&bad, in); err == nil {
		t.Errorf("Plan with extraArgs --model: no error, want a *ReservedArgError")
	} else if _, ok := err.(*engine.ReservedArgError); !ok {
		t.Errorf("Plan with extraArgs --model: %T %v, want a *ReservedArgError", err, err)
	}
}

func testJudge(t *testing.T, c Case) {
	check := func(name string, f engine.Finished, status string, metrics bool, errHas ...string) engine.Verdict {
		t.Helper()
		v := engine.Conclude(c.Engine, c.Point, f)
		if v.Status != status {
			t.Errorf("%s: status %q (%s), want %q", name, v.Status, v.Error, status)
		}
		if metrics && len(v.Metrics) == 0 {
			t.Errorf("%s: no measurements, want them kept", name)
		}
		if !metrics && len(v.Metrics) > 0 && status != results.StatusOK {
			t.Errorf("%s: %d measurements, want none", name, len(v.Metrics))
		}
		if status != results.StatusOK && v.Error == "" {
			t.Errorf("%s: status %s without a reason", name, status)
		}
		for _, s := range errHas {
			if !strings.Contains(strings.ToLower(v.Error), s) {
				t.Errorf("%s: error %q does not say %q", name, v.Error, s)
			}
		}
		return v
	}
	ok := check("success", c.Success, results.StatusOK, true)
	if c.ReportsBuild && (ok.Build == nil || ok.Build.Backends == "" && ok.Build.Summary() == "") {
		t.Errorf("success: build %+v, want what the output says of the binary that ran", ok.Build)
	}
	for _, m := range ok.Metrics {
		if m.Name == "" || m.Unit == "" || m.Value <= 0 {
			t.Errorf("success: metric %+v lacks a name, a unit or a value", m)
		}
	}
	check("crash after output", c.CrashAfterOutput, results.StatusCrashed, true)
	if !c.Unpinned || !reflect.DeepEqual(c.RejectedArgs, engine.Finished{}) {
		check("rejected arguments", c.RejectedArgs, results.StatusFailed, false, "rejected")
	}
	if !c.Unpinned || !reflect.DeepEqual(c.FailedLoad, engine.Finished{}) {
		check("failed load", c.FailedLoad, results.StatusFailed, false, "load")
	}

	timeout := c.Success
	timeout.Stopped, timeout.StopErr = engine.StoppedTimeout, fmt.Errorf("bench did not finish within 1s")
	v := check("timeout", timeout, results.StatusTimeout, true, "did not finish")
	if len(v.Warnings) == 0 {
		t.Errorf("timeout: no warning that measurements were kept")
	}
	intr := c.CrashAfterOutput
	intr.Stopped = engine.StoppedInterrupt
	check("interrupt", intr, results.StatusInterrupted, true, "interrupted")
	start := engine.Finished{Stopped: engine.StoppedStart, StopErr: fmt.Errorf("fork/exec /x/llama-bench: exec format error"), ExitCode: -1}
	check("start failure", start, results.StatusFailed, false, "exec format error")

	// No bytes make Judge panic or leave the status empty.
	for i, f := range []engine.Finished{
		{},
		{Stdout: []byte("[\n{"), ExitCode: 0},
		{Stdout: []byte{0xff, 0xfe, 0, '{', '"'}, Stderr: []byte{0xff, '\n'}, ExitCode: 139, Signaled: true},
		{Stdout: bytes.Repeat([]byte("{}"), 1000), ExitCode: 1},
		{Outputs: map[string][]byte{"vllm-result.json": []byte("{")}, ExitCode: 0},
	} {
		v := engine.Conclude(c.Engine, c.Point, f)
		if v.Status == "" || v.Status == results.StatusOK {
			t.Errorf("garbage %d: status %q, want a failure", i, v.Status)
		}
	}
}

// closedNetwork points every proxy and registry variable at a listener that
// counts connections, and returns the count.
func closedNetwork(t *testing.T) *atomic.Int64 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var n atomic.Int64
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			conn.Close()
		}
	}()
	url := "http://" + l.Addr().String()
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
		"npm_config_registry", "HF_ENDPOINT"} {
		t.Setenv(k, url)
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	t.Setenv("HF_HUB_OFFLINE", "1")
	t.Setenv("GIT_TERMINAL_PROMPT", "0")
	return &n
}

func testPrepare(t *testing.T, c Case) {
	if c.Prepare == nil {
		t.Skip("enginetest: the case prepares nothing")
	}
	conns := closedNetwork(t)
	req := c.Prepare(t)
	ctx := context.Background()
	first, err := c.Engine.Prepare(ctx, req)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if c.Unpinned {
		testPrepareUnpinned(t, c, req, first, conns)
		return
	}
	if first.BinDir == "" {
		t.Error("Prepare: no bin directory")
	}
	if first.Engine.Family != c.Engine.Family() {
		t.Errorf("Prepare: engine family %q, want %q", first.Engine.Family, c.Engine.Family())
	}
	if first.Engine.BuildID == "" {
		t.Error("Prepare: no build id: a record could not say which engine ran")
	}
	if len(first.Binaries) == 0 {
		t.Error("Prepare: no binaries hashed")
	}
	for name, sum := range first.Binaries {
		if len(sum) != 64 {
			t.Errorf("binary %s: sha256 %q", name, sum)
			continue
		}
		path := name
		if !filepath.IsAbs(path) {
			path = filepath.Join(first.BinDir, filepath.FromSlash(name))
		}
		if b, err := os.ReadFile(path); err == nil {
			h := sha256.Sum256(b)
			if got := hex.EncodeToString(h[:]); got != sum {
				t.Errorf("binary %s: recorded sha256 %s, the file's is %s", name, sum, got)
			}
		}
	}
	second, err := c.Engine.Prepare(ctx, req)
	if err != nil {
		t.Fatalf("Prepare again: %v", err)
	}
	if !second.Cached {
		t.Error("Prepare again: not a cache hit")
	}
	if second.BinDir != first.BinDir || second.Engine.BuildID != first.Engine.BuildID || !reflect.DeepEqual(second.Binaries, first.Binaries) {
		t.Errorf("Prepare again gave another engine:\n%+v\n%+v", first, second)
	}
	off := req
	off.Offline = true
	third, err := c.Engine.Prepare(ctx, off)
	if err != nil {
		t.Fatalf("Prepare offline after a prepare: %v", err)
	}
	if third.BinDir != first.BinDir {
		t.Errorf("Prepare offline: bin %s, want %s", third.BinDir, first.BinDir)
	}
	if l, ok := engine.As[engine.Locator](c.Engine); ok {
		p, err := l.Locate(ctx, off)
		if err != nil || p == nil || p.BinDir != first.BinDir {
			t.Errorf("Locate after Prepare: %+v, %v; want bin %s", p, err, first.BinDir)
		}
	}
	if b, ok := engine.As[engine.Builder](c.Engine); ok {
		k1, err1 := b.BuildKey(ctx, req)
		k2, err2 := b.BuildKey(ctx, off)
		if err1 != nil || err2 != nil || k1 != k2 {
			t.Errorf("BuildKey: %q %v, offline %q %v; want one key", k1, err1, k2, err2)
		}
	}
	if n := conns.Load(); n > 0 {
		t.Errorf("preparing opened %d network connections; want none", n)
	}
}

// testPrepareUnpinned checks Prepare of a server rigor did not start: the
// record says the engine is not pinned and where it was reached, claims
// no binaries, and preparing offline opens no connection.
func testPrepareUnpinned(t *testing.T, c Case, req engine.Request, first *engine.Prepared, conns *atomic.Int64) {
	ctx := context.Background()
	if first.Engine.Family != c.Engine.Family() {
		t.Errorf("Prepare: engine family %q, want %q", first.Engine.Family, c.Engine.Family())
	}
	if first.Engine.Unpinned == "" {
		t.Error("Prepare: the engine does not say it is not pinned")
	}
	if first.Engine.Source == "" {
		t.Error("Prepare: the engine does not say where the server is")
	}
	if len(first.Binaries) > 0 || first.Engine.Commit != "" || first.Engine.BuildID != "" {
		t.Errorf("Prepare: an engine rigor did not start claims binaries, a commit or a build: %+v", first)
	}
	second, err := c.Engine.Prepare(ctx, req)
	if err != nil || !reflect.DeepEqual(second.Engine, first.Engine) {
		t.Errorf("Prepare again: %+v, %v; want %+v", second, err, first)
	}
	off := req
	off.Offline = true
	n := conns.Load()
	if _, err := c.Engine.Prepare(ctx, off); err != nil {
		t.Fatalf("Prepare offline: %v", err)
	}
	if got := conns.Load(); got > n {
		t.Errorf("preparing offline opened %d network connections; want none", got-n)
	}
}

// LoadPoints loads experiments written in CUE against the real schema, in
// a temporary module, and returns every point by id ("c/<name>"). src is
// the body of a package that imports the schema.
func LoadPoints(t testing.TB, src string) map[string]*spec.Point {
	t.Helper()
	return LoadPackage(t, "c", src)
}

// LoadPackage is [LoadPoints] with the experiments in package pkg (ids
// "<pkg>/<name>").
func LoadPackage(t testing.TB, pkg, src string) map[string]*spec.Point {
	t.Helper()
	root := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("cue.mod/module.cue", "module: \"example.com/conformance@v0\"\nlanguage: version: \"v0.17.0\"\n")
	write("experiments/"+pkg+"/"+pkg+".cue", "package "+pkg+"\n\nimport \"github.com/rigorbench/rigor/schema\"\n\n"+src)
	set, err := spec.Load(spec.Options{Root: root})
	if err != nil {
		t.Fatalf("loading experiments: %v", err)
	}
	for _, p := range set.Problems {
		t.Fatalf("problem in the test experiments: %v", p)
	}
	points := map[string]*spec.Point{}
	for _, e := range set.Experiments {
		for _, p := range e.Points {
			points[p.ID] = p
		}
	}
	return points
}

// ReadFinished reads a recorded process from base.stdout, base.stderr and
// base.rc (the exit status; above 128 a death by signal).
func ReadFinished(t testing.TB, base string) engine.Finished {
	t.Helper()
	var f engine.Finished
	var err error
	if f.Stdout, err = os.ReadFile(base + ".stdout"); err != nil {
		t.Fatal(err)
	}
	if f.Stderr, err = os.ReadFile(base + ".stderr"); err != nil {
		t.Fatal(err)
	}
	rc, err := os.ReadFile(base + ".rc")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Sscan(strings.TrimSpace(string(rc)), &f.ExitCode); err != nil {
		t.Fatalf("%s.rc: %v", base, err)
	}
	f.Signaled = f.ExitCode > 128
	return f
}

// NeedTool skips the test when a program it needs (cmake, node, npm) is
// not on the PATH, except in CI (CI=true), where .ci/run installs them:
// there a missing tool fails the test instead of skipping it silently.
func NeedTool(t testing.TB, names ...string) {
	t.Helper()
	for _, name := range names {
		if _, err := exec.LookPath(name); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not on the PATH, and CI must run this test (.ci/run installs it)", name)
			}
			t.Skipf("%s is not on the PATH", name)
		}
	}
}

package llamacpp_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/buildcache"
	"github.com/rigorbench/rigor/internal/engine/enginetest"
	"github.com/rigorbench/rigor/internal/engine/llamabench"
	"github.com/rigorbench/rigor/internal/engine/llamacpp"
	"github.com/rigorbench/rigor/internal/engine/llamacpp/testengine"
	"github.com/rigorbench/rigor/internal/gitsrc"
	"github.com/rigorbench/rigor/internal/spec"
)

// engineSrc is a test engine repository with its commits and patches.
type engineSrc struct {
	dir, patches string
	commits      map[string]string
}

func needCmake(t testing.TB) {
	t.Helper()
	enginetest.NeedTool(t, "cmake")
}

func newEngineSrc(t testing.TB, ik bool) engineSrc {
	t.Helper()
	needCmake(t)
	root := t.TempDir()
	s := engineSrc{dir: filepath.Join(root, "engine"), patches: filepath.Join(root, "patches")}
	var err error
	s.commits, err = testengine.Write(s.dir, testengine.Options{IK: ik, PatchDir: s.patches})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// patch returns the locked input of one of the test engine's patches.
func (s engineSrc) patch(t testing.TB, name string) llamacpp.PatchInput {
	t.Helper()
	p := filepath.Join(s.patches, name)
	sum, _, err := gitsrc.HashFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return llamacpp.PatchInput{Path: p, SHA256: sum}
}

func (s engineSrc) opts(t testing.TB, ref string) llamacpp.BuildOptions {
	return llamacpp.BuildOptions{
		Cache:  filepath.Join(t.TempDir(), "cache"),
		URL:    s.dir,
		Commit: s.commits[ref],
		Fork:   spec.FamilyLlamaCpp,
		Jobs:   2,
	}
}

// completeEntries lists the complete entries of the cache.
func completeEntries(t testing.TB, cache string) []buildcache.Item {
	t.Helper()
	items, err := buildcache.Cache{Root: cache}.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []buildcache.Item
	for _, it := range items {
		if it.State == buildcache.StateComplete {
			out = append(out, it)
		}
	}
	return out
}

// fakeModel writes a file llama-bench of the test engine accepts.
func fakeModel(t testing.TB) string {
	p := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := os.WriteFile(p, append([]byte("GGUF"), make([]byte, 4096)...), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func runBin(t testing.TB, env []string, bin string, args ...string) (stdout, stderr []byte, code int, signaled bool) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
		signaled = code == -1
	case err != nil:
		t.Fatalf("running %s: %v", bin, err)
	}
	return o.Bytes(), e.Bytes(), code, signaled
}

func TestBuild_patchedThenCached(t *testing.T) {
	s := newEngineSrc(t, false)
	opts := s.opts(t, testengine.V2)
	opts.Patches = []llamacpp.PatchInput{s.patch(t, "cpu-info.patch")}
	opts.RPC = true
	var pcts []int
	opts.Progress = func(pct int, line string) { pcts = append(pcts, pct) }
	b, err := llamacpp.Build(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if b.Cached {
		t.Errorf("first build: Cached = true, want false")
	}
	if want := s.commits[testengine.V2][:7]; b.BuildCommit != want {
		t.Errorf("BuildCommit = %q, want %q", b.BuildCommit, want)
	}
	if len(pcts) == 0 || pcts[len(pcts)-1] != 100 {
		t.Errorf("progress = %v, want percentages ending at 100", pcts)
	}
	for i := 1; i < len(pcts); i++ {
		if pcts[i] < pcts[i-1] {
			t.Errorf("progress went back: %v", pcts)
			break
		}
	}
	log, err := os.ReadFile(filepath.Join(b.Dir, buildcache.LogFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"testengine: GGML_RPC=ON", "-DCMAKE_BUILD_TYPE=Release", "--target llama-bench rpc-server llama-server llama-perplexity -j 2"} {
		if !bytes.Contains(log, []byte(want)) {
			t.Errorf("build.log lacks %q", want)
		}
	}
	// The binary is the patched one and reports the locked commit.
	stdout, stderr, code, _ := runBin(t, nil, b.Bins["llama-bench"], "-m", fakeModel(t), "-p", "8", "-n", "4", "-r", "2", "-o", "json")
	if code != 0 {
		t.Fatalf("llama-bench exited %d: %s", code, stderr)
	}
	rows, complete, err := llamabench.ParseJSON(stdout)
	if err != nil || !complete || len(rows) != 2 {
		t.Fatalf("ParseJSON: %d rows, complete %v, err %v; want 2 complete rows", len(rows), complete, err)
	}
	if rows[0].BuildCommit != b.BuildCommit {
		t.Errorf("row build_commit = %q, want %q", rows[0].BuildCommit, b.BuildCommit)
	}
	if !bytes.Contains(stdout, []byte(`"cpu_info": "Patched CPU"`)) {
		t.Errorf("llama-bench output lacks the patched cpu_info:\n%s", stdout)
	}

	// The second build is a cache hit: same id, no build.
	opts.Progress = nil
	start := time.Now()
	b2, err := llamacpp.Build(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cache hit in %v", time.Since(start))
	if !b2.Cached || b2.ID != b.ID {
		t.Errorf("second build: Cached %v, ID %s; want a hit on %s", b2.Cached, b2.ID, b.ID)
	}
	if _, err := llamacpp.LookupBuild(context.Background(), opts); err != nil {
		t.Errorf("LookupBuild after a build: %v", err)
	}
	// Another recipe is another key.
	opts.Recipe.CMake = []string{"-DEXTRA=1"}
	if _, err := llamacpp.LookupBuild(context.Background(), opts); !errors.Is(err, buildcache.ErrNotFound) {
		t.Errorf("LookupBuild with another recipe: got %v, want ErrNotFound", err)
	}
}

func TestBuild_patchNoLongerApplies(t *testing.T) {
	s := newEngineSrc(t, false)
	opts := s.opts(t, testengine.V2)
	opts.Patches = []llamacpp.PatchInput{s.patch(t, "cpu-info.patch"), s.patch(t, "threads-v1.patch")}
	_, err := llamacpp.Build(context.Background(), opts)
	var pe *gitsrc.PatchError
	if !errors.As(err, &pe) {
		t.Fatalf("got %v, want a *gitsrc.PatchError", err)
	}
	if pe.Position != 2 || !strings.HasSuffix(pe.Patch, "threads-v1.patch") {
		t.Errorf("PatchError names patch %d %s, want 2 threads-v1.patch", pe.Position, pe.Patch)
	}
	if got := completeEntries(t, opts.Cache); len(got) != 0 {
		t.Errorf("a failed build left complete entries: %+v", got)
	}
	// The same patch applies at v1.
	opts.Commit = s.commits[testengine.V1]
	if _, err := llamacpp.Build(context.Background(), opts); err != nil {
		t.Errorf("patches at v1: %v", err)
	}
}

func TestBuild_patchChanged(t *testing.T) {
	s := newEngineSrc(t, false)
	opts := s.opts(t, testengine.V2)
	p := s.patch(t, "cpu-info.patch")
	p.SHA256 = strings.Repeat("0", 64)
	opts.Patches = []llamacpp.PatchInput{p}
	_, err := llamacpp.Build(context.Background(), opts)
	var pc *llamacpp.PatchChangedError
	if !errors.As(err, &pc) {
		t.Fatalf("got %v, want a *PatchChangedError", err)
	}
}

func TestBuild_compileFails(t *testing.T) {
	s := newEngineSrc(t, false)
	opts := s.opts(t, testengine.Broken)
	_, err := llamacpp.Build(context.Background(), opts)
	var fe *buildcache.FailedError
	if !errors.As(err, &fe) {
		t.Fatalf("got %v, want a *buildcache.FailedError", err)
	}
	if !strings.Contains(fe.Tail, "error:") || !strings.Contains(err.Error(), "llama-bench.c") {
		t.Errorf("error lacks the compiler's message in the log tail:\n%v", err)
	}
	if n := strings.Count(fe.Tail, "\n") + 1; n > buildcache.TailLines {
		t.Errorf("tail has %d lines, want at most %d", n, buildcache.TailLines)
	}
	if _, err := os.Stat(fe.Log); err != nil {
		t.Errorf("failed build log not kept: %v", err)
	}
	if got := completeEntries(t, opts.Cache); len(got) != 0 {
		t.Errorf("a failed build left complete entries: %+v", got)
	}
}

func TestBuild_interrupted(t *testing.T) {
	s := newEngineSrc(t, false)
	opts := s.opts(t, testengine.V2)
	opts.Recipe.Env = map[string]string{"TESTENGINE_BUILD_SLEEP": "60"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	opts.Log = writerFunc(func(b []byte) {
		if bytes.Contains(b, []byte("cmake --build")) {
			once.Do(func() { time.AfterFunc(500*time.Millisecond, cancel) })
		}
	})
	start := time.Now()
	_, err := llamacpp.Build(ctx, opts)
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want an error wrapping context.Canceled", err)
	}
	t.Logf("interrupted after %v", time.Since(start))
	items, err := buildcache.Cache{Root: opts.Cache}.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if it.State != buildcache.StateFailed {
			t.Errorf("an interrupted build left %s %s", it.State, it.Path)
		}
	}
}

type writerFunc func([]byte)

func (f writerFunc) Write(b []byte) (int, error) { f(b); return len(b), nil }

func TestBuild_concurrentSameKey(t *testing.T) {
	s := newEngineSrc(t, false)
	opts := s.opts(t, testengine.V2)
	opts.Recipe.Env = map[string]string{"TESTENGINE_BUILD_SLEEP": "1"}
	var wg sync.WaitGroup
	res := make([]*llamacpp.BuildInfo, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i], errs[i] = llamacpp.Build(context.Background(), opts)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("build %d: %v", i, err)
		}
	}
	if res[0].ID != res[1].ID {
		t.Errorf("ids differ: %s, %s", res[0].ID, res[1].ID)
	}
	if res[0].Cached == res[1].Cached {
		t.Errorf("Cached = %v, %v; want one build and one reuse", res[0].Cached, res[1].Cached)
	}
	if got := completeEntries(t, opts.Cache); len(got) != 1 {
		t.Errorf("got %d complete entries, want 1", len(got))
	}
}

func TestBuild_commitMismatch(t *testing.T) {
	s := newEngineSrc(t, false)
	opts := s.opts(t, testengine.WrongCommit)
	_, err := llamacpp.Build(context.Background(), opts)
	var ce *llamacpp.CommitMismatchError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a *CommitMismatchError", err)
	}
	if ce.Reported != "0badc0d" || ce.Locked != s.commits[testengine.WrongCommit] {
		t.Errorf("mismatch names %s and %s, want 0badc0d and %s", ce.Reported, ce.Locked, s.commits[testengine.WrongCommit])
	}
	for _, want := range []string{"0badc0d", s.commits[testengine.WrongCommit]} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %s", err, want)
		}
	}
	if got := completeEntries(t, opts.Cache); len(got) != 0 {
		t.Errorf("a rejected build left complete entries: %+v", got)
	}
}

func TestBuild_unreachableSource(t *testing.T) {
	needCmake(t)
	opts := llamacpp.BuildOptions{
		Cache:  t.TempDir(),
		URL:    filepath.Join(t.TempDir(), "no-such-repo"),
		Commit: strings.Repeat("a", 40),
		Fork:   spec.FamilyLlamaCpp,
	}
	if _, err := llamacpp.Build(context.Background(), opts); err == nil {
		t.Fatal("building from a missing repository succeeded")
	}
	if got := completeEntries(t, opts.Cache); len(got) != 0 {
		t.Errorf("left complete entries: %+v", got)
	}
}

func TestRecipeOf(t *testing.T) {
	for _, c := range []struct {
		build spec.Build
		rpc   bool
		want  string
		env   string
	}{
		{spec.Build{Targets: []string{"llama-bench"}}, false, "-DCMAKE_BUILD_TYPE=Release -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON", ""},
		{spec.Build{Targets: []string{"llama-bench"}}, true, "-DCMAKE_BUILD_TYPE=Release -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON -DGGML_RPC=ON", ""},
		{spec.Build{Backend: "cpu"}, false, "-DCMAKE_BUILD_TYPE=Release -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON -DGGML_RPC=ON", ""},
		{spec.Build{Backend: "cuda", Targets: []string{"llama-bench"}}, false, "-DCMAKE_BUILD_TYPE=Release -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON -DGGML_CUDA=ON", ""},
		{spec.Build{Backend: "sycl", CMake: []string{"-DGGML_SYCL_F16=ON"}}, true, "-DCMAKE_BUILD_TYPE=Release -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON -DGGML_SYCL=ON -DGGML_RPC=ON -DGGML_SYCL_F16=ON", "CC=icx CXX=icpx"},
		{spec.Build{Backend: "sycl", Env: map[string]string{"CXX": "clang++"}, Targets: []string{"llama-bench"}}, false, "-DCMAKE_BUILD_TYPE=Release -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON -DGGML_SYCL=ON", "CC=icx CXX=clang++"},
		{spec.Build{Backend: "vulkan", Targets: []string{"llama-bench"}}, false, "-DCMAKE_BUILD_TYPE=Release -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON -DGGML_VULKAN=ON", ""},
		{spec.Build{Backend: "hip", Targets: []string{"llama-bench"}}, false, "-DCMAKE_BUILD_TYPE=Release -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON -DGGML_HIP=ON", ""},
		{spec.Build{Backend: "metal", Targets: []string{"llama-bench"}}, false, "-DCMAKE_BUILD_TYPE=Release -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON -DGGML_METAL=ON", ""},
	} {
		r, err := llamacpp.RecipeOf(c.build, c.rpc)
		if err != nil {
			t.Errorf("RecipeOf(%+v, %v): %v", c.build, c.rpc, err)
			continue
		}
		if got := strings.Join(r.Configure, " "); got != c.want {
			t.Errorf("RecipeOf(%+v, %v) configure:\ngot  %s\nwant %s", c.build, c.rpc, got, c.want)
		}
		var env []string
		for _, k := range []string{"CC", "CXX"} {
			if v, ok := r.Env[k]; ok {
				env = append(env, k+"="+v)
			}
		}
		if got := strings.Join(env, " "); got != c.env {
			t.Errorf("RecipeOf(%+v) env: got %q, want %q", c.build, got, c.env)
		}
		wantTargets := "llama-bench rpc-server llama-server llama-perplexity"
		if len(c.build.Targets) > 0 {
			wantTargets = strings.Join(c.build.Targets, " ")
		}
		if got := strings.Join(r.Targets, " "); got != wantTargets {
			t.Errorf("RecipeOf(%+v) targets: got %q, want %q", c.build, got, wantTargets)
		}
	}
	if _, err := llamacpp.RecipeOf(spec.Build{Backend: "opencl"}, false); err == nil || !strings.Contains(err.Error(), `"opencl"`) {
		t.Errorf("RecipeOf(opencl): got %v, want an error naming the backend", err)
	}
}

func TestBuildPercent(t *testing.T) {
	for _, c := range []struct {
		line string
		pct  int
		ok   bool
	}{
		{"[ 42%] Building C object x.o", 42, true},
		{"[100%] Built target llama-bench", 100, true},
		{"[  0%] Generating build details", 0, true},
		{"[12/40] Building CXX object", 30, true},
		{"[40/40] Linking", 100, true},
		{"-- Configuring done", 0, false},
		{"[41/40] odd", 0, false},
		{"x [ 42%]", 0, false},
	} {
		pct, ok := llamacpp.BuildPercent(c.line)
		if pct != c.pct || ok != c.ok {
			t.Errorf("BuildPercent(%q) = %d, %v; want %d, %v", c.line, pct, ok, c.pct, c.ok)
		}
	}
}

func TestParseBuildInfo(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"int LLAMA_BUILD_NUMBER = 4748;\nchar const *LLAMA_COMMIT = \"c392e509\";\n", "c392e509"},
		{"char const *LLAMA_BUILD_COMMIT = \"8337e4cd\";", "8337e4cd"},
		{"int LLAMA_BUILD_NUMBER = 1;", ""},
	} {
		if got := llamacpp.ParseBuildInfo([]byte(c.src)); got != c.want {
			t.Errorf("ParseBuildInfo(%q) = %q, want %q", c.src, got, c.want)
		}
	}
}

func FuzzBuildPercent(f *testing.F) {
	for _, s := range []string{"[ 42%] Building", "[12/40] x", "[0/0]", "[999%]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		pct, ok := llamacpp.BuildPercent(line)
		if pct < 0 || pct > 100 || (!ok && pct != 0) {
			t.Errorf("BuildPercent(%q) = %d, %v", line, pct, ok)
		}
	})
}

func FuzzParseBuildInfo(f *testing.F) {
	f.Add([]byte("char const *LLAMA_COMMIT = \"c392e509\";"))
	f.Fuzz(func(t *testing.T, src []byte) {
		got := llamacpp.ParseBuildInfo(src)
		if strings.Contains(got, `"`) {
			t.Errorf("ParseBuildInfo(%q) = %q contains a quote", src, got)
		}
	})
}

func TestPrebuilt(t *testing.T) {
	dir := t.TempDir()
	if _, err := llamacpp.Prebuilt(dir); err == nil {
		t.Errorf("Prebuilt of an empty directory succeeded")
	}
	bin := filepath.Join(dir, "build", "bin")
	os.MkdirAll(bin, 0o755)
	os.WriteFile(filepath.Join(bin, "llama-bench"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(bin, "rpc-server"), []byte("#!/bin/sh\n"), 0o755)
	b, err := llamacpp.Prebuilt(dir)
	if err != nil {
		t.Fatal(err)
	}
	if b.BinDir != bin || b.Bins["rpc-server"] != filepath.Join(bin, "rpc-server") {
		t.Errorf("Prebuilt(%s) = %+v, want bins in %s", dir, b, bin)
	}
}

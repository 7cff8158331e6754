package nodellama

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rigorbench/rigor/internal/buildcache"
	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/engine/enginetest"
	"github.com/rigorbench/rigor/internal/lock"
	"github.com/rigorbench/rigor/internal/spec"
)

// gitBundle makes a real git repository with one commit and bundles it
// (`git bundle create … HEAD main`), as node-llama-cpp ships its source;
// it returns the bundle's bytes and the commit.
func gitBundle(t *testing.T) ([]byte, string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		enginetest.NeedTool(t, "git")
	}
	repo := t.TempDir()
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	if err := os.WriteFile(filepath.Join(repo, "CMakeLists.txt"), []byte("project(x)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", ".")
	git("commit", "-q", "-m", "## SQUASHED ##")
	commit := git("rev-parse", "HEAD")
	bundle := filepath.Join(t.TempDir(), "b.bundle")
	git("bundle", "create", "-q", bundle, "HEAD", "main")
	b, err := os.ReadFile(bundle)
	if err != nil {
		t.Fatal(err)
	}
	return b, commit
}

// fakeInstall lays out the files of an install that native builds read:
// the package, its llama/ folder with the release info and the bundle, the
// platform package with a prebuilt addon, a .bin symlink and the marker.
func fakeInstall(t *testing.T, bundle []byte) *Installation {
	t.Helper()
	dir := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("node_modules/node-llama-cpp/package.json", `{"version":"3.22.1"}`)
	write("node_modules/node-llama-cpp/dist/index.js", "export {}\n")
	write("node_modules/node-llama-cpp/llama/llama.cpp.info.json", `{"tag": "b1234", "llamaCppGithubRepo": "ggml-org/llama.cpp"}`)
	if bundle != nil {
		write("node_modules/node-llama-cpp/llama/gitRelease.bundle", string(bundle))
	}
	write("node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/llama-addon.node", "prebuilt")
	write("node_modules/cmake-js/bin/cmake-js", "#!/usr/bin/env node\n")
	if err := os.MkdirAll(filepath.Join(dir, "node_modules", ".bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../cmake-js/bin/cmake-js", filepath.Join(dir, "node_modules", ".bin", "cmake-js")); err != nil {
		t.Fatal(err)
	}
	write(MarkerFile, `{"version":"3.22.1"}`)
	write(RunnerFile, "old runner")
	return &Installation{Dir: dir, Key: strings.Repeat("a", 64), Version: "3.22.1", Platform: "linux-x64"}
}

func TestBundleHead(t *testing.T) {
	b, commit := gitBundle(t)
	got, err := BundleHead(bytes.NewReader(b))
	if err != nil || got != commit {
		t.Fatalf("BundleHead of a real bundle: %q, %v; want %s", got, err, commit)
	}
	c40 := strings.Repeat("c", 40)
	for _, c := range []struct {
		name, in, want, err string
	}{
		{"v3 with capability and prerequisite", "# v3 git bundle\n@object-format=sha1\n-" + strings.Repeat("d", 40) + " parent\n" + c40 + " refs/tags/b1\n\nPACK", c40, ""},
		{"several refs, HEAD wins", "# v2 git bundle\n" + strings.Repeat("e", 40) + " refs/heads/x\n" + c40 + " HEAD\n\n", c40, ""},
		{"several refs, no HEAD", "# v2 git bundle\n" + strings.Repeat("e", 40) + " refs/heads/x\n" + c40 + " refs/heads/y\n\n", "", "no HEAD ref"},
		{"not a bundle", "PK\x03\x04zip", "", "not a git bundle"},
		{"truncated", "# v2 git bundle\n" + c40, "", "truncated header"},
		{"bad line", "# v2 git bundle\nnot a ref\n\n", "", `unexpected header line "not a ref"`},
	} {
		got, err := BundleHead(strings.NewReader(c.in))
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%s: got %q, %v; want error %q", c.name, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}

func TestReadBundle(t *testing.T) {
	b, commit := gitBundle(t)
	inst := fakeInstall(t, b)
	got, err := ReadBundle(inst.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Commit != commit || got.Tag != "b1234" || got.Repo != "ggml-org/llama.cpp" {
		t.Errorf("ReadBundle: %+v, want commit %s, tag b1234", got, commit)
	}

	// No bundle: a clear error, never a clone from GitHub.
	none := fakeInstall(t, nil)
	_, err = ReadBundle(none.Dir)
	if !errors.Is(err, ErrNoBundle) || !strings.Contains(err.Error(), "node_modules/node-llama-cpp/llama/gitRelease.bundle is missing") {
		t.Errorf("no bundle: %v", err)
	}
	_, err = BuildNative(context.Background(), NativeOptions{Cache: t.TempDir(), Install: none})
	var ie *InstallError
	if !errors.As(err, &ie) || !errors.Is(err, ErrNoBundle) || !strings.Contains(ie.Hint(), "gitRelease.bundle") {
		t.Errorf("BuildNative without a bundle: %v", err)
	}
	if want := "building node-llama-cpp@3.22.1 from source: no bundled llama.cpp source: node_modules/node-llama-cpp/llama/gitRelease.bundle is missing"; err.Error() != want {
		t.Errorf("error:\n got %s\nwant %s", err, want)
	}
}

func TestNativeInputs_Key(t *testing.T) {
	ctx := context.Background()
	cache := t.TempDir()
	inst := &Installation{Key: strings.Repeat("a", 64), Version: "3.22.1"}
	bun := &Bundle{Repo: "ggml-org/llama.cpp", Tag: "b1234", Commit: strings.Repeat("1", 40)}
	in, err := NativeInputs(ctx, cache, inst, bun)
	if err != nil {
		t.Fatal(err)
	}
	base := in.Key()
	if in.Engine != Package || in.Commit != bun.Commit || len(in.Compiler) != 3 || in.Platform == "" {
		t.Errorf("inputs: %+v", in)
	}
	var rec NativeRecipe
	if err := json.Unmarshal(in.Recipe, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Install != inst.Key || rec.Release != "ggml-org/llama.cpp@b1234" || rec.CPU == "" || rec.Configure[0] != "-DGGML_NATIVE=ON" {
		t.Errorf("recipe: %+v", rec)
	}
	if again, _ := NativeInputs(ctx, cache, inst, bun); again.Key() != base {
		t.Errorf("the key is not deterministic")
	}
	change := func(what string, i *Installation, b *Bundle) {
		in, err := NativeInputs(ctx, cache, i, b)
		if err != nil {
			t.Fatal(err)
		}
		if in.Key() == base {
			t.Errorf("the key ignores the %s", what)
		}
	}
	i2 := *inst
	i2.Key = strings.Repeat("b", 64)
	change("install", &i2, bun)
	i3 := *inst
	i3.Version = "3.22.2"
	change("version", &i3, bun)
	b2 := *bun
	b2.Commit = strings.Repeat("2", 40)
	change("bundle commit", inst, &b2)
	b3 := *bun
	b3.Tag = "b9999"
	change("release", inst, &b3)
	// The key is llama.cpp's kind of key: the same Inputs type, so cache
	// list and prune treat both alike.
	if reflect.TypeOf(in) != reflect.TypeOf(buildcache.Inputs{}) {
		t.Errorf("inputs are %T", in)
	}
}

// toolDir makes a directory of symlinks to the named tools found on the
// PATH, for a PATH that lacks the others.
func toolDir(t *testing.T, tools ...string) string {
	t.Helper()
	enginetest.NeedTool(t, tools...) // fails under CI=true instead of skipping
	dir := t.TempDir()
	for _, tool := range tools {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(dir, tool)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestCheckNativeTools(t *testing.T) {
	t.Setenv("CC", "")
	t.Setenv("CXX", "")
	t.Setenv("PATH", toolDir(t, "git", "npm", "c++", "cc"))
	err := CheckNativeTools()
	var ie *InstallError
	if !errors.As(err, &ie) || !errors.Is(err, ErrBuildTools) {
		t.Fatalf("without cmake: %v", err)
	}
	if want := "building node-llama-cpp from its bundled source needs cmake, which is not on the PATH"; err.Error() != want {
		t.Errorf("error:\n got %s\nwant %s", err, want)
	}
	if !strings.Contains(ie.Hint(), "apt-get install cmake") || !strings.Contains(ie.Hint(), `"prebuilt"`) {
		t.Errorf("hint: %s", ie.Hint())
	}

	t.Setenv("PATH", t.TempDir())
	if err := CheckNativeTools(); err == nil || err.Error() != "building node-llama-cpp from its bundled source needs cmake, git, npm, c++, cc, which are not on the PATH" {
		t.Errorf("nothing on the PATH: %v", err)
	}
	// CXX names the C++ compiler.
	t.Setenv("CXX", "no-such-compiler-xyz")
	if err := CheckNativeTools(); err == nil || !strings.Contains(err.Error(), "no-such-compiler-xyz") {
		t.Errorf("CXX: %v", err)
	}
}

// BuildNative checks the tools before it copies or builds anything, and
// leaves no entry behind.
func TestBuildNative_NoCmake(t *testing.T) {
	b, _ := gitBundle(t)
	inst := fakeInstall(t, b)
	t.Setenv("PATH", toolDir(t, "git", "npm", "c++", "cc"))
	cache := t.TempDir()
	_, err := BuildNative(context.Background(), NativeOptions{Cache: cache, Install: inst})
	if !errors.Is(err, ErrBuildTools) {
		t.Fatalf("BuildNative without cmake: %v", err)
	}
	items, _ := buildcache.Cache{Root: cache}.List(context.Background())
	if len(items) != 0 {
		t.Errorf("the cache has %d entries after a refused build", len(items))
	}
}

func TestCopyInstall(t *testing.T) {
	b, _ := gitBundle(t)
	inst := fakeInstall(t, b)
	dst := t.TempDir()
	if err := copyInstall(inst.Dir, dst, "linux-x64"); err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"node_modules/@node-llama-cpp/linux-x64", MarkerFile, RunnerFile} {
		if _, err := os.Lstat(filepath.Join(dst, gone)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was copied (%v)", gone, err)
		}
	}
	if l, err := os.Readlink(filepath.Join(dst, "node_modules", ".bin", "cmake-js")); err != nil || l != "../cmake-js/bin/cmake-js" {
		t.Errorf(".bin symlink: %q, %v", l, err)
	}
	got, err := os.ReadFile(filepath.Join(dst, "node_modules", "node-llama-cpp", "llama", "gitRelease.bundle"))
	if err != nil || !bytes.Equal(got, b) {
		t.Errorf("the bundle was not copied as it is: %v", err)
	}
	if _, err := ReadBundle(dst); err != nil {
		t.Errorf("the copy's bundle: %v", err)
	}
}

// trimNative keeps what node-llama-cpp's getLlama() loads (the Release
// directory and buildDone.status) and llama.cpp's build-info.cpp, and
// removes the source clone and cmake's build tree.
func TestTrimNative(t *testing.T) {
	dir := t.TempDir()
	lb := filepath.Join(llamaDir(dir), "localBuilds", "linux-x64")
	files := map[string]string{
		"node_modules/node-llama-cpp/llama/llama.cpp/CMakeLists.txt":                              "src",
		"node_modules/node-llama-cpp/llama/gitRelease.bundle":                                     "bundle",
		"node_modules/node-llama-cpp/llama/localBuilds/linux-x64/buildDone.status":                "",
		"node_modules/node-llama-cpp/llama/localBuilds/linux-x64/Release/llama-addon.node":        "addon",
		"node_modules/node-llama-cpp/llama/localBuilds/linux-x64/Release/libggml-base.so":         "lib",
		"node_modules/node-llama-cpp/llama/localBuilds/linux-x64/Release/_nlcBuildMetadata.json":  "{}",
		"node_modules/node-llama-cpp/llama/localBuilds/linux-x64/CMakeCache.txt":                  "cache",
		"node_modules/node-llama-cpp/llama/localBuilds/linux-x64/llama.cpp/ggml/src/ggml.c.o":     "obj",
		"node_modules/node-llama-cpp/llama/localBuilds/linux-x64/llama.cpp/common/build-info.cpp": `char const *LLAMA_COMMIT = "de3ff81";`,
	}
	for rel, c := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if c, f := buildCommitOf(dir); c != "de3ff81" || f != "node_modules/node-llama-cpp/llama/localBuilds/linux-x64/llama.cpp/common/build-info.cpp" {
		t.Errorf("before trimming: commit %q in %q", c, f)
	}
	if err := trimNative(dir); err != nil {
		t.Fatal(err)
	}
	var left []string
	filepath.WalkDir(filepath.Join(dir, "node_modules"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(lb, p)
			left = append(left, filepath.ToSlash(rel))
		}
		return nil
	})
	want := []string{"Release/_nlcBuildMetadata.json", "Release/libggml-base.so", "Release/llama-addon.node", "build-info.cpp", "buildDone.status"}
	if !reflect.DeepEqual(left, want) {
		t.Errorf("left after trimming:\n got %v\nwant %v", left, want)
	}
	if c, _ := buildCommitOf(dir); c != "de3ff81" {
		t.Errorf("after trimming, the build commit is %q", c)
	}
	if got := nativeFiles(dir); !reflect.DeepEqual(got, []string{
		"node_modules/node-llama-cpp/llama/localBuilds/linux-x64/Release/libggml-base.so",
		"node_modules/node-llama-cpp/llama/localBuilds/linux-x64/Release/llama-addon.node",
	}) {
		t.Errorf("nativeFiles: %v", got)
	}
}

func TestNativeProgress(t *testing.T) {
	var out bytes.Buffer
	var pcts []int
	p := &nativeProgress{w: &out, commit: "abc", fn: func(pct int, line string) { pcts = append(pcts, pct) }}
	for _, chunk := range []string{"[node-llama-cpp] Cloning\n-- The C compiler", " identification is GNU\n-- Done\n[  5%] Building C\n[ 40", "%] Building\n[  3%] again\n[100%] Linking\npartial"} {
		p.Write([]byte(chunk))
	}
	p.flush()
	if want := []int{5, 40, 40, 99}; !reflect.DeepEqual(pcts, want) {
		t.Errorf("percentages %v, want %v (never decreasing, below 100)", pcts, want)
	}
	want := "[node-llama-cpp] Cloning\nrigor: checked out abc (node-llama-cpp's git bundle)\n-- The C compiler identification is GNU\n-- Done\n"
	if !strings.HasPrefix(out.String(), want) || strings.Count(out.String(), "rigor: checked out") != 1 || !strings.HasSuffix(out.String(), "partial\n") {
		t.Errorf("output:\n%s", out.String())
	}
}

func TestNativeEnv(t *testing.T) {
	env := nativeEnv([]string{"HOME=/h", "PATH=/usr/bin", "NODE_LLAMA_CPP_GPU=cuda", "NODE_LLAMA_CPP_CMAKE_OPTION_X=1"}, "/opt/node/bin/node")
	want := []string{"HOME=/h", "PATH=/opt/node/bin" + string(os.PathListSeparator) + "/usr/bin", "NODE_LLAMA_CPP_SKIP_DOWNLOAD=false"}
	if !reflect.DeepEqual(env, want) {
		t.Errorf("nativeEnv:\n got %v\nwant %v", env, want)
	}
}

// fakeNativeNode is a stand-in for node that answers --version and, run on
// the native build script, lays out what node-llama-cpp's compile leaves
// (FAKE_BUILD_COMMIT in build-info.cpp, FAKE_BUILD_TYPE as what it loaded).
const fakeNativeNode = `#!/bin/sh
case "$1" in
  --version) echo v20.20.2; exit 0;;
  *rigor-native-build.mjs)
    echo call >> "$FAKE_BUILD_CALLS"
    d=node_modules/node-llama-cpp/llama
    [ -f "$d/gitRelease.bundle" ] || { echo "no bundle" >&2; exit 1; }
    [ -d node_modules/@node-llama-cpp/linux-x64 ] && { echo "the prebuilt package was copied" >&2; exit 1; }
    mkdir -p $d/llama.cpp $d/localBuilds/linux-x64/Release $d/localBuilds/linux-x64/llama.cpp/common
    echo "[node-llama-cpp] Cloning ggml-org/llama.cpp (local bundle)"
    echo "-- The C compiler identification is GNU"
    echo "[ 50%] Building C object ggml.c.o"
    echo "char const *LLAMA_COMMIT = \"$FAKE_BUILD_COMMIT\";" > $d/localBuilds/linux-x64/llama.cpp/common/build-info.cpp
    echo addon > $d/localBuilds/linux-x64/Release/llama-addon.node
    echo lib > $d/localBuilds/linux-x64/Release/libggml-cpu.so
    echo obj > $d/localBuilds/linux-x64/CMakeCache.txt
    : > $d/localBuilds/linux-x64/buildDone.status
    echo "rigor-native-build {\"buildType\":\"$FAKE_BUILD_TYPE\",\"release\":\"b1234\",\"systemInfo\":\"CPU : AVX2 = 1\"}"
    exit 0;;
esac
exit 1
`

// nativeRequest sets up a stand-in npm and node for a localBuild
// experiment (the real compile is the nodellama_native testscript) and
// returns its request; cmake, git and the compilers must be real.
func nativeRequest(t *testing.T, x map[string]*spec.Point, id string) (engine.Request, *fakeTools, string) {
	t.Helper()
	enginetest.NeedTool(t, "cmake", "git", "c++", "cc")
	bundle, commit := gitBundle(t)
	f := newFakeTools(t, "v20.20.2")
	if err := os.WriteFile(f.node, []byte(fakeNativeNode), 0o755); err != nil {
		t.Fatal(err)
	}
	bpath := filepath.Join(f.dir, "bundle")
	if err := os.WriteFile(bpath, bundle, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FAKE_BUNDLE", bpath)
	t.Setenv("FAKE_BUILD_COMMIT", commit[:7])
	t.Setenv("FAKE_BUILD_TYPE", "localBuild")
	t.Setenv("FAKE_BUILD_CALLS", filepath.Join(f.dir, "builds"))
	t.Setenv("PATH", f.dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	entry := &lock.Entry{Engine: lock.EngineLock{Family: "node-llama-cpp", Version: "3.22.1",
		NPM: &lock.NPMLock{Package: Package, Version: "3.22.1",
			Platform: &lock.NPMLock{Package: PlatformPackage("linux-x64"), Version: "3.22.1"}}}}
	return engine.Request{Experiment: x[id].Experiment, Lock: entry, Cache: t.TempDir()}, f, commit
}

const nativeExperiments = `
_base: schema.#Experiment & {
	model: path: "/models/tiny.gguf"
	engine: {family: "node-llama-cpp", source: npm: "3.22.1", build: flavour: *"localBuild" | _}
	bench: {p: 32, n: 16, r: 2}
}
native:   _base
prebuilt: _base & {engine: build: flavour: "prebuilt"}
`

// TestConformance_LocalBuild runs the engine suite's Prepare checks on the
// localBuild flavour: cached the second time, offline, Locate and
// BuildKey agree.
func TestConformance_LocalBuild(t *testing.T) {
	pts := enginetest.LoadPoints(t, nativeExperiments)
	rec := func(name string) engine.Finished {
		return enginetest.ReadFinished(t, filepath.Join("testdata", "runner", name))
	}
	enginetest.Run(t, enginetest.Case{
		Engine:           Engine{},
		Capabilities:     []engine.Capability{engine.CapLocator, engine.CapBuilder, engine.CapServer, engine.CapQualifier},
		Point:            pts["c/native"],
		Success:          rec("ok_pp32_tg16_r2"),
		ReportsBuild:     true,
		CrashAfterOutput: rec("crash_killed"),
		RejectedArgs:     rec("err_unknown_arg"),
		FailedLoad:       rec("err_missing_model"),
		Prepare: func(t *testing.T) engine.Request {
			req, _, _ := nativeRequest(t, pts, "c/native")
			return req
		},
	})
}

func TestPrepare_LocalBuild(t *testing.T) {
	pts := enginetest.LoadPoints(t, nativeExperiments)
	req, f, commit := nativeRequest(t, pts, "c/native")
	ctx := context.Background()
	p, err := Engine{}.Prepare(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	c := buildcache.Cache{Root: req.Cache}
	if p.BinDir != c.EntryDir(p.Engine.BuildID) || p.Engine.Commit != commit || p.BuildCommit != commit[:7] || p.Cached {
		t.Errorf("prepared: bin %s, build %s, commit %s, build commit %s, cached %v", p.BinDir, p.Engine.BuildID, p.Engine.Commit, p.BuildCommit, p.Cached)
	}
	// The entry is laid out as an install: the runner, node_modules with
	// the local build, no prebuilt package, no build tree.
	for _, rel := range []string{RunnerFile, ServeFile, "node_modules/node-llama-cpp/llama/localBuilds/linux-x64/Release/llama-addon.node", "node_modules/node-llama-cpp/llama/localBuilds/linux-x64/buildDone.status"} {
		if _, err := os.Stat(filepath.Join(p.BinDir, filepath.FromSlash(rel))); err != nil {
			t.Errorf("entry: %v", err)
		}
	}
	for _, rel := range []string{"node_modules/@node-llama-cpp/linux-x64", "node_modules/node-llama-cpp/llama/llama.cpp", "node_modules/node-llama-cpp/llama/localBuilds/linux-x64/CMakeCache.txt"} {
		if _, err := os.Stat(filepath.Join(p.BinDir, filepath.FromSlash(rel))); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("entry holds %s (%v)", rel, err)
		}
	}
	for _, name := range []string{RunnerFile, "node_modules/node-llama-cpp/llama/localBuilds/linux-x64/Release/llama-addon.node", "node_modules/node-llama-cpp/llama/localBuilds/linux-x64/Release/libggml-cpu.so", "node"} {
		if len(p.Binaries[name]) != 64 {
			t.Errorf("binaries: no sha256 of %s in %v", name, keys(p.Binaries))
		}
	}
	// The key is what BuildKey says; the prebuilt flavour has none.
	if k, err := (Engine{}).BuildKey(ctx, req); err != nil || k != p.Engine.BuildID {
		t.Errorf("BuildKey: %q, %v; want %s", k, err, p.Engine.BuildID)
	}
	preq := req
	preq.Experiment = pts["c/prebuilt"].Experiment
	if k, err := (Engine{}).BuildKey(ctx, preq); err != nil || k != "" {
		t.Errorf("BuildKey of the prebuilt flavour: %q, %v; want none", k, err)
	}
	// The prebuilt flavour of the same lock runs the install, not the build.
	pp, err := Engine{}.Prepare(ctx, preq)
	if err != nil || pp.BinDir == p.BinDir || pp.Engine.BuildID == p.Engine.BuildID {
		t.Errorf("prebuilt: %+v, %v", pp, err)
	}

	// A replaced library is refused, never run.
	lib := filepath.Join(p.BinDir, "node_modules/node-llama-cpp/llama/localBuilds/linux-x64/Release/libggml-cpu.so")
	if err := os.WriteFile(lib, []byte("evil"), 0o644); err != nil {
		t.Fatal(err)
	}
	var bc *buildcache.BinaryChangedError
	if _, err := (Engine{}).Prepare(ctx, req); !errors.As(err, &bc) {
		t.Errorf("Prepare with a replaced library: %v", err)
	}
	// --rebuild builds it again.
	builds := func() int {
		b, _ := os.ReadFile(filepath.Join(f.dir, "builds"))
		return strings.Count(string(b), "call")
	}
	before := builds()
	rq := req
	rq.Rebuild = true
	if _, err := (Engine{}).Prepare(ctx, rq); err != nil || builds() != before+1 {
		t.Errorf("rebuild: %v, %d builds (was %d)", err, builds(), before)
	}
	if _, err := (Engine{}).Prepare(ctx, req); err != nil {
		t.Errorf("after the rebuild: %v", err)
	}
}

func TestPrepare_LocalBuildFails(t *testing.T) {
	pts := enginetest.LoadPoints(t, nativeExperiments)
	for _, c := range []struct {
		name, env, val, want string
	}{
		{"wrong commit", "FAKE_BUILD_COMMIT", "0badc0d", "build reports commit 0badc0d (node_modules/node-llama-cpp/llama/localBuilds/linux-x64/llama.cpp/common/build-info.cpp), but node-llama-cpp's bundle is at "},
		{"prebuilt loaded", "FAKE_BUILD_TYPE", "prebuilt", `node-llama-cpp loaded a "prebuilt" binary after building, not the local build`},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _, _ := nativeRequest(t, pts, "c/native")
			t.Setenv(c.env, c.val)
			_, err := Engine{}.Prepare(context.Background(), req)
			var fe *buildcache.FailedError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want a failed build: %s", err, c.want)
			}
			if k, _ := (Engine{}).BuildKey(context.Background(), req); k == "" {
				t.Fatal("no key")
			} else if _, err := (buildcache.Cache{Root: req.Cache}).Lookup(k); !errors.Is(err, buildcache.ErrNotFound) {
				t.Errorf("a failed build left an entry: %v", err)
			}
		})
	}
}

// Without cmake, a localBuild experiment fails before npm runs, with the
// tools named; offline without an install it says so.
func TestPrepare_LocalBuildRefused(t *testing.T) {
	pts := enginetest.LoadPoints(t, nativeExperiments)
	req, f, _ := nativeRequest(t, pts, "c/native")
	path := os.Getenv("PATH")
	t.Setenv("PATH", f.dir+string(os.PathListSeparator)+toolDir(t, "git", "c++", "cc"))
	_, err := Engine{}.Prepare(context.Background(), req)
	if !errors.Is(err, ErrBuildTools) || !strings.Contains(err.Error(), "needs cmake,") && !strings.Contains(err.Error(), "needs cmake ") {
		t.Errorf("without cmake: %v", err)
	}
	if n := f.npmCalls(t); n != 0 {
		t.Errorf("npm ran %d times before the refusal", n)
	}
	t.Setenv("PATH", path)
	off := req
	off.Offline = true
	if _, err := (Engine{}).Prepare(context.Background(), off); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("offline without an install: %v", err)
	}
}

// The runner runs when its directory is reached through a symlink (a cache
// on a linked disk; the shared build cache of the native testscript): it
// used to compare argv[1] with its own resolved path and silently exit 0.
func TestRunner_ThroughSymlink(t *testing.T) {
	enginetest.NeedTool(t, "node")
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, RunnerFile), Runner(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("node", filepath.Join(dir, "link", RunnerFile), "--model", filepath.Join(dir, "none.gguf")).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 || len(out) == 0 {
		t.Fatalf("the runner through a symlink: %v, output %q; want it to run and fail", err, out)
	}
}

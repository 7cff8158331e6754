package llamacpp

// Engine builds: a locked commit of llama.cpp or ik_llama.cpp, with its
// patches, configured and built by cmake into rigor's content-addressed
// build cache (internal/buildcache).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rigorbench/rigor/internal/buildcache"
	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/gitsrc"
	"github.com/rigorbench/rigor/internal/spec"
)

// DefaultTargets are the cmake targets a build makes when the recipe names
// none.
var DefaultTargets = []string{"llama-bench", "rpc-server", "llama-server", PerplexityProgram}

// buildRecipeVersion changes when the way rigor configures and builds
// changes, so that older cache entries are not reused.
const buildRecipeVersion = 2 // 2: built in a stable directory, source paths mapped, programs hashed

// PatchInput is a locked patch: its file and the sha256 the lock holds.
type PatchInput struct {
	Path   string
	SHA256 string
}

// BuildOptions configure [Build].
type BuildOptions struct {
	// Cache is rigor's cache directory (git mirrors and builds); it must
	// be set (internal/cli reads RIGOR_CACHE).
	Cache string
	// URL is the engine's git source.
	URL string
	// Commit is the locked full 40-hex commit.
	Commit string
	// Patches are applied strictly, in order, after checkout. Each file's
	// sha256 must still be the locked one.
	Patches []PatchInput
	// Recipe is the experiment's engine.build.
	Recipe spec.Build
	// Fork is spec.FamilyLlamaCpp or spec.FamilyIkLlamaCpp.
	Fork string
	// RPC builds the RPC backend (-DGGML_RPC=ON), which rpc-server workers
	// and llama-bench -rpc need. It is implied when the targets include
	// rpc-server (the default), a target only the RPC backend defines.
	RPC bool
	// Jobs is cmake --build's -j; 0 means the number of CPUs.
	Jobs int
	// Offline uses the cache's git mirror without fetching.
	Offline bool
	// Progress, when set, is called with the build's percentage (0–100,
	// never decreasing) and the output line that moved it.
	Progress func(pct int, line string)
	// Log, when set, receives the build's output as it runs (it is also
	// kept in the entry's build.log).
	Log io.Writer
}

// BuildInfo is an engine build ready to run: a cache entry or a prebuilt
// directory.
type BuildInfo struct {
	// ID is the cache key (hex sha256 of the inputs); "" for a prebuilt
	// engine.
	ID string `json:"id,omitempty"`
	// Dir is the cache entry (or the prebuilt directory).
	Dir string `json:"dir"`
	// BinDir holds the programs.
	BinDir string `json:"binDir"`
	// Bins maps a program name to its absolute path.
	Bins map[string]string `json:"bins"`
	// Cached says the build came from the cache without building.
	Cached bool `json:"cached"`
	// BuildCommit is the short commit the binaries report (from the
	// generated common/build-info.cpp).
	BuildCommit string `json:"buildCommit,omitempty"`
	// Inputs are what the build's key hashes.
	Inputs *buildcache.Inputs `json:"inputs,omitempty"`
	// SHA256 maps each program to the sha256 its build recorded; none for
	// a prebuilt engine or a build made before rigor hashed programs.
	SHA256 map[string]string `json:"sha256,omitempty"`
}

// CommitMismatchError and PatchChangedError are the engine package's, so
// that callers match them without naming this family.
type (
	CommitMismatchError = engine.CommitMismatchError
	PatchChangedError   = engine.PatchChangedError
)

// backendFlags maps a recipe backend to its cmake options and the
// environment its compilers need.
var backendFlags = map[string]struct {
	cmake []string
	env   map[string]string
}{
	"cpu":    {},
	"cuda":   {cmake: []string{"-DGGML_CUDA=ON"}},
	"sycl":   {cmake: []string{"-DGGML_SYCL=ON"}, env: map[string]string{"CC": "icx", "CXX": "icpx"}},
	"vulkan": {cmake: []string{"-DGGML_VULKAN=ON"}},
	"hip":    {cmake: []string{"-DGGML_HIP=ON"}},
	"metal":  {cmake: []string{"-DGGML_METAL=ON"}},
}

// Recipe is the exact configure and build a recipe turns into: the
// arguments after `cmake -S <src> -B <build>`, the targets, and the
// environment added to rigor's own.
type Recipe struct {
	Version   int               `json:"version"`
	Configure []string          `json:"configure"`
	Targets   []string          `json:"targets"`
	Env       map[string]string `json:"env,omitempty"`
}

// RecipeOf returns the configure line and environment of recipe r:
// -DCMAKE_BUILD_TYPE=Release, build-tree rpaths relative to the binaries
// (so that a cache entry can be moved into place), the backend's options
// (cpu: none, cuda: -DGGML_CUDA=ON, sycl: -DGGML_SYCL=ON with CC=icx
// CXX=icpx, vulkan, hip, metal), -DGGML_RPC=ON when rpc or when the
// targets include rpc-server, then the
// experiment's own cmake options, which win. The experiment's build env
// wins over the backend's.
func RecipeOf(r spec.Build, rpc bool) (Recipe, error) {
	be, ok := backendFlags[r.BackendOrCPU()]
	if !ok {
		names := make([]string, 0, len(backendFlags))
		for n := range backendFlags {
			names = append(names, n)
		}
		sort.Strings(names)
		return Recipe{}, fmt.Errorf("engine.build.backend %q: not one of %s", r.Backend, strings.Join(names, ", "))
	}
	rec := Recipe{Version: buildRecipeVersion}
	rec.Configure = append(rec.Configure, "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_BUILD_RPATH_USE_ORIGIN=ON")
	rec.Configure = append(rec.Configure, be.cmake...)
	rec.Targets = r.Targets
	if len(rec.Targets) == 0 {
		rec.Targets = DefaultTargets
	}
	if rpc || slices.Contains(rec.Targets, "rpc-server") {
		rec.Configure = append(rec.Configure, "-DGGML_RPC=ON")
	}
	for _, o := range r.CMake {
		if !strings.HasPrefix(o, "-") {
			o = "-D" + o
		}
		rec.Configure = append(rec.Configure, o)
	}
	if len(be.env)+len(r.Env) > 0 {
		rec.Env = map[string]string{}
		for k, v := range be.env {
			rec.Env[k] = v
		}
		for k, v := range r.Env {
			rec.Env[k] = v
		}
	}
	return rec, nil
}

// BuildInputs returns what the build of opts is keyed by: commit, patch
// hashes, recipe, compiler identity (first line of `cc --version`,
// `c++ --version` and `cmake --version`, with CC and CXX taken from the
// recipe's environment, then rigor's) and GOOS/GOARCH. It runs the three
// tools but nothing else.
func BuildInputs(ctx context.Context, opts BuildOptions) (buildcache.Inputs, Recipe, error) {
	if opts.Cache == "" {
		return buildcache.Inputs{}, Recipe{}, fmt.Errorf("building %s: no cache directory (BuildOptions.Cache is empty)", opts.Fork)
	}
	rec, err := RecipeOf(opts.Recipe, opts.RPC)
	if err != nil {
		return buildcache.Inputs{}, rec, err
	}
	if len(opts.Commit) != 40 || !isHexString(opts.Commit) {
		return buildcache.Inputs{}, rec, fmt.Errorf("building %s: commit %q is not a full 40-hex sha", opts.Fork, opts.Commit)
	}
	recJSON, err := json.Marshal(rec)
	if err != nil {
		return buildcache.Inputs{}, rec, err
	}
	in := buildcache.Inputs{
		Engine:   opts.Fork,
		Commit:   strings.ToLower(opts.Commit),
		Patches:  []string{},
		Recipe:   recJSON,
		Compiler: buildcache.Toolchain(ctx, cacheOf(opts).Root, rec.Env),
		Platform: runtime.GOOS + "/" + runtime.GOARCH,
	}
	for _, p := range opts.Patches {
		in.Patches = append(in.Patches, strings.ToLower(p.SHA256))
	}
	return in, rec, nil
}

func isHexString(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return s != ""
}

func cacheOf(opts BuildOptions) buildcache.Cache { return buildcache.Cache{Root: opts.Cache} }

// LookupBuild returns the cached build of opts without building: a stat
// and a read once the key is computed. A build not in the cache is an
// error wrapping [buildcache.ErrNotFound].
func LookupBuild(ctx context.Context, opts BuildOptions) (*BuildInfo, error) {
	in, _, err := BuildInputs(ctx, opts)
	if err != nil {
		return nil, err
	}
	e, err := cacheOf(opts).Lookup(in.Key())
	if err != nil {
		return nil, err
	}
	return infoOf(e, true), nil
}

func infoOf(e *buildcache.Entry, cached bool) *BuildInfo {
	b := &BuildInfo{ID: e.Key, Dir: e.Dir, BinDir: e.BinDir(), Bins: map[string]string{}, Cached: cached, Inputs: &e.Inputs, SHA256: e.SHA256}
	for name := range e.Bins {
		b.Bins[name] = e.Bin(name)
	}
	b.BuildCommit = readBuildCommit(e.Dir)
	return b
}

// Build returns the engine build of opts from the cache, or builds it:
// check the patches' hashes, make the git mirror current
// (gitsrc.EnsureMirror; with the network unavailable, an existing mirror is
// used), check the commit out with the patches applied strictly in order
// (gitsrc.Checkout), `cmake -S src -B build <RecipeOf>`, then
// `cmake --build build --target <targets> -j N`, and verify that the
// generated common/build-info.cpp names the locked commit
// ([*CommitMismatchError] otherwise).
//
// A failure is a [*buildcache.FailedError] holding the tail of the build
// log; a cancelled ctx kills the build's whole process group. Neither
// leaves an entry that looks complete.
func Build(ctx context.Context, opts BuildOptions) (*BuildInfo, error) {
	for _, p := range opts.Patches {
		have, _, err := gitsrc.HashFile(p.Path)
		if err != nil {
			return nil, err
		}
		if !strings.EqualFold(have, p.SHA256) {
			return nil, &PatchChangedError{Path: p.Path, Locked: p.SHA256, Have: have}
		}
	}
	in, rec, err := BuildInputs(ctx, opts)
	if err != nil {
		return nil, err
	}
	c := cacheOf(opts)
	e, built, err := c.Build(ctx, in, func(ctx context.Context, dir string, log *os.File) (map[string]string, error) {
		return runBuild(ctx, opts, rec, dir, log)
	})
	if err != nil {
		return nil, err
	}
	return infoOf(e, !built), nil
}

// runBuild makes the build in dir: src/ is the checkout, build/ cmake's
// build tree.
func runBuild(ctx context.Context, opts BuildOptions, rec Recipe, dir string, log *os.File) (map[string]string, error) {
	var out io.Writer = log
	if opts.Log != nil {
		out = io.MultiWriter(log, opts.Log)
	}
	pw := &progressWriter{w: out, targets: len(rec.Targets), fn: opts.Progress}
	fmt.Fprintf(pw, "rigor: building %s %s (%d patches)\n", opts.Fork, opts.Commit, len(opts.Patches))
	gopts := gitsrc.Options{Cache: opts.Cache, Offline: opts.Offline}
	mirror, err := gitsrc.EnsureMirror(ctx, opts.URL, gopts)
	if err != nil && !opts.Offline && ctx.Err() == nil {
		gopts.Offline = true
		if m, oerr := gitsrc.EnsureMirror(ctx, opts.URL, gopts); oerr == nil {
			fmt.Fprintf(pw, "rigor: cannot update the mirror (%v); using the cached one\n", err)
			mirror, err = m, nil
		}
	}
	commit := strings.ToLower(opts.Commit)
	// The remote gone (and no mirror here), or force-pushed away from the
	// locked commit: the archive's source of the commit, when it has one.
	if ctx.Err() == nil {
		has := false
		if err == nil {
			if has, err = gitsrc.HasCommit(ctx, mirror, commit); err != nil {
				return nil, err
			}
		}
		if sa := gitsrc.SourceArchiveOf(ctx); !has && sa != nil {
			why := "the mirror lacks it: the remote no longer has it"
			if err != nil {
				why = err.Error()
			}
			ok, aerr := sa.RestoreSource(ctx, opts.Cache, opts.URL, commit)
			if aerr != nil {
				return nil, aerr
			}
			if ok {
				fmt.Fprintf(pw, "rigor: the source at %s came from the archive (%s)\n", commit, why)
				mirror, err = gitsrc.MirrorFor(opts.Cache, opts.URL), nil
			}
		}
	}
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, p := range opts.Patches {
		paths = append(paths, p.Path)
	}
	src := filepath.Join(dir, "src")
	if err := gitsrc.Checkout(ctx, mirror, commit, src, paths); err != nil {
		return nil, err
	}
	fmt.Fprintf(pw, "rigor: checked out %s with %d patches\n", opts.Commit, len(paths))
	env := os.Environ()
	for _, k := range sortedKeys(rec.Env) {
		env = append(env, k+"="+rec.Env[k])
	}
	// The build directory's path is mapped away, so that two builds of one
	// key, in any cache, make the same bytes (__FILE__, debug info).
	env = prefixMapped(env, dir)
	bdir := filepath.Join(dir, "build")
	configure := append([]string{"-S", src, "-B", bdir}, rec.Configure...)
	if err := runLogged(ctx, pw, env, "cmake", configure...); err != nil {
		return nil, fmt.Errorf("cmake configure: %w", err)
	}
	jobs := opts.Jobs
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}
	buildArgs := append([]string{"--build", bdir, "--target"}, rec.Targets...)
	buildArgs = append(buildArgs, "-j", strconv.Itoa(jobs))
	if err := runLogged(ctx, pw, env, "cmake", buildArgs...); err != nil {
		return nil, fmt.Errorf("cmake build: %w", err)
	}
	bins := map[string]string{}
	for _, t := range rec.Targets {
		rel, ok := findProgram(dir, t)
		if !ok {
			return nil, fmt.Errorf("cmake build: target %s made no program under build/", t)
		}
		bins[t] = rel
	}
	// The shared libraries the programs load are hashed with them.
	for name, rel := range findLibraries(dir) {
		bins[name] = rel
	}
	got, file := buildCommitIn(dir)
	if got == "" {
		return nil, fmt.Errorf("verifying the build commit: no LLAMA_COMMIT in common/build-info.cpp under build/ or src/")
	}
	if !commitMatches(opts.Commit, got) {
		return nil, &CommitMismatchError{Locked: opts.Commit, Reported: got, File: file}
	}
	fmt.Fprintf(pw, "rigor: build commit %s matches %s\n", got, opts.Commit)
	if opts.Progress != nil {
		opts.Progress(100, "done")
	}
	return bins, nil
}

// prefixMapped adds -ffile-prefix-map=<dir>=/rigor-build to CFLAGS and
// CXXFLAGS (after what the environment or the recipe already set), which
// cmake reads on its first configure.
func prefixMapped(env []string, dir string) []string {
	flag := "-ffile-prefix-map=" + dir + "=/rigor-build"
	for _, k := range []string{"CFLAGS", "CXXFLAGS"} {
		v := ""
		for i := len(env) - 1; i >= 0; i-- {
			if strings.HasPrefix(env[i], k+"=") {
				v = strings.TrimPrefix(env[i], k+"=")
				break
			}
		}
		env = append(env, k+"="+strings.TrimSpace(v+" "+flag))
	}
	return env
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// commitMatches reports whether the short commit a build reports is a
// prefix of the locked commit (at least 4 hex digits).
func commitMatches(locked, reported string) bool {
	reported = strings.ToLower(strings.TrimSpace(reported))
	return len(reported) >= 4 && isHexString(reported) && strings.HasPrefix(strings.ToLower(locked), reported)
}

// findProgram finds the program name under dir/build: build/bin/name (as
// llama.cpp lays it out), else the first executable file of that name.
func findProgram(dir, name string) (string, bool) {
	rel := filepath.Join("build", "bin", name)
	if fi, err := os.Stat(filepath.Join(dir, rel)); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return rel, true
	}
	var found string
	filepath.WalkDir(filepath.Join(dir, "build"), func(p string, d os.DirEntry, err error) error {
		if err != nil || found != "" {
			return filepath.SkipDir
		}
		if d.Name() == name && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil && fi.Mode()&0o111 != 0 {
				found, _ = filepath.Rel(dir, p)
				return filepath.SkipAll
			}
		}
		return nil
	})
	return found, found != ""
}

// findLibraries finds the shared libraries of the build under dir: the
// files in build/bin whose names hold ".so" or end in ".dylib" (llama.cpp
// puts libllama and ggml's libraries beside the programs) and every file in
// build/lib, by their path under build/ ("bin/libllama.so"), mapped to
// their path relative to dir. Symlinks (libggml-base.so ->
// libggml-base.so.0) count: a changed target changes their hash.
func findLibraries(dir string) map[string]string {
	out := map[string]string{}
	for _, sub := range []string{"bin", "lib"} {
		ents, err := os.ReadDir(filepath.Join(dir, "build", sub))
		if err != nil {
			continue
		}
		for _, e := range ents {
			n := e.Name()
			if e.IsDir() || sub == "bin" && !strings.Contains(n, ".so") && !strings.HasSuffix(n, ".dylib") {
				continue
			}
			out[sub+"/"+n] = filepath.Join("build", sub, n)
		}
	}
	return out
}

var buildCommitRE = regexp.MustCompile(`LLAMA_(?:BUILD_)?COMMIT\s*=\s*"([^"]*)"`)

// ParseBuildInfo returns the commit that a generated build-info.cpp
// declares (LLAMA_COMMIT, or LLAMA_BUILD_COMMIT in older trees), or "".
func ParseBuildInfo(src []byte) string {
	m := buildCommitRE.FindSubmatch(src)
	if m == nil {
		return ""
	}
	return string(m[1])
}

// buildCommitIn reads the commit from the build-info.cpp that cmake
// generated: build/common/ (current trees), else src/common/ (older ones
// generated it in the source tree).
func buildCommitIn(dir string) (commit, file string) {
	for _, rel := range []string{"build/common/build-info.cpp", "src/common/build-info.cpp"} {
		b, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			continue
		}
		if c := ParseBuildInfo(b); c != "" {
			return c, rel
		}
	}
	return "", ""
}

func readBuildCommit(dir string) string {
	c, _ := buildCommitIn(dir)
	return c
}

// runLogged runs name with args, its output into w, in its own process
// group, all of which is killed when ctx ends.
func runLogged(ctx context.Context, w io.Writer, env []string, name string, args ...string) error {
	fmt.Fprintf(w, "+ %s %s\n", name, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted: %w", ctx.Err())
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("%s exited with status %d", name, ee.ExitCode())
		}
		return err
	}
	return nil
}

var (
	makePctRE = regexp.MustCompile(`^\[\s*(\d{1,3})%\]`)
	ninjaRE   = regexp.MustCompile(`^\[(\d+)/(\d+)\]`)
)

// BuildPercent returns the percentage a cmake output line reports: make's
// "[ 42%] Building …" or ninja's "[12/40] …"; ok is false for other lines.
func BuildPercent(line string) (pct int, ok bool) {
	if m := makePctRE.FindStringSubmatch(line); m != nil {
		n, _ := strconv.Atoi(m[1])
		return min(n, 100), true
	}
	if m := ninjaRE.FindStringSubmatch(line); m != nil {
		a, _ := strconv.Atoi(m[1])
		b, _ := strconv.Atoi(m[2])
		if b > 0 && a <= b {
			return a * 100 / b, true
		}
	}
	return 0, false
}

// progressWriter passes output to w and reports progress per line: cmake's
// own counter as it is. One `cmake --build --target a b c` counts all its
// targets on one scale (dividing by the number of targets printed 48% at
// cmake's [ 96%]); the reported figure never decreases and stays below 100
// until the build is done.
type progressWriter struct {
	w  io.Writer
	fn func(int, string)
	// targets is the number of targets built, kept for the log.
	targets int

	mu      sync.Mutex
	partial []byte
	shown   int
}

func (p *progressWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, err := p.w.Write(b)
	if p.fn == nil {
		return n, err
	}
	p.partial = append(p.partial, b...)
	for {
		i := bytes.IndexByte(p.partial, '\n')
		if i < 0 {
			break
		}
		line := string(bytes.TrimRight(p.partial[:i], "\r"))
		p.partial = p.partial[i+1:]
		p.line(line)
	}
	return n, err
}

func (p *progressWriter) line(line string) {
	pct, ok := BuildPercent(line)
	if !ok {
		return
	}
	p.shown = max(min(pct, 99), p.shown)
	p.fn(p.shown, line)
}

// Prebuilt describes a prebuilt engine (source: path): it finds llama-bench
// (required) and rpc-server in dir, dir/bin or dir/build/bin. The lock pins
// the binaries' hashes; Prebuilt only locates them.
func Prebuilt(dir string) (*BuildInfo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("prebuilt engine %s: %w", dir, err)
	}
	for _, sub := range []string{".", "bin", filepath.Join("build", "bin")} {
		d := filepath.Join(abs, sub)
		bench := filepath.Join(d, "llama-bench")
		if fi, err := os.Stat(bench); err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
			continue
		}
		b := &BuildInfo{Dir: abs, BinDir: d, Bins: map[string]string{"llama-bench": bench}}
		for _, n := range []string{"rpc-server", "llama-server", PerplexityProgram} {
			if fi, err := os.Stat(filepath.Join(d, n)); err == nil && fi.Mode().IsRegular() {
				b.Bins[n] = filepath.Join(d, n)
			}
		}
		return b, nil
	}
	return nil, fmt.Errorf("prebuilt engine %s: no executable llama-bench in it, in bin/ or in build/bin/", dir)
}

package nodellama

// Native builds (engine.build.flavour: "localBuild"): the llama.cpp source
// that node-llama-cpp bundles (llama/gitRelease.bundle, a git bundle of the
// release in llama/llama.cpp.info.json), compiled by node-llama-cpp itself
// for this machine's CPU, into rigor's content-addressed build cache
// (internal/buildcache), with the key rules of llama.cpp builds.
//
// node-llama-cpp compiles into its own package directory
// (node_modules/node-llama-cpp/llama/localBuilds/<platform>), a path fixed
// by its dist/config.js, and its getLlama() loads a local build found there
// before any prebuilt binary. So a build entry, <cache>/builds/<key>/, is a
// copy of the locked install without the prebuilt platform package, in
// which node-llama-cpp compiled the bundled source: the entry is content
// addressed as a whole, the prebuilt install in <cache>/engines is never
// written to, and a run started in the entry can load nothing but the
// build (no prebuilt binary is there to fall back to).

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rigorbench/rigor/internal/buildcache"
)

// nativeBuildJS is the script that asks node-llama-cpp to compile its
// bundled source, written into the build directory as [NativeBuildFile].
//
//go:embed nativebuild.mjs
var nativeBuildJS []byte

// NativeBuildFile is the build script's name inside a build entry.
const NativeBuildFile = "rigor-native-build.mjs"

// nativeRecipeVersion changes when the way rigor makes a native build
// changes, so that older cache entries are not reused.
const nativeRecipeVersion = 2 // 2: the bundle is removed from the entry after the build

// Errors of native builds, each wrapped in an [*InstallError] with a hint.
var (
	// ErrNoBundle: the install holds no bundled llama.cpp source.
	ErrNoBundle = errors.New("no bundled llama.cpp source")
	// ErrBuildTools: a tool the build needs is not on the PATH.
	ErrBuildTools = errors.New("build tools missing")
)

// Bundle is the llama.cpp source a node-llama-cpp install bundles.
type Bundle struct {
	// Repo and Tag are llama/llama.cpp.info.json's llamaCppGithubRepo and
	// tag: the release node-llama-cpp was published with.
	Repo string `json:"repo"`
	Tag  string `json:"tag"`
	// Commit is the bundle's HEAD commit (40 hex).
	Commit string `json:"commit"`
	// Path is the bundle file.
	Path string `json:"-"`
}

// llamaDir is node-llama-cpp's llama/ directory in an install (or a build
// entry) dir.
func llamaDir(dir string) string { return filepath.Join(dir, "node_modules", Package, "llama") }

// ReadBundle describes the bundled source of the install in dir: its
// release (llama.cpp.info.json) and the commit its git bundle's header
// names (HEAD, else its only ref). It reads two small files and the
// bundle's first lines; no git. A missing bundle is ErrNoBundle.
func ReadBundle(dir string) (*Bundle, error) {
	ld := llamaDir(dir)
	var info struct {
		Tag  string `json:"tag"`
		Repo string `json:"llamaCppGithubRepo"`
	}
	b, err := os.ReadFile(filepath.Join(ld, "llama.cpp.info.json"))
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrNoBundle, filepath.ToSlash(filepath.Join("node_modules", Package, "llama", "llama.cpp.info.json"))+" is missing")
	}
	if err := json.Unmarshal(b, &info); err != nil || info.Tag == "" {
		return nil, fmt.Errorf("%w: llama.cpp.info.json names no release", ErrNoBundle)
	}
	path := filepath.Join(ld, "gitRelease.bundle")
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s is missing", ErrNoBundle, filepath.ToSlash(filepath.Join("node_modules", Package, "llama", "gitRelease.bundle")))
	}
	defer f.Close()
	commit, err := BundleHead(f)
	if err != nil {
		return nil, fmt.Errorf("%w: gitRelease.bundle: %v", ErrNoBundle, err)
	}
	return &Bundle{Repo: info.Repo, Tag: info.Tag, Commit: commit, Path: path}, nil
}

var bundleRefRE = regexp.MustCompile(`^([0-9a-f]{40}) (\S+)$`)

// BundleHead reads a git bundle's header (v2 or v3: the signature line,
// v3's @capabilities, -prerequisites, then "<sha> <ref>" lines up to an
// empty line) and returns the commit of HEAD, else of the only ref.
func BundleHead(r io.Reader) (string, error) {
	br := bufio.NewReaderSize(r, 4096)
	sig, err := br.ReadString('\n')
	if err != nil || (sig != "# v2 git bundle\n" && sig != "# v3 git bundle\n") {
		return "", errors.New("not a git bundle")
	}
	refs := map[string]string{}
	var first string
	for i := 0; i < 10000; i++ {
		line, err := br.ReadString('\n')
		if err != nil {
			return "", errors.New("truncated header")
		}
		line = strings.TrimRight(line, "\n")
		if line == "" {
			break
		}
		if strings.HasPrefix(line, "@") || strings.HasPrefix(line, "-") {
			continue
		}
		m := bundleRefRE.FindStringSubmatch(line)
		if m == nil {
			return "", fmt.Errorf("unexpected header line %q", line)
		}
		refs[m[2]] = m[1]
		if first == "" {
			first = m[1]
		}
	}
	if c, ok := refs["HEAD"]; ok {
		return c, nil
	}
	if len(refs) == 1 {
		return first, nil
	}
	return "", errors.New("no HEAD ref")
}

// NativeRecipe is what a native build runs, as its build key hashes it.
type NativeRecipe struct {
	Version int `json:"version"`
	// Builder is how: node-llama-cpp's own compile of its bundled source.
	Builder string `json:"builder"`
	// NodeLlamaCpp is the package version; Install the key of the
	// prebuilt install the build copies (versions, integrities, node
	// major, platform).
	NodeLlamaCpp string `json:"nodeLlamaCpp"`
	Install      string `json:"install"`
	// Release is the bundled llama.cpp release (repo and tag).
	Release string `json:"release"`
	// Configure are the cmake options node-llama-cpp sets for a CPU build
	// on its own host (dist/bindings/utils/compileLLamaCpp.js); they come
	// with the package version and are listed here for `rigor cache list`.
	Configure []string `json:"configure"`
	// CPU is this machine's CPU (model and a digest of its feature
	// flags): GGML_NATIVE compiles for it, so another CPU builds anew.
	CPU string `json:"cpu"`
}

// nativeConfigure are node-llama-cpp 3's cmake options for a CPU build on
// the host it runs on.
var nativeConfigure = []string{"-DGGML_NATIVE=ON", "-DGGML_METAL=OFF", "-DGGML_CCACHE=OFF", "-DLLAMA_CURL=OFF"}

// NativeInputs returns what the native build of the install inst is keyed
// by: the engine "node-llama-cpp", the bundle's commit, no patches
// (node-llama-cpp's own patches come with the package, whose integrity the
// install key holds), the recipe, the compiler identity (cc, c++, cmake;
// remembered per executable as for llama.cpp builds) and GOOS/GOARCH.
func NativeInputs(ctx context.Context, cache string, inst *Installation, b *Bundle) (buildcache.Inputs, error) {
	rec := NativeRecipe{
		Version: nativeRecipeVersion, Builder: "node-llama-cpp getLlama({gpu: false, build: \"forceRebuild\", usePrebuiltBinaries: false})",
		NodeLlamaCpp: inst.Version, Install: inst.Key, Release: b.Repo + "@" + b.Tag,
		Configure: nativeConfigure, CPU: hostCPU(),
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return buildcache.Inputs{}, err
	}
	return buildcache.Inputs{
		Engine:   Package,
		Commit:   b.Commit,
		Patches:  []string{},
		Recipe:   raw,
		Compiler: buildcache.Toolchain(ctx, cache, nil),
		Platform: runtime.GOOS + "/" + runtime.GOARCH,
	}, nil
}

// hostCPU names this machine's CPU for the key of a build made for it:
// /proc/cpuinfo's model name and the sha256 of its sorted feature flags
// (Linux); GOARCH elsewhere.
var hostCPU = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	var model, flags string
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "model name":
			if model == "" {
				model = strings.TrimSpace(v)
			}
		case "flags", "Features":
			if flags == "" {
				f := strings.Fields(v)
				sort.Strings(f)
				flags = strings.Join(f, " ")
			}
		}
	}
	if model == "" {
		model = runtime.GOARCH
	}
	sum := sha256.Sum256([]byte(flags))
	return model + " (flags " + hex.EncodeToString(sum[:])[:12] + ")"
})

// NativeTools are the programs a native build needs on the PATH:
// node-llama-cpp runs cmake (through cmake-js, started by npm), git (to
// clone its bundle) and the C and C++ compilers.
var NativeTools = []string{"cmake", "git", "npm", "c++", "cc"}

// CheckNativeTools returns an [*InstallError] wrapping ErrBuildTools that
// names every tool of [NativeTools] missing from the PATH (CC and CXX
// replace cc and c++ when set), nil when all are there.
func CheckNativeTools() error {
	var missing []string
	for _, t := range NativeTools {
		name := t
		switch t {
		case "c++":
			if v := os.Getenv("CXX"); v != "" {
				name = v
			}
		case "cc":
			if v := os.Getenv("CC"); v != "" {
				name = v
			}
		}
		if _, err := exec.LookPath(name); err != nil {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return &InstallError{Err: ErrBuildTools,
		Msg: fmt.Sprintf("building node-llama-cpp from its bundled source needs %s, which %s not on the PATH",
			strings.Join(missing, ", "), map[bool]string{true: "is", false: "are"}[len(missing) == 1]),
		Advice: "install them (Debian: apt-get install cmake git g++ npm), or run node-llama-cpp's prebuilt binaries: drop engine.build.flavour or set it to \"prebuilt\""}
}

// NativeOptions configure [BuildNative].
type NativeOptions struct {
	// Cache is rigor's cache directory; the build goes to
	// <Cache>/builds/<key>.
	Cache string
	// Install is the locked prebuilt install whose bundled source is
	// built.
	Install *Installation
	// Progress, when set, receives the build's percentage and the line
	// that moved it.
	Progress func(pct int, line string)
	// Log, when set, receives the build's output as it happens (it is also
	// kept in the entry's build.log).
	Log io.Writer
}

// NativeBuild is a native build ready to run.
type NativeBuild struct {
	// Key is the build cache key; Dir the entry, a directory laid out as
	// an install (node_modules, the runner): the BinDir of a run.
	Key string
	Dir string
	// Bundle is the source that was built.
	Bundle *Bundle
	// BuildCommit is the short commit llama.cpp's generated
	// build-info.cpp names.
	BuildCommit string
	// Files are the native files of the build (relative to Dir) with the
	// sha256 the build recorded.
	Files map[string]string
	// Cached says the build came from the cache without building.
	Cached bool
	// Inputs are what the key hashes.
	Inputs buildcache.Inputs
}

// NativeKey returns the build key of the install's native build and its
// bundle, without building.
func NativeKey(ctx context.Context, cache string, inst *Installation) (string, *Bundle, buildcache.Inputs, error) {
	b, err := ReadBundle(inst.Dir)
	if err != nil {
		return "", nil, buildcache.Inputs{}, bundleError(err, inst)
	}
	in, err := NativeInputs(ctx, cache, inst, b)
	if err != nil {
		return "", nil, in, err
	}
	return in.Key(), b, in, nil
}

func bundleError(err error, inst *Installation) error {
	if !errors.Is(err, ErrNoBundle) {
		return err
	}
	return &InstallError{Err: ErrNoBundle,
		Msg:    fmt.Sprintf("building node-llama-cpp@%s from source: %v", inst.Version, err),
		Advice: "node-llama-cpp ships its llama.cpp source as llama/gitRelease.bundle; without it a build would clone from GitHub. Reinstall the package (rigor cache of engines: remove " + inst.Dir + ") or use flavour: \"prebuilt\""}
}

// LookupNative returns the cached native build of inst, or an error
// wrapping buildcache.ErrNotFound.
func LookupNative(ctx context.Context, cache string, inst *Installation) (*NativeBuild, error) {
	key, b, in, err := NativeKey(ctx, cache, inst)
	if err != nil {
		return nil, err
	}
	e, err := buildcache.Cache{Root: cache}.Lookup(key)
	if err != nil {
		return nil, err
	}
	return nativeOf(e, b, in, true), nil
}

func nativeOf(e *buildcache.Entry, b *Bundle, in buildcache.Inputs, cached bool) *NativeBuild {
	nb := &NativeBuild{Key: e.Key, Dir: e.Dir, Bundle: b, Cached: cached, Inputs: in, Files: map[string]string{}}
	for name, rel := range e.Bins {
		nb.Files[filepath.ToSlash(rel)] = e.SHA256[name]
	}
	if c, _ := buildCommitOf(e.Dir); c != "" {
		nb.BuildCommit = c
	}
	return nb
}

// BuildNative returns the native build of opts.Install from the build
// cache, or makes it: it checks the tools ([CheckNativeTools]) and the
// bundle, copies the install into the build directory without the prebuilt
// platform package, runs [NativeBuildFile] with node (node-llama-cpp
// clones its bundle and compiles it with cmake for this CPU), checks that
// node-llama-cpp loaded a "localBuild" and that llama.cpp's generated
// build-info.cpp names the bundle's commit, and removes the source clone
// and cmake's build tree, keeping the compiled Release directory. It opens
// no network connection: the source is the bundle, cmake and the compilers
// are the machine's.
//
// A failure is a [*buildcache.FailedError] holding the tail of the log; a
// cancelled ctx kills the build's whole process group.
func BuildNative(ctx context.Context, opts NativeOptions) (*NativeBuild, error) {
	inst := opts.Install
	key, b, in, err := NativeKey(ctx, opts.Cache, inst)
	if err != nil {
		return nil, err
	}
	c := buildcache.Cache{Root: opts.Cache}
	if e, err := c.Lookup(key); err == nil {
		return nativeOf(e, b, in, true), nil
	}
	if err := CheckNativeTools(); err != nil {
		return nil, err
	}
	e, built, err := c.Build(ctx, in, func(ctx context.Context, dir string, log *os.File) (map[string]string, error) {
		return runNative(ctx, opts, b, dir, log)
	})
	if err != nil {
		return nil, err
	}
	return nativeOf(e, b, in, !built), nil
}

// runNative makes the build in dir.
func runNative(ctx context.Context, opts NativeOptions, b *Bundle, dir string, log *os.File) (map[string]string, error) {
	inst := opts.Install
	var out io.Writer = log
	if opts.Log != nil {
		out = io.MultiWriter(log, opts.Log)
	}
	pw := &nativeProgress{w: out, fn: opts.Progress, commit: b.Commit}
	fmt.Fprintf(pw, "rigor: building node-llama-cpp@%s's bundled llama.cpp %s (%s) for this CPU\n", inst.Version, b.Tag, b.Commit)
	if err := copyInstall(inst.Dir, dir, inst.Platform); err != nil {
		return nil, fmt.Errorf("copying the install: %w", err)
	}
	script := filepath.Join(dir, NativeBuildFile)
	if err := os.WriteFile(script, nativeBuildJS, 0o644); err != nil {
		return nil, err
	}
	node := inst.Node
	if node == "" {
		node = "node"
	}
	env := nativeEnv(os.Environ(), node)
	fmt.Fprintf(pw, "+ %s %s\n", node, NativeBuildFile)
	var stdout bytes.Buffer
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdout, cmd.Stderr = io.MultiWriter(pw, &stdout), pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("interrupted: %w", ctx.Err())
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("node-llama-cpp's build exited with status %d", ee.ExitCode())
		}
		return nil, fmt.Errorf("running node-llama-cpp's build: %w", err)
	}
	var res struct {
		BuildType, Release, Repo, SystemInfo string
	}
	if i := bytes.LastIndex(stdout.Bytes(), []byte("rigor-native-build ")); i < 0 {
		return nil, errors.New("node-llama-cpp's build printed no result")
	} else if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()[i+len("rigor-native-build "):]), &res); err != nil {
		return nil, fmt.Errorf("node-llama-cpp's build result: %w", err)
	}
	if res.BuildType != "localBuild" {
		return nil, fmt.Errorf("node-llama-cpp loaded a %q binary after building, not the local build", res.BuildType)
	}
	fmt.Fprintf(pw, "rigor: node-llama-cpp loaded the local build: %s\n", res.SystemInfo)
	commit, file := buildCommitOf(dir)
	if commit == "" {
		return nil, errors.New("the build left no llama.cpp build-info.cpp naming its commit")
	}
	fmt.Fprintf(pw, "rigor: build commit %s (%s)\n", commit, file)
	if !strings.HasPrefix(b.Commit, strings.ToLower(commit)) || len(commit) < 4 {
		return nil, fmt.Errorf("build reports commit %s (%s), but node-llama-cpp's bundle is at %s", commit, file, b.Commit)
	}
	if err := trimNative(dir); err != nil {
		return nil, fmt.Errorf("removing the build tree: %w", err)
	}
	bins := map[string]string{}
	for _, rel := range nativeFiles(dir) {
		bins[filepath.Base(rel)] = rel
	}
	if len(bins) == 0 {
		return nil, errors.New("the build made no native addon under llama/localBuilds")
	}
	pw.flush()
	return bins, nil
}

// nativeEnv is the build's environment: rigor's, with node's directory
// first on the PATH and node-llama-cpp's own settings
// (NODE_LLAMA_CPP_GPU, NODE_LLAMA_CPP_CMAKE_OPTION_*, …) removed, since
// the build key does not hold them.
func nativeEnv(environ []string, node string) []string {
	var env []string
	path := ""
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "NODE_LLAMA_CPP_"):
			continue
		case k == "PATH":
			path = v
			continue
		}
		env = append(env, kv)
	}
	if d := filepath.Dir(node); d != "." && d != "" {
		path = d + string(os.PathListSeparator) + path
	}
	return append(env, "PATH="+path, "NODE_LLAMA_CPP_SKIP_DOWNLOAD=false")
}

// copyInstall copies the install src into dst (which exists), keeping
// symlinks (node_modules/.bin) and modes, and leaving out the prebuilt
// platform package, the completion marker and the runner files.
func copyInstall(src, dst, platform string) error {
	skip := map[string]bool{
		filepath.Join("node_modules", filepath.FromSlash(PlatformPackage(platform))): true,
		MarkerFile: true, RunnerFile: true, ServeFile: true, QualityFile: true,
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil || rel == "." {
			return err
		}
		if skip[rel] {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, target)
		case d.IsDir():
			return os.Mkdir(target, info.Mode().Perm()|0o700)
		case info.Mode().IsRegular():
			return copyFile(p, target, info.Mode().Perm())
		}
		return nil
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// localBuildsDir is where node-llama-cpp puts local builds.
func localBuildsDir(dir string) string { return filepath.Join(llamaDir(dir), "localBuilds") }

var buildCommitRE = regexp.MustCompile(`LLAMA_(?:BUILD_)?COMMIT\s*=\s*"([^"]*)"`)

// buildCommitOf returns the commit llama.cpp's generated build-info.cpp
// names in a local build, and that file relative to dir. The build tree
// is removed after the build, so the file is kept beside the Release
// directory as build-info.cpp.
func buildCommitOf(dir string) (commit, file string) {
	var files []string
	for _, pat := range []string{"*/build-info.cpp", "*/llama.cpp/common/build-info.cpp", "*/common/build-info.cpp"} {
		m, _ := filepath.Glob(filepath.Join(localBuildsDir(dir), pat))
		files = append(files, m...)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if m := buildCommitRE.FindSubmatch(b); m != nil {
			rel, _ := filepath.Rel(dir, f)
			return string(m[1]), filepath.ToSlash(rel)
		}
	}
	return "", ""
}

// trimNative removes what a run does not need: the clone of the bundle
// (llama/llama.cpp), the bundle itself (35 MB; the key names its commit and
// the install keeps it) and, in each local build, everything but the
// Release directory and node-llama-cpp's buildDone.status; llama.cpp's
// build-info.cpp is kept beside them.
func trimNative(dir string) error {
	for _, p := range []string{"llama.cpp", "gitRelease.bundle"} {
		if err := os.RemoveAll(filepath.Join(llamaDir(dir), p)); err != nil {
			return err
		}
	}
	builds, err := os.ReadDir(localBuildsDir(dir))
	if err != nil {
		return err
	}
	for _, b := range builds {
		if !b.IsDir() {
			continue
		}
		bd := filepath.Join(localBuildsDir(dir), b.Name())
		for _, p := range []string{filepath.Join(bd, "llama.cpp", "common", "build-info.cpp"), filepath.Join(bd, "common", "build-info.cpp")} {
			if src, err := os.ReadFile(p); err == nil {
				if err := os.WriteFile(filepath.Join(bd, "build-info.cpp"), src, 0o644); err != nil {
					return err
				}
				break
			}
		}
		items, err := os.ReadDir(bd)
		if err != nil {
			return err
		}
		for _, it := range items {
			switch it.Name() {
			case "Release", "buildDone.status", "build-info.cpp":
				continue
			}
			if err := os.RemoveAll(filepath.Join(bd, it.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// nativeFiles lists the native files of the local builds in dir (the
// addon and the shared libraries beside it), relative to dir, sorted.
func nativeFiles(dir string) []string { return nativeFilesUnder(dir, localBuildsDir(dir)) }

// nativeProgress passes the build's output on and turns it into progress:
// cmake's "[ 42%]" lines give the percentage (kept below 100 and never
// decreasing), and the first cmake configure line ("-- …") says the
// bundle is checked out, which rigor's progress display reads as the
// start of configuring.
type nativeProgress struct {
	w      io.Writer
	fn     func(int, string)
	commit string

	mu         sync.Mutex
	partial    []byte
	configured bool
	shown      int
}

var cmakePctRE = regexp.MustCompile(`^\[\s*(\d{1,3})%\]`)

func (p *nativeProgress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.partial = append(p.partial, b...)
	for {
		i := bytes.IndexByte(p.partial, '\n')
		if i < 0 {
			break
		}
		line := string(bytes.TrimRight(p.partial[:i+1], "\r\n"))
		rest := p.partial[i+1:]
		if !p.configured && strings.HasPrefix(line, "-- ") {
			p.configured = true
			fmt.Fprintf(p.w, "rigor: checked out %s (node-llama-cpp's git bundle)\n", p.commit)
		}
		if _, err := p.w.Write(p.partial[:i+1]); err != nil {
			return len(b), err
		}
		p.partial = rest
		if m := cmakePctRE.FindStringSubmatch(line); m != nil && p.fn != nil {
			n, _ := strconv.Atoi(m[1])
			n = max(min(n, 99), p.shown)
			p.shown = n
			p.fn(n, line)
		}
	}
	return len(b), nil
}

// flush writes a last partial line.
func (p *nativeProgress) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.partial) > 0 {
		p.w.Write(append(p.partial, '\n'))
		p.partial = nil
	}
}

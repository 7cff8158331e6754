package nodellama

// An install is a directory of the engine cache,
// <cache>/engines/node-llama-cpp/<key>/, holding node_modules (node-llama-cpp
// and its platform package, optional packages omitted, install scripts off),
// the runner, and last of all the completion marker. Every step before the
// marker happens in a temporary sibling directory that is renamed into
// place, so a directory without a marker is a crash's leftover and is
// removed, never used.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rigorbench/rigor/internal/buildcache"
	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/logtail"
)

// Package is the npm package of node-llama-cpp itself.
const Package = "node-llama-cpp"

// MarkerFile is the completion marker of an install, written last.
const MarkerFile = ".rigor-install.json"

// MinNodeMajor is the oldest Node.js major version node-llama-cpp 3 runs on.
const MinNodeMajor = 18

// InstallOptions says what to install and where.
type InstallOptions struct {
	// Cache is the engine cache root; the install goes to
	// <Cache>/engines/node-llama-cpp/<key>/.
	Cache string
	// Version is the exact version of node-llama-cpp and of its platform
	// package, e.g. "3.22.1".
	Version string
	// Platform names the platform package, @node-llama-cpp/<Platform>, e.g.
	// "linux-x64"; empty means [DefaultPlatform].
	Platform string
	// Integrity maps package names to the integrity the lock expects
	// ("sha512-…"). A package missing from the map (or an empty map) is
	// accepted and its integrity reported in [Installation.Packages].
	Integrity map[string]string
	// NPM is the npm executable; empty means npm on the PATH.
	NPM string
	// Node is the node executable; empty means node on the PATH.
	Node string
	// Progress, when set, receives one line per step ("installing
	// node-llama-cpp@3.22.1 …") and the warnings.
	Progress func(string)
	// Offline forbids npm: an install that is not in the cache is an
	// [*InstallError] wrapping ErrNotInstalled.
	Offline bool
}

// Installation is a complete engine install, as [Install] returns it.
type Installation struct {
	// Dir is the install directory: the BinDir of engine.Inputs.
	Dir string
	// Key is the content address: the sha256 of the package versions and
	// expected integrities, the node major version and the platform.
	Key string
	// Version and Platform are as installed.
	Version  string
	Platform string
	// Packages maps the two packages to their installed version and
	// integrity, as npm recorded them.
	Packages map[string]PackageInfo
	// Node is the node executable and NodeVersion its `node --version`,
	// e.g. "v20.20.2".
	Node        string
	NodeVersion string
	// Runner is the path of the bench runner in Dir.
	Runner string
	// Cached is true when the install was already in the cache.
	Cached bool
	// Substituted is true when the install came from the archive.
	Substituted bool
	// Warnings are what Install repaired on the way (a cache entry with
	// missing files, reinstalled).
	Warnings []string
}

// PackageInfo is one installed package.
type PackageInfo struct {
	Version   string `json:"version"`
	Integrity string `json:"integrity"`
}

// PlatformPackage returns the name of the platform package,
// "@node-llama-cpp/linux-x64".
func PlatformPackage(platform string) string { return "@node-llama-cpp/" + platform }

// DefaultPlatform names node-llama-cpp's prebuilt CPU package for this
// machine ("linux-x64", "mac-arm64-metal", "win-x64", …).
func DefaultPlatform() string {
	arch := map[string]string{"amd64": "x64", "arm64": "arm64", "arm": "armv7l"}[runtime.GOARCH]
	if arch == "" {
		arch = runtime.GOARCH
	}
	switch runtime.GOOS {
	case "darwin":
		if arch == "arm64" {
			return "mac-arm64-metal"
		}
		return "mac-" + arch
	case "windows":
		return "win-" + arch
	}
	return runtime.GOOS + "-" + arch
}

// Sentinel errors of [Install], each wrapped in an [*InstallError] that
// carries a hint.
var (
	ErrNoNode              = errors.New("node is not on the PATH")
	ErrNodeTooOld          = errors.New("node is too old")
	ErrNoNPM               = errors.New("npm is not on the PATH")
	ErrRegistryUnreachable = errors.New("the npm registry is unreachable")
	ErrUnknownVersion      = errors.New("unknown version")
	ErrIntegrityMismatch   = errors.New("integrity mismatch")
	ErrNotInstalled        = errors.New("not installed")
	ErrNativeChanged       = errors.New("a native file changed since it was installed")
)

// InstallError is a failed install: what failed, with a hint for the user.
type InstallError struct {
	// Err is one of the sentinels (ErrNoNode, …) or the underlying error.
	Err error
	// Msg is the message; Error returns it.
	Msg string
	// Advice says what the user can do.
	Advice string
	// Output is the tail of npm's output, when npm failed.
	Output string
}

// Error returns the message.
func (e *InstallError) Error() string { return e.Msg }

// Unwrap returns the sentinel.
func (e *InstallError) Unwrap() error { return e.Err }

// Hint says what the user can do.
func (e *InstallError) Hint() string { return e.Advice }

// marker is the completion marker's content.
type marker struct {
	Version     string                 `json:"version"`
	Platform    string                 `json:"platform"`
	Packages    map[string]PackageInfo `json:"packages"`
	Node        string                 `json:"node"`
	NodeVersion string                 `json:"nodeVersion"`
	Installed   time.Time              `json:"installed"`
	// Native maps each native file a run loads (the addon, the shared
	// libraries beside it; [NativeFiles]) to its sha256 when npm installed
	// it. Markers of a rigor that did not hash them have none.
	Native map[string]string `json:"native,omitempty"`
}

var versionRE = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// Key returns the content address of an install: the sha256, in hex, of
// the package versions with their expected integrities (empty when the lock
// has none), the node major version and the platform.
func Key(version, platform string, integrity map[string]string, nodeMajor int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "rigor node-llama-cpp install v1\n")
	for _, p := range []string{Package, PlatformPackage(platform)} {
		fmt.Fprintf(&b, "%s@%s %s\n", p, version, integrity[p])
	}
	fmt.Fprintf(&b, "node %d\nplatform %s\n", nodeMajor, platform)
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}

// NodeVersion runs `node --version` and returns the version ("v20.20.2")
// and its major number.
func NodeVersion(ctx context.Context, node string) (version string, major int, err error) {
	out, err := exec.CommandContext(ctx, node, "--version").Output()
	if err != nil {
		return "", 0, fmt.Errorf("running %s --version: %w", node, err)
	}
	version = strings.TrimSpace(string(out))
	m := regexp.MustCompile(`^v?([0-9]+)\.`).FindStringSubmatch(version)
	if m == nil {
		return version, 0, fmt.Errorf("running %s --version: unexpected output %q", node, version)
	}
	major, _ = strconv.Atoi(m[1])
	return version, major, nil
}

// Install returns the install of node-llama-cpp opts describes, from the
// cache when a complete one is there, else installing it with npm from the
// registry:
//
//	npm install --omit=optional --ignore-scripts --no-audit --no-fund
//	    --save-exact --prefix <tmp> node-llama-cpp@V @node-llama-cpp/<platform>@V
//
// then checking both packages' versions and integrity against the lock,
// writing the runner, renaming the directory into place and writing the
// completion marker. A cache directory without a marker (an interrupted
// install) is removed and installed again; one whose marker is there but
// whose files are not is reinstalled with a warning. The runner is
// rewritten when this rigor's runner differs from the installed one.
//
// Errors are [*InstallError]s wrapping ErrNoNode, ErrNodeTooOld, ErrNoNPM,
// ErrRegistryUnreachable, ErrUnknownVersion or ErrIntegrityMismatch, each
// with a hint.
func Install(ctx context.Context, opts InstallOptions) (*Installation, error) {
	progress := opts.Progress
	if progress == nil {
		progress = func(string) {}
	}
	if opts.Cache == "" {
		return nil, errors.New("installing node-llama-cpp: no engine cache directory")
	}
	if !versionRE.MatchString(opts.Version) {
		return nil, &InstallError{Err: ErrUnknownVersion,
			Msg:    fmt.Sprintf("installing node-llama-cpp: version %q is not an exact version", opts.Version),
			Advice: "lock an exact version such as 3.22.1 (`npm view node-llama-cpp versions` lists them)"}
	}
	platform := opts.Platform
	if platform == "" {
		platform = DefaultPlatform()
	}
	node, nodeVersion, major, err := findNode(ctx, opts.Node)
	if err != nil {
		return nil, err
	}
	key := Key(opts.Version, platform, opts.Integrity, major)
	root := filepath.Join(opts.Cache, "engines", "node-llama-cpp")
	dir := filepath.Join(root, key)
	inst := &Installation{Dir: dir, Key: key, Version: opts.Version, Platform: platform, Node: node, NodeVersion: nodeVersion,
		Runner: filepath.Join(dir, RunnerFile)}

	if cached, err := fromCache(ctx, opts, inst, progress); err != nil {
		return nil, err
	} else if cached {
		return inst, nil
	}
	if _, err := os.Lstat(dir); err == nil {
		// No valid marker: an interrupted install or a damaged entry.
		if err := os.RemoveAll(dir); err != nil {
			return nil, fmt.Errorf("installing node-llama-cpp: removing incomplete cache entry: %w", err)
		}
	}

	// An archive (a substituter) before npm: the install key is the key.
	if sub, err := substituteInstall(ctx, opts, root, inst); err != nil || sub != nil {
		if sub != nil {
			progress(fmt.Sprintf("node-llama-cpp@%s (%s) from the archive: %s", opts.Version, platform, dir))
		}
		return sub, err
	}
	if opts.Offline {
		return nil, &InstallError{Err: ErrNotInstalled,
			Msg:    fmt.Sprintf("node-llama-cpp@%s (%s) is not in the engine cache, and npm may not be used offline", opts.Version, platform),
			Advice: "run once without --offline to install it"}
	}
	npm, err := findTool(opts.NPM, "npm")
	if err != nil {
		return nil, &InstallError{Err: ErrNoNPM, Msg: "installing node-llama-cpp: npm is not on the PATH",
			Advice: "install npm (it comes with Node.js; on Debian: apt-get install npm)"}
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("installing node-llama-cpp: %w", err)
	}
	tmp, err := os.MkdirTemp(root, ".tmp-"+key[:12]+"-")
	if err != nil {
		return nil, fmt.Errorf("installing node-llama-cpp: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed

	pkgs := []string{Package + "@" + opts.Version, PlatformPackage(platform) + "@" + opts.Version}
	manifest := fmt.Sprintf("{\n  \"name\": \"rigor-node-llama-cpp\",\n  \"private\": true,\n  \"description\": \"node-llama-cpp %s for rigor's bench runner\"\n}\n", opts.Version)
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), []byte(manifest), 0o644); err != nil {
		return nil, fmt.Errorf("installing node-llama-cpp: %w", err)
	}
	progress(fmt.Sprintf("installing %s into the engine cache (npm, optional packages omitted, scripts off)", strings.Join(pkgs, " ")))
	installed, err := npmInstall(ctx, npm, node, tmp, pkgs, opts.Version, platform)
	if err != nil {
		return nil, err
	}
	if err := verifyIntegrity(installed, opts.Integrity); err != nil {
		return nil, err
	}
	if problem := checkFiles(tmp, opts.Version, platform); problem != "" {
		return nil, fmt.Errorf("installing node-llama-cpp: npm finished but %s", problem)
	}
	if err := writeFileAtomic(filepath.Join(tmp, RunnerFile), runnerJS); err != nil {
		return nil, fmt.Errorf("installing node-llama-cpp: writing the runner: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(tmp, ServeFile), serveJS); err != nil {
		return nil, fmt.Errorf("installing node-llama-cpp: writing the server: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(tmp, QualityFile), qualityJS); err != nil {
		return nil, fmt.Errorf("installing node-llama-cpp: writing the quality runner: %w", err)
	}
	native := NativeFiles(tmp, platform)
	sums, err := engine.HashBinaries(ctx, "", tmp, native...)
	if err != nil {
		return nil, fmt.Errorf("installing node-llama-cpp: %w", err)
	}
	// The marker goes in before the rename, so that the install appears
	// complete at once: another rigor installing the same version at the
	// same moment (two Slurm jobs on one node) either renames first or
	// finds this one whole.
	m := marker{Version: opts.Version, Platform: platform, Packages: installed, Node: node, NodeVersion: nodeVersion,
		Installed: time.Now().UTC().Truncate(time.Second), Native: sums}
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := writeFileAtomic(filepath.Join(tmp, MarkerFile), append(b, '\n')); err != nil {
		return nil, fmt.Errorf("installing node-llama-cpp: writing the completion marker: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another rigor finished the same install meanwhile.
		if _, merr := readMarker(dir); merr == nil && checkFiles(dir, opts.Version, platform) == "" {
			inst.Packages = installed
			return inst, nil
		}
		return nil, fmt.Errorf("installing node-llama-cpp: moving the install into place: %w", err)
	}
	syncDir(root)
	inst.Packages = installed
	progress(fmt.Sprintf("installed node-llama-cpp@%s (%s) in %s", opts.Version, platform, dir))
	return inst, nil
}

// fromCache fills inst from a complete cache entry and reports whether
// there was one; a damaged entry is a warning in inst (and the install
// goes on). A complete entry whose packages or native files are not those
// locked is an error.
func fromCache(ctx context.Context, opts InstallOptions, inst *Installation, progress func(string)) (bool, error) {
	dir, platform := inst.Dir, inst.Platform
	m, err := readMarker(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			w := fmt.Sprintf("engine cache entry %s has an unreadable marker (%v): reinstalling", dir, err)
			inst.Warnings = append(inst.Warnings, w)
			progress("warning: " + w)
		}
		return false, nil
	}
	if problem := checkFiles(dir, opts.Version, platform); problem != "" {
		w := fmt.Sprintf("engine cache entry %s is damaged (%s): reinstalling", dir, problem)
		inst.Warnings = append(inst.Warnings, w)
		progress("warning: " + w)
		return false, nil
	}
	inst.Packages = m.Packages
	inst.Cached = true
	if err := verifyIntegrity(m.Packages, opts.Integrity); err != nil {
		return true, err
	}
	if err := checkNative(ctx, opts.Cache, dir, platform, m.Native); err != nil {
		return true, err
	}
	if err := ensureRunner(dir); err != nil {
		return true, fmt.Errorf("installing node-llama-cpp: %w", err)
	}
	progress(fmt.Sprintf("node-llama-cpp@%s (%s) is in the cache: %s", opts.Version, platform, dir))
	return true, nil
}

// findNode finds node (the one named, else on the PATH) and checks that it
// is new enough: its path, version and major version.
func findNode(ctx context.Context, named string) (node, version string, major int, err error) {
	node, err = findTool(named, "node")
	if err != nil {
		return "", "", 0, &InstallError{Err: ErrNoNode, Msg: "installing node-llama-cpp: node is not on the PATH",
			Advice: fmt.Sprintf("install Node.js %d or newer (https://nodejs.org or your package manager) and make sure `node` is on the PATH", MinNodeMajor)}
	}
	version, major, err = NodeVersion(ctx, node)
	if err != nil {
		return "", "", 0, &InstallError{Err: ErrNoNode, Msg: "installing node-llama-cpp: " + err.Error(),
			Advice: fmt.Sprintf("install Node.js %d or newer", MinNodeMajor)}
	}
	if major < MinNodeMajor {
		return "", "", 0, &InstallError{Err: ErrNodeTooOld,
			Msg:    fmt.Sprintf("installing node-llama-cpp: node %s is too old (node-llama-cpp needs %d or newer)", version, MinNodeMajor),
			Advice: fmt.Sprintf("install Node.js %d or newer and put it first on the PATH", MinNodeMajor)}
	}
	return node, version, major, nil
}

// npmInstall runs npm install of pkgs into tmp (optional packages
// omitted, scripts off) with node first on npm's PATH, and returns the
// packages npm installed, each checked to be version.
func npmInstall(ctx context.Context, npm, node, tmp string, pkgs []string, version, platform string) (map[string]PackageInfo, error) {
	args := append([]string{"install", "--omit=optional", "--ignore-scripts", "--no-audit", "--no-fund", "--save-exact",
		"--no-update-notifier", "--prefix", tmp}, pkgs...)
	cmd := exec.CommandContext(ctx, npm, args...)
	cmd.Dir = tmp
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// npm runs with node; put the chosen node first on its PATH.
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(node)+string(os.PathListSeparator)+os.Getenv("PATH"))
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("installing node-llama-cpp: %w", ctx.Err())
		}
		return nil, npmError(err, out.Bytes(), version, platform)
	}
	installed, err := readPackageLock(tmp, []string{Package, PlatformPackage(platform)})
	if err != nil {
		return nil, fmt.Errorf("installing node-llama-cpp: %w", err)
	}
	for name, p := range installed {
		if p.Version != version {
			return nil, fmt.Errorf("installing node-llama-cpp: npm installed %s@%s, want %s", name, p.Version, version)
		}
	}
	return installed, nil
}

// checkNative checks the native files of a cached install against the
// hashes its marker recorded at install time (through the stat cache under
// cache): a changed, missing or added addon or library is an
// [*InstallError] wrapping ErrNativeChanged that names the file. A marker
// without hashes (an older rigor's) is not checked.
func checkNative(ctx context.Context, cache, dir, platform string, recorded map[string]string) error {
	if recorded == nil {
		return nil
	}
	changed := func(f, what string) error {
		return &InstallError{Err: ErrNativeChanged,
			Msg:    fmt.Sprintf("the cached install of node-llama-cpp %s: %s", filepath.Join(dir, filepath.FromSlash(f)), what),
			Advice: "the engine cache is damaged or was tampered with; remove " + dir + " and run again to install it afresh"}
	}
	files := NativeFiles(dir, platform)
	for _, f := range files {
		if _, ok := recorded[f]; !ok {
			return changed(f, "npm did not install it")
		}
	}
	for _, f := range slices.Sorted(maps.Keys(recorded)) {
		if !slices.Contains(files, f) {
			return changed(f, "is missing")
		}
	}
	sums, err := engine.HashBinaries(ctx, cache, dir, files...)
	if err != nil {
		return err
	}
	for _, f := range files {
		if sums[f] != recorded[f] {
			return changed(f, fmt.Sprintf("sha256 %.12s, npm installed %.12s", sums[f], recorded[f]))
		}
	}
	return nil
}

// findTool resolves an explicit path or looks the name up on the PATH.
func findTool(explicit, name string) (string, error) {
	if explicit != "" {
		return exec.LookPath(explicit)
	}
	return exec.LookPath(name)
}

// readMarker reads an install's completion marker.
func readMarker(dir string) (*marker, error) {
	b, err := os.ReadFile(filepath.Join(dir, MarkerFile))
	if err != nil {
		return nil, err
	}
	var m marker
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", MarkerFile, err)
	}
	if m.Version == "" || len(m.Packages) == 0 {
		return nil, fmt.Errorf("parsing %s: incomplete", MarkerFile)
	}
	return &m, nil
}

// checkFiles says what is missing from an install, or "".
func checkFiles(dir, version, platform string) string {
	for _, p := range []string{Package, PlatformPackage(platform)} {
		pj := filepath.Join(dir, "node_modules", filepath.FromSlash(p), "package.json")
		b, err := os.ReadFile(pj)
		if err != nil {
			return fmt.Sprintf("%s is missing", filepath.ToSlash(filepath.Join("node_modules", p, "package.json")))
		}
		var v struct{ Version string }
		if json.Unmarshal(b, &v) != nil || v.Version != version {
			return fmt.Sprintf("node_modules/%s is not version %s", p, version)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", Package, "dist", "index.js")); err != nil {
		return "node_modules/node-llama-cpp/dist/index.js is missing"
	}
	bins := filepath.Join(dir, "node_modules", filepath.FromSlash(PlatformPackage(platform)), "bins")
	found := false
	_ = filepath.WalkDir(bins, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".node") {
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	if !found {
		return fmt.Sprintf("the native addon (node_modules/%s/bins/*/*.node) is missing", PlatformPackage(platform))
	}
	return ""
}

// NativeFiles lists the native files of an install that a run loads, as
// paths relative to the install directory: the addon (*.node) and the
// shared libraries beside it (libllama, libggml…), sorted.
func NativeFiles(dir, platform string) []string {
	return nativeFilesUnder(dir, filepath.Join(dir, "node_modules", filepath.FromSlash(PlatformPackage(platform)), "bins"))
}

// nativeFilesUnder lists the native files (addons and shared libraries)
// below root, relative to dir, sorted.
func nativeFilesUnder(dir, root string) []string {
	var out []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if n := d.Name(); strings.HasSuffix(n, ".node") || strings.Contains(n, ".so") || strings.HasSuffix(n, ".dylib") || strings.HasSuffix(n, ".dll") {
			if rel, err := filepath.Rel(dir, p); err == nil {
				out = append(out, filepath.ToSlash(rel))
			}
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// ensureRunner rewrites the runner, the server and the quality runner when
// they differ from this rigor's.
func ensureRunner(dir string) error {
	for name, src := range map[string][]byte{RunnerFile: runnerJS, ServeFile: serveJS, QualityFile: qualityJS} {
		p := filepath.Join(dir, name)
		if b, err := os.ReadFile(p); err == nil && bytes.Equal(b, src) {
			continue
		}
		if err := writeFileAtomic(p, src); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}

// readPackageLock reads the installed version and integrity of packages
// from npm's node_modules/.package-lock.json, or package-lock.json.
func readPackageLock(dir string, names []string) (map[string]PackageInfo, error) {
	var lock struct {
		Packages map[string]PackageInfo `json:"packages"`
	}
	var lastErr error
	for _, f := range []string{filepath.Join(dir, "node_modules", ".package-lock.json"), filepath.Join(dir, "package-lock.json")} {
		b, err := os.ReadFile(f)
		if err != nil {
			lastErr = err
			continue
		}
		if err := json.Unmarshal(b, &lock); err != nil {
			lastErr = fmt.Errorf("parsing %s: %w", filepath.Base(f), err)
			continue
		}
		out := map[string]PackageInfo{}
		for _, n := range names {
			p, ok := lock.Packages["node_modules/"+n]
			if !ok {
				return nil, fmt.Errorf("%s does not list %s", filepath.Base(f), n)
			}
			if p.Integrity == "" {
				return nil, fmt.Errorf("%s has no integrity for %s", filepath.Base(f), n)
			}
			out[n] = p
		}
		return out, nil
	}
	return nil, fmt.Errorf("reading npm's package lock: %w", lastErr)
}

// verifyIntegrity compares installed integrities with the lock's.
func verifyIntegrity(installed map[string]PackageInfo, want map[string]string) error {
	var bad []string
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		w := want[n]
		if w == "" {
			continue
		}
		got, ok := installed[n]
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: not installed (the lock pins %s)", n, w))
			continue
		}
		if got.Integrity != w {
			bad = append(bad, fmt.Sprintf("%s@%s: got %s, the lock pins %s", n, got.Version, got.Integrity, w))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return &InstallError{Err: ErrIntegrityMismatch,
		Msg:    "installing node-llama-cpp: integrity mismatch: " + strings.Join(bad, "; "),
		Advice: "the registry served different bytes than the lock pins: check `npm config get registry`, or re-lock if the change is expected"}
}

var (
	npmUnreachableRE = regexp.MustCompile(`\b(ENOTFOUND|ECONNREFUSED|ETIMEDOUT|EAI_AGAIN|ECONNRESET|ENETUNREACH|EHOSTUNREACH)\b`)
	npmNoTargetRE    = regexp.MustCompile(`\bETARGET\b|No matching version found`)
	npm404RE         = regexp.MustCompile(`\bE404\b|404 Not Found`)
	npm404PackageRE  = regexp.MustCompile(`'(@?[^'@\s]+)@[^']*' (?:could not be found|is not in this registry)`)
)

// Platforms lists the platform packages node-llama-cpp publishes.
var Platforms = []string{"linux-x64", "linux-arm64", "linux-armv7l", "mac-arm64-metal", "mac-x64", "win-x64", "win-arm64"}

// npmError turns a failed npm install into an [*InstallError], naming the
// cause npm printed: an unreachable registry (ENOTFOUND, ECONNREFUSED,
// ETIMEDOUT, …), a version that does not exist (ETARGET: node-llama-cpp
// and its platform packages are published together, so a missing version
// of either is a missing version of node-llama-cpp), or a package that does
// not exist (E404: a platform with no package).
func npmError(runErr error, out []byte, version, platform string) error {
	text := string(out)
	t := logtail.Lines([]byte(text), 15)
	switch {
	case npmUnreachableRE.MatchString(text):
		return &InstallError{Err: ErrRegistryUnreachable, Output: t,
			Msg:    fmt.Sprintf("installing node-llama-cpp@%s: the npm registry is unreachable (%s)", version, npmUnreachableRE.FindString(text)),
			Advice: "check the network and `npm config get registry` (a mirror can be set with `npm config set registry URL`); an install already in the engine cache needs no registry"}
	case npmNoTargetRE.MatchString(text):
		return &InstallError{Err: ErrUnknownVersion, Output: t,
			Msg:    fmt.Sprintf("installing node-llama-cpp: node-llama-cpp has no version %s", version),
			Advice: "`npm view node-llama-cpp versions` lists the published versions; a locked version unpublished since comes from an archive that holds its install (`rigor archive push` where a cache holds it, then --archive or RIGOR_ARCHIVE)"}
	case npm404RE.MatchString(text):
		pkg := ""
		if m := npm404PackageRE.FindStringSubmatch(text); m != nil {
			pkg = m[1]
		}
		if pkg == "" || pkg == Package {
			return &InstallError{Err: ErrUnknownVersion, Output: t,
				Msg:    fmt.Sprintf("installing node-llama-cpp: the npm registry has no node-llama-cpp@%s", version),
				Advice: "check `npm config get registry`; `npm view node-llama-cpp versions` lists the published versions; a locked version unpublished since comes from an archive that holds its install (`rigor archive push` where a cache holds it, then --archive or RIGOR_ARCHIVE)"}
		}
		return &InstallError{Err: ErrUnknownVersion, Output: t,
			Msg:    fmt.Sprintf("installing node-llama-cpp: there is no platform package %s@%s (platform %q)", pkg, version, platform),
			Advice: "node-llama-cpp's platforms are " + strings.Join(Platforms, ", ")}
	}
	return &InstallError{Err: runErr, Output: t,
		Msg:    fmt.Sprintf("installing node-llama-cpp@%s: npm install failed (%v): %s", version, runErr, lastLine(text)),
		Advice: "run the npm command with --loglevel verbose to see more"}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l != "" && !strings.Contains(l, "A complete log of this run") {
			return l
		}
	}
	return "no output"
}

// writeFileAtomic writes via a temporary file, fsync and rename.
func writeFileAtomic(path string, data []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	syncDir(filepath.Dir(path))
	return nil
}

// syncDir fsyncs a directory, best effort.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// InstallKind is what a [buildcache.Substituter] is asked for when an
// install is not in the engine cache.
const InstallKind = "install"

// substituteInstall asks ctx's substituter (the archive) for the install
// inst names, into a temporary directory beside it: its packages must be
// the locked versions with the locked integrity, and every native file
// must hash to what npm installed on the machine that archived it; then
// the runner is written and the directory renamed into place. nil, nil:
// no substituter, or it has none.
func substituteInstall(ctx context.Context, opts InstallOptions, root string, inst *Installation) (*Installation, error) {
	s := buildcache.SubstituterOf(ctx)
	if s == nil {
		return nil, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("installing node-llama-cpp: %w", err)
	}
	tmp, err := os.MkdirTemp(root, ".tmp-"+inst.Key[:12]+"-")
	if err != nil {
		return nil, fmt.Errorf("installing node-llama-cpp: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	had, err := s.Substitute(ctx, InstallKind, inst.Key, tmp)
	if err != nil || !had {
		return nil, err
	}
	refuse := func(why string) error {
		return &InstallError{Err: ErrNativeChanged,
			Msg:    fmt.Sprintf("the archived install of node-llama-cpp@%s (%s, %.12s) was refused: %s", inst.Version, inst.Platform, inst.Key, why),
			Advice: "the archive's copy is damaged or was tampered with; push it again from a machine whose engine cache holds it (rigor archive push)"}
	}
	m, err := readMarker(tmp)
	if err != nil {
		return nil, refuse("no completion marker: " + err.Error())
	}
	if m.Version != inst.Version || m.Platform != inst.Platform {
		return nil, refuse(fmt.Sprintf("it is node-llama-cpp@%s (%s)", m.Version, m.Platform))
	}
	if problem := checkFiles(tmp, inst.Version, inst.Platform); problem != "" {
		return nil, refuse(problem)
	}
	if err := verifyIntegrity(m.Packages, opts.Integrity); err != nil {
		return nil, refuse(err.Error())
	}
	if m.Native == nil {
		return nil, refuse("its marker records no hash of the native files")
	}
	if err := checkNative(ctx, "", tmp, inst.Platform, m.Native); err != nil {
		return nil, refuse(err.Error())
	}
	if err := ensureRunner(tmp); err != nil {
		return nil, fmt.Errorf("installing node-llama-cpp: %w", err)
	}
	if err := os.Rename(tmp, inst.Dir); err != nil {
		if _, merr := readMarker(inst.Dir); merr != nil {
			return nil, fmt.Errorf("installing node-llama-cpp: moving the install into place: %w", err)
		}
	}
	syncDir(root)
	inst.Packages = m.Packages
	inst.Substituted = true
	return inst, nil
}

package nodellama

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// The install tests run a fake npm (a shell script) that lays out what the
// real one does: node_modules/<pkg>/package.json, the native addon, and
// node_modules/.package-lock.json with versions and integrities. Its
// behaviour is chosen with FAKE_NPM_MODE; every call is counted in
// FAKE_NPM_CALLS. The real npm runs in the integration test.

const fakeNPM = `#!/bin/sh
echo call >> "$FAKE_NPM_CALLS"
prefix=""
pkgs=""
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix="$2"; shift 2;;
    -*) shift;;
    install) shift;;
    *) pkgs="$pkgs $1"; shift;;
  esac
done
case "$FAKE_NPM_MODE" in
  unreachable) cat "$FAKE_NPM_OUT" >&2; exit 1;;
  notarget) cat "$FAKE_NPM_OUT" >&2; exit 1;;
  e404) cat "$FAKE_NPM_OUT" >&2; exit 1;;
  crash) echo "npm error something odd" >&2; exit 7;;
esac
lock="$prefix/node_modules/.package-lock.json"
mkdir -p "$prefix/node_modules"
printf '{"name":"x","lockfileVersion":3,"packages":{' > "$lock"
sep=""
for p in $pkgs; do
  name="${p%@*}"; ver="${p##*@}"
  mkdir -p "$prefix/node_modules/$name"
  printf '{"name":"%s","version":"%s"}' "$name" "$ver" > "$prefix/node_modules/$name/package.json"
  integ="sha512-good-$name"
  if [ "$FAKE_NPM_MODE" = "tampered" ]; then integ="sha512-evil-$name"; fi
  printf '%s"node_modules/%s":{"version":"%s","integrity":"%s"}' "$sep" "$name" "$ver" "$integ" >> "$lock"
  sep=","
  case "$name" in
    node-llama-cpp) mkdir -p "$prefix/node_modules/$name/dist"; echo "export {}" > "$prefix/node_modules/$name/dist/index.js"
      if [ -n "$FAKE_BUNDLE" ]; then
        mkdir -p "$prefix/node_modules/$name/llama"; cp "$FAKE_BUNDLE" "$prefix/node_modules/$name/llama/gitRelease.bundle"
        echo '{"tag": "b1234", "llamaCppGithubRepo": "ggml-org/llama.cpp"}' > "$prefix/node_modules/$name/llama/llama.cpp.info.json"
      fi;;
    @node-llama-cpp/*) if [ "$FAKE_NPM_MODE" != "noaddon" ]; then mkdir -p "$prefix/node_modules/$name/bins/x"; echo bin > "$prefix/node_modules/$name/bins/x/llama-addon.node"; fi;;
  esac
done
printf '}}' >> "$lock"
`

type fakeTools struct {
	dir, node, npm, calls string
}

func newFakeTools(t *testing.T, nodeVersion string) *fakeTools {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the fake npm is a shell script")
	}
	dir := t.TempDir()
	f := &fakeTools{dir: dir, node: filepath.Join(dir, "node"), npm: filepath.Join(dir, "npm"), calls: filepath.Join(dir, "calls")}
	if err := os.WriteFile(f.node, []byte("#!/bin/sh\necho "+nodeVersion+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.npm, []byte(fakeNPM), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FAKE_NPM_CALLS", f.calls)
	t.Setenv("FAKE_NPM_MODE", "ok")
	return f
}

func (f *fakeTools) npmCalls(t *testing.T) int {
	b, err := os.ReadFile(f.calls)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "call")
}

func (f *fakeTools) opts(cache string) InstallOptions {
	return InstallOptions{Cache: cache, Version: "3.22.1", Platform: "linux-x64", Node: f.node, NPM: f.npm}
}

func TestKey(t *testing.T) {
	base := Key("3.22.1", "linux-x64", map[string]string{Package: "sha512-a"}, 20)
	if len(base) != 64 {
		t.Fatalf("Key: got %q, want 64 hex digits", base)
	}
	if again := Key("3.22.1", "linux-x64", map[string]string{Package: "sha512-a"}, 20); again != base {
		t.Errorf("Key is not deterministic: %s then %s", base, again)
	}
	for _, c := range []struct {
		what string
		key  string
	}{
		{"version", Key("3.22.2", "linux-x64", map[string]string{Package: "sha512-a"}, 20)},
		{"platform", Key("3.22.1", "linux-arm64", map[string]string{Package: "sha512-a"}, 20)},
		{"integrity", Key("3.22.1", "linux-x64", map[string]string{Package: "sha512-b"}, 20)},
		{"platform integrity", Key("3.22.1", "linux-x64", map[string]string{Package: "sha512-a", "@node-llama-cpp/linux-x64": "sha512-c"}, 20)},
		{"no integrity", Key("3.22.1", "linux-x64", nil, 20)},
		{"node major", Key("3.22.1", "linux-x64", map[string]string{Package: "sha512-a"}, 22)},
	} {
		if c.key == base {
			t.Errorf("Key ignores the %s: both %s", c.what, base)
		}
	}
	// Integrities of packages other than the two do not change the key.
	if k := Key("3.22.1", "linux-x64", map[string]string{Package: "sha512-a", "lodash": "sha512-z"}, 20); k != base {
		t.Errorf("Key depends on an unrelated package's integrity")
	}
}

func TestInstall_FreshThenCached(t *testing.T) {
	f := newFakeTools(t, "v20.20.2")
	cache := t.TempDir()
	var lines []string
	o := f.opts(cache)
	o.Progress = func(s string) { lines = append(lines, s) }
	inst, err := Install(context.Background(), o)
	if err != nil {
		t.Fatalf("Install: %v", err)
	}
	wantDir := filepath.Join(cache, "engines", "node-llama-cpp", Key("3.22.1", "linux-x64", nil, 20))
	if inst.Dir != wantDir {
		t.Errorf("Dir: got %s, want %s", inst.Dir, wantDir)
	}
	if inst.NodeVersion != "v20.20.2" || inst.Cached {
		t.Errorf("got NodeVersion %q Cached %v, want v20.20.2 false", inst.NodeVersion, inst.Cached)
	}
	for _, p := range []string{Package, "@node-llama-cpp/linux-x64"} {
		if got := inst.Packages[p]; got.Version != "3.22.1" || got.Integrity != "sha512-good-"+p {
			t.Errorf("Packages[%s]: got %+v, want 3.22.1 sha512-good-%s", p, got, p)
		}
	}
	if b, err := os.ReadFile(inst.Runner); err != nil || string(b) != string(runnerJS) {
		t.Errorf("runner not written to %s (err %v)", inst.Runner, err)
	}
	if _, err := os.Stat(filepath.Join(inst.Dir, MarkerFile)); err != nil {
		t.Errorf("no completion marker: %v", err)
	}
	if n := f.npmCalls(t); n != 1 {
		t.Errorf("npm ran %d times, want 1", n)
	}
	if len(lines) == 0 {
		t.Errorf("no progress lines")
	}
	leftovers, _ := filepath.Glob(filepath.Join(cache, "engines", "node-llama-cpp", ".tmp-*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary directories left behind: %v", leftovers)
	}

	again, err := Install(context.Background(), f.opts(cache))
	if err != nil {
		t.Fatalf("second Install: %v", err)
	}
	if !again.Cached || again.Dir != inst.Dir || f.npmCalls(t) != 1 {
		t.Errorf("second Install: got Cached %v Dir %s npm calls %d, want true %s 1", again.Cached, again.Dir, f.npmCalls(t), inst.Dir)
	}
	if again.Packages[Package].Integrity != "sha512-good-node-llama-cpp" {
		t.Errorf("cached install lost its integrities: %+v", again.Packages)
	}
}

// The native files a run loads (the addon, the libraries beside it) are
// hashed at install time; a cached install whose addon changed, or that
// gained a library npm did not install, is refused naming the file.
func TestInstall_nativeChanged(t *testing.T) {
	f := newFakeTools(t, "v20.20.2")
	cache := t.TempDir()
	inst, err := Install(context.Background(), f.opts(cache))
	if err != nil {
		t.Fatal(err)
	}
	m, err := readMarker(inst.Dir)
	if err != nil || len(m.Native) != 1 {
		t.Fatalf("marker: %+v, %v; want the addon's hash", m, err)
	}
	addon := filepath.Join(inst.Dir, "node_modules", "@node-llama-cpp", "linux-x64", "bins", "x", "llama-addon.node")
	good, _ := os.ReadFile(addon)
	os.WriteFile(addon, append(good, 'x'), 0o755)
	_, err = Install(context.Background(), f.opts(cache))
	if !errors.Is(err, ErrNativeChanged) || !strings.Contains(err.Error(), addon+": sha256 ") {
		t.Errorf("changed addon: got %v, want ErrNativeChanged naming %s", err, addon)
	}
	os.WriteFile(addon, good, 0o755)
	if _, err := Install(context.Background(), f.opts(cache)); err != nil {
		t.Errorf("the addon restored: %v", err)
	}
	extra := filepath.Join(filepath.Dir(addon), "libggml-extra.so")
	os.WriteFile(extra, []byte("lib"), 0o755)
	_, err = Install(context.Background(), f.opts(cache))
	if !errors.Is(err, ErrNativeChanged) || !strings.Contains(err.Error(), extra+": npm did not install it") {
		t.Errorf("an added library: got %v, want ErrNativeChanged naming %s", err, extra)
	}
	if n := f.npmCalls(t); n != 1 {
		t.Errorf("npm ran %d times, want 1: a changed install is refused, not replaced", n)
	}
}

// Installs of the same version at the same moment (two Slurm jobs on one
// node) all succeed with the one entry: whichever renames first wins, and
// the others find it complete, never without its marker.
func TestInstall_Concurrent(t *testing.T) {
	f := newFakeTools(t, "v20.20.2")
	cache := t.TempDir()
	const n = 8
	errs := make([]error, n)
	dirs := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inst, err := Install(context.Background(), f.opts(cache))
			errs[i] = err
			if inst != nil {
				dirs[i] = inst.Dir
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("install %d: %v", i, err)
		} else if dirs[i] != dirs[0] {
			t.Errorf("install %d in %s, install 0 in %s", i, dirs[i], dirs[0])
		}
	}
	if _, err := readMarker(dirs[0]); err != nil {
		t.Errorf("the entry has no marker: %v", err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(cache, "engines", "node-llama-cpp", ".tmp-*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary directories left behind: %v", leftovers)
	}
}

func TestInstall_IncompleteEntries(t *testing.T) {
	cases := []struct {
		name    string
		damage  func(t *testing.T, dir string)
		warning string // "" when the entry is replaced silently
	}{
		{"half-install without marker", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, MarkerFile)); err != nil {
				t.Fatal(err)
			}
			// and a file npm never finished
			os.RemoveAll(filepath.Join(dir, "node_modules", "@node-llama-cpp"))
		}, ""},
		{"marker but addon missing", func(t *testing.T, dir string) {
			if err := os.RemoveAll(filepath.Join(dir, "node_modules", "@node-llama-cpp", "linux-x64", "bins")); err != nil {
				t.Fatal(err)
			}
		}, "native addon"},
		{"marker but node-llama-cpp missing", func(t *testing.T, dir string) {
			if err := os.RemoveAll(filepath.Join(dir, "node_modules", "node-llama-cpp")); err != nil {
				t.Fatal(err)
			}
		}, "node_modules/node-llama-cpp/package.json is missing"},
		{"corrupted marker", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, MarkerFile), []byte("{\"vers"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "unreadable marker"},
		{"wrong version on disk", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "node_modules", "node-llama-cpp", "package.json")
			if err := os.WriteFile(p, []byte(`{"version":"3.0.0"}`), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "is not version 3.22.1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeTools(t, "v20.20.2")
			cache := t.TempDir()
			inst, err := Install(context.Background(), f.opts(cache))
			if err != nil {
				t.Fatal(err)
			}
			c.damage(t, inst.Dir)
			again, err := Install(context.Background(), f.opts(cache))
			if err != nil {
				t.Fatalf("Install over a damaged entry: %v", err)
			}
			if again.Cached || f.npmCalls(t) != 2 {
				t.Errorf("got Cached %v after %d npm calls, want a reinstall (false, 2)", again.Cached, f.npmCalls(t))
			}
			if problem := checkFiles(again.Dir, "3.22.1", "linux-x64"); problem != "" {
				t.Errorf("reinstalled entry is incomplete: %s", problem)
			}
			if _, err := readMarker(again.Dir); err != nil {
				t.Errorf("reinstalled entry has no valid marker: %v", err)
			}
			switch {
			case c.warning == "" && len(again.Warnings) != 0:
				t.Errorf("got warnings %q, want none", again.Warnings)
			case c.warning != "" && (len(again.Warnings) != 1 || !strings.Contains(again.Warnings[0], c.warning)):
				t.Errorf("got warnings %q, want one containing %q", again.Warnings, c.warning)
			}
		})
	}
}

func TestInstall_StaleRunnerIsRewritten(t *testing.T) {
	f := newFakeTools(t, "v20.20.2")
	cache := t.TempDir()
	inst, err := Install(context.Background(), f.opts(cache))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(inst.Runner, []byte("// an older runner\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := Install(context.Background(), f.opts(cache))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(again.Runner); string(b) != string(runnerJS) || !again.Cached {
		t.Errorf("got Cached %v and a runner of %d bytes, want the cached entry with this rigor's runner", again.Cached, len(b))
	}
}

func TestInstall_Errors(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "npm", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	cases := []struct {
		name    string
		node    string // node --version output
		mode    string
		npmOut  string
		setup   func(o *InstallOptions, f *fakeTools)
		want    error
		wantMsg string
	}{
		{name: "registry refused", mode: "unreachable", npmOut: read("refused.txt"), want: ErrRegistryUnreachable,
			wantMsg: "installing node-llama-cpp@3.22.1: the npm registry is unreachable (ECONNREFUSED)"},
		{name: "registry host unknown", mode: "unreachable", npmOut: read("notfound.txt"), want: ErrRegistryUnreachable,
			wantMsg: "installing node-llama-cpp@3.22.1: the npm registry is unreachable (ENOTFOUND)"},
		{name: "no such version", mode: "notarget", npmOut: read("etarget.txt"), want: ErrUnknownVersion,
			wantMsg: "installing node-llama-cpp: node-llama-cpp has no version 3.22.1"},
		{name: "no such platform", mode: "e404", npmOut: read("e404.txt"), want: ErrUnknownVersion,
			wantMsg: `installing node-llama-cpp: there is no platform package @node-llama-cpp/linux-x99@3.22.1 (platform "linux-x64")`},
		{name: "npm fails otherwise", mode: "crash", want: nil, wantMsg: "installing node-llama-cpp@3.22.1: npm install failed (exit status 7): npm error something odd"},
		{name: "tampered package", mode: "tampered", want: ErrIntegrityMismatch, setup: func(o *InstallOptions, f *fakeTools) {
			o.Integrity = map[string]string{Package: "sha512-good-node-llama-cpp"}
		}, wantMsg: "installing node-llama-cpp: integrity mismatch: node-llama-cpp@3.22.1: got sha512-evil-node-llama-cpp, the lock pins sha512-good-node-llama-cpp"},
		{name: "npm installs no addon", mode: "noaddon", wantMsg: "installing node-llama-cpp: npm finished but the native addon (node_modules/@node-llama-cpp/linux-x64/bins/*/*.node) is missing"},
		{name: "node too old", node: "v16.20.0", want: ErrNodeTooOld,
			wantMsg: "installing node-llama-cpp: node v16.20.0 is too old (node-llama-cpp needs 18 or newer)"},
		{name: "no node", want: ErrNoNode, setup: func(o *InstallOptions, f *fakeTools) {
			o.Node = ""
			t.Setenv("PATH", t.TempDir())
		}, wantMsg: "installing node-llama-cpp: node is not on the PATH"},
		{name: "no npm", want: ErrNoNPM, setup: func(o *InstallOptions, f *fakeTools) {
			o.NPM = ""
			t.Setenv("PATH", t.TempDir())
		}, wantMsg: "installing node-llama-cpp: npm is not on the PATH"},
		{name: "inexact version", want: ErrUnknownVersion, setup: func(o *InstallOptions, f *fakeTools) {
			o.Version = "^3.22"
		}, wantMsg: `installing node-llama-cpp: version "^3.22" is not an exact version`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			node := c.node
			if node == "" {
				node = "v20.20.2"
			}
			f := newFakeTools(t, node)
			if c.mode != "" {
				t.Setenv("FAKE_NPM_MODE", c.mode)
			}
			out := filepath.Join(f.dir, "npm-out")
			if err := os.WriteFile(out, []byte(c.npmOut), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Setenv("FAKE_NPM_OUT", out)
			cache := t.TempDir()
			o := f.opts(cache)
			if c.setup != nil {
				c.setup(&o, f)
			}
			inst, err := Install(context.Background(), o)
			if err == nil {
				t.Fatalf("Install: got %s, want error %q", inst.Dir, c.wantMsg)
			}
			if err.Error() != c.wantMsg {
				t.Errorf("error:\ngot  %s\nwant %s", err, c.wantMsg)
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("error %v is not %v", err, c.want)
			}
			var ie *InstallError
			if c.want != nil && (!errors.As(err, &ie) || ie.Advice == "") {
				t.Errorf("error %v carries no hint", err)
			}
			// Nothing half-installed is left looking valid.
			entries, _ := os.ReadDir(filepath.Join(cache, "engines", "node-llama-cpp"))
			for _, e := range entries {
				t.Errorf("cache entry left behind: %s", e.Name())
			}
		})
	}
}

func TestNPMError_HintsNamePlatforms(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "npm", "e404.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var ie *InstallError
	if err := npmError(errors.New("exit status 1"), b, "3.22.1", "linux-x99"); !errors.As(err, &ie) || !strings.Contains(ie.Advice, "linux-x64") {
		t.Errorf("npmError(e404): got %v (hint %q), want a hint listing the platforms", err, ie.Advice)
	}
}

func TestDefaultPlatform(t *testing.T) {
	p := DefaultPlatform()
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" && p != "linux-x64" {
		t.Errorf("DefaultPlatform on linux/amd64: got %q, want linux-x64", p)
	}
	if !strings.Contains(p, "-") {
		t.Errorf("DefaultPlatform: got %q, want os-arch", p)
	}
}

package lock

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rigorbench/rigor/internal/spec"
)

// Issue 26: three experiments that share one npm pin, the npm registry
// unreachable (the real npm client, behind a wrapper that logs each
// call). npm is asked the range once, not once per experiment, and not
// again about the platform package: the same registry would only fail
// again. Each experiment's input is in Unasked, with what failed, the
// same cause for all three. Before, the platform package was asked too
// (two npm calls) and the failures were errors outside the result.
func TestCheckOnline_npmUnreachable(t *testing.T) {
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed")
	}
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls.log")
	wrapper := filepath.Join(dir, "npm")
	script := "#!/bin/sh\necho \"$*\" >> '" + calls + "'\nexec '" + npm + "' \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	t.Setenv("npm_config_registry", "http://"+closed+"/")
	t.Setenv("npm_config_fetch_retries", "0")
	t.Setenv("npm_config_cache", t.TempDir())

	root := t.TempDir()
	set := &spec.Set{Root: root}
	f := &File{Version: Version, Rigor: "test", Experiments: map[string]*Entry{}}
	ids := []string{"q/a", "q/b", "q/c"}
	for _, id := range ids {
		x := experiment(id, spec.Spec{Model: spec.Model{Name: "m"},
			Engine: spec.Engine{Family: spec.FamilyNodeLlama, Source: spec.Source{NPM: "3.x"}}})
		set.Experiments = append(set.Experiments, x)
		f.Experiments[id] = &Entry{SpecDigest: "sha256:" + strings.Repeat("a", 64),
			Engine: EngineLock{Family: spec.FamilyNodeLlama, Requested: EngineRequest{NPM: "3.x"},
				NPM: &NPMLock{Package: NodeLlamaPackage, Version: "3.22.1", Integrity: "sha512-x",
					Platform: &NPMLock{Package: "@node-llama-cpp/linux-x64", Version: "3.22.1", Integrity: "sha512-y"}}},
			Model: ModelLock{Requested: ModelRequest{Path: "m"}}}
	}
	if err := Write(root, "q", f); err != nil {
		t.Fatal(err)
	}
	r := NewResolver(Options{Root: root, Cache: t.TempDir(), NPM: wrapper, Platform: "linux-x64"})
	res := r.CheckOnline(context.Background(), set)
	if len(res.Errs) != 0 || len(res.Moved) != 0 || len(res.Gone) != 0 {
		t.Fatalf("errs %v, moved %v, gone %v: want only unasked inputs", res.Errs, res.Moved, res.Gone)
	}
	b, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Split(strings.TrimSpace(string(b)), "\n"); len(got) != 1 || !strings.HasPrefix(got[0], "view node-llama-cpp@3.x ") {
		t.Errorf("npm was called %d times: %q, want once, for node-llama-cpp@3.x", len(got), got)
	}
	if len(res.Unasked) != len(ids) {
		t.Fatalf("unasked %+v, want one per experiment", res.Unasked)
	}
	for i, u := range res.Unasked {
		var ne *NPMError
		if u.ID != ids[i] || u.Input != DriftNPM || u.Source != NodeLlamaPackage || u.Ref != "3.x" || u.Locked != "3.22.1" ||
			!errors.As(u.Err, &ne) || !strings.Contains(u.Why, "node-llama-cpp@3.x") || u.Why != ne.Error() {
			t.Errorf("unasked[%d] = %+v", i, u)
		}
		if u.Cause() != res.Unasked[0].Cause() || !strings.HasPrefix(u.Cause(), "engine: npm: node-llama-cpp@3.x: ") {
			t.Errorf("cause of %s: %q, want the same for all, as engine: npm: …", u.ID, u.Cause())
		}
		if !strings.Contains(u.Hint(), "npm config get registry") {
			t.Errorf("hint of %s: %q", u.ID, u.Hint())
		}
	}
}

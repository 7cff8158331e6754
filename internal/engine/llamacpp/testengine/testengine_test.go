package testengine

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestWrite_commitsAndPatches(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "engine")
	pdir := filepath.Join(t.TempDir(), "patches")
	commits, err := Write(dir, Options{PatchDir: pdir})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{V1, V2, Broken, WrongCommit} {
		if len(commits[name]) != 40 {
			t.Errorf("commit %s = %q, want a 40-hex sha", name, commits[name])
		}
	}
	// Fixed identity and dates: a second tree has the same commits.
	again, err := Write(filepath.Join(t.TempDir(), "engine"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if again[V2] != commits[V2] {
		t.Errorf("v2 differs between two writes: got %s, want %s", again[V2], commits[V2])
	}
	ik, err := Write(filepath.Join(t.TempDir(), "engine"), Options{IK: true})
	if err != nil {
		t.Fatal(err)
	}
	if ik[V1] == commits[V1] {
		t.Errorf("ik and mainline trees share commit %s", ik[V1])
	}
	// cpu-info.patch applies at v1 and v2; threads-v1.patch only at v1.
	for _, c := range []struct {
		patch, ref string
		ok         bool
	}{
		{"cpu-info.patch", V1, true}, {"cpu-info.patch", V2, true},
		{"threads-v1.patch", V1, true}, {"threads-v1.patch", V2, false},
	} {
		run(t, dir, "checkout", "--quiet", c.ref)
		cmd := exec.Command("git", "apply", "--check", filepath.Join(pdir, c.patch))
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if (err == nil) != c.ok {
			t.Errorf("git apply --check %s at %s: err %v (%s), want ok=%v", c.patch, c.ref, err, out, c.ok)
		}
	}
}

func TestWrite_notEmpty(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "x"), nil, 0o644)
	if _, err := Write(dir, Options{}); err == nil || !strings.Contains(err.Error(), "not an empty directory") {
		t.Errorf("Write into a non-empty directory: got %v, want a not-empty error", err)
	}
}

func run(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// Package gittest makes git repositories for tests, with the git CLI and
// a fixed identity.
package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Git runs the git command line tool in dir, with a fixed identity and no
// system or user configuration, and returns its output.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Need skips the test when the git CLI is not installed.
func Need(t testing.TB) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git CLI not installed")
	}
}

// NewRepo makes a module directory that is a git repository with one
// commit (a README and cue.mod), as a user's experiments repository.
func NewRepo(t testing.TB) string {
	t.Helper()
	Need(t)
	dir := t.TempDir()
	Git(t, dir, "init", "-q", "-b", "main")
	WriteFile(t, filepath.Join(dir, "README.md"), "experiments\n")
	WriteFile(t, filepath.Join(dir, "cue.mod", "module.cue"), "module: \"example.com/x@v0\"\n")
	Git(t, dir, "add", ".")
	Git(t, dir, "commit", "-q", "-m", "init")
	return dir
}

// WriteFile writes data to path, making its directory.
func WriteFile(t testing.TB, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

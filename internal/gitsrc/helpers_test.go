package gitsrc

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// testGitEnv is gitEnv with a fixed identity and clock, so that the commits
// a test makes have the same shas on every run.
func testGitEnv() []string {
	return append(gitEnv(),
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
		"GIT_AUTHOR_DATE=2026-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z",
	)
}

// gitT runs git in dir and returns its trimmed stdout, failing the test on
// error.
func gitT(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return gitIn(t, dir, nil, args...)
}

func gitIn(t testing.TB, dir string, stdin []byte, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = testGitEnv()
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, errb.String())
	}
	return strings.TrimSpace(out.String())
}

// writeFile writes content to dir/name, making directories.
func writeFile(t testing.TB, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// commitAll commits every change in dir and returns the commit's sha.
func commitAll(t testing.TB, dir, msg string) string {
	t.Helper()
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "--quiet", "--allow-empty", "-m", msg)
	return gitT(t, dir, "rev-parse", "HEAD")
}

// initRepo makes an empty repository with branch main in a new directory.
func initRepo(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "upstream")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "init", "--quiet", "--initial-branch=main", ".")
	return dir
}

// lines returns "1\n2\n…\nn\n" with line i replaced by repl[i].
func lines(n int, repl map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if r, ok := repl[i]; ok {
			b.WriteString(r)
		} else {
			fmt.Fprintf(&b, "line %d", i)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// fastImportRepo makes a repository whose main branch has n commits, each
// changing one file, with git fast-import (thousands of commits per second).
// Content and dates are fixed, so the shas are the same on every run.
func fastImportRepo(t testing.TB, n int) string {
	t.Helper()
	dir := initRepo(t)
	var s bytes.Buffer
	for i := 1; i <= n; i++ {
		msg := fmt.Sprintf("commit %d", i)
		content := fmt.Sprintf("content %d\n", i)
		fmt.Fprintf(&s, "commit refs/heads/main\nmark :%d\ncommitter Test <test@example.com> %d +0000\ndata %d\n%s\n",
			i, 1767225600+i, len(msg), msg)
		if i > 1 {
			fmt.Fprintf(&s, "from :%d\n", i-1)
		}
		fmt.Fprintf(&s, "M 644 inline file.txt\ndata %d\n%s\n", len(content), content)
	}
	gitIn(t, dir, s.Bytes(), "fast-import", "--quiet")
	return dir
}

// testOptions are Options for a fresh cache in a temporary directory.
func testOptions(t testing.TB) Options {
	return Options{Cache: filepath.Join(t.TempDir(), "cache")}
}

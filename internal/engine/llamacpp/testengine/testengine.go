// Package testengine writes a small engine source tree shaped like
// llama.cpp, for tests of engine builds and runs: a git repository whose
// CMakeLists.txt builds two C programs, llama-bench and rpc-server, and
// generates common/build-info.cpp from `git rev-parse --short HEAD` at
// configure time, as llama.cpp's cmake does.
//
// llama-bench parses llama-bench's flags (-m, -p, -n, -pg, -r, -ngl, -b,
// -ub, -t, -ctk, -ctv, -fa, -nkvo, -rpc, -o json|jsonl|md; ik_llama.cpp's
// -gp), rejects unknown ones as the real one does (usage on stdout,
// "error: invalid parameter for argument: X" on stderr, exit 1), checks
// the model file (missing: a lone "[" on stdout and "failed to load
// model"), connects to each -rpc endpoint, and prints one row per test and
// per combination of comma-list flags, in the JSON shape of llama.cpp or
// ik_llama.cpp, with timings measured on real CPU work. Environment
// switches for failure tests: RIGOR_TESTENGINE_CRASH_AFTER_ROWS=N (abort
// with "double free or corruption" after N rows), RIGOR_TESTENGINE_SLEEP=S
// (sleep S seconds before the first row, outside every timing),
// RIGOR_TESTENGINE_SLOWER_PCT=P (every token P% more work: a real slowdown
// for power tests), RIGOR_TESTENGINE_FAIL_CTX=1
// (context creation fails), RIGOR_TESTENGINE_TERM_AFTER_ROWS=N (SIGTERM
// to itself after N rows, as if someone else killed it).
//
// llama-perplexity parses -m, -f, -c, --chunks, -t, -ngl, -ctk, -ctv,
// --kl-divergence-base and --kl-divergence, computes next-token
// distributions over a 259-token byte vocabulary from the context, with
// noise seeded from the model file's bytes and the KV cache types, and
// prints the statistics as upstream's tools/perplexity does (the base run's
// "[1]…," and "Final estimate: PPL = … +/- …", the --kl-divergence table
// and its "====== … statistics ======" blocks), computed for real.
//
// rpc-server parses -H/-p (and ik_llama.cpp's -h host), prints the startup
// banner, listens and serves until killed;
// RIGOR_TESTENGINE_RPC_NEVER_READY=1 makes it never listen, and
// RIGOR_TESTENGINE_RPC_ABORT=1 makes it abort (SIGABRT, a failed
// GGML_ASSERT) when a client connects; llama-bench, with the same switch,
// waits on its connection and aborts after the worker, as llama-bench
// b4747 does.
//
// src/speed.h is the speed knob: a commit that defines TESTENGINE_TG_NS
// there makes llama-bench report simulated timings (that many nanoseconds
// per generated token, with TESTENGINE_NOISE_PPM of noise) instead of
// measuring work, so that a test's figures come from the commit, not from
// the load of the machine (rigor bisect's testscripts).
//
// At configure time, TESTENGINE_BUILD_SLEEP=S in the environment makes the
// build of llama-bench take S seconds more, for tests that interrupt a
// build.
package testengine

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

//go:embed tree
var tree embed.FS

// Options configure [Write].
type Options struct {
	// IK selects the ik_llama.cpp flavour (flags, JSON fields, rpc-server
	// quirks) instead of mainline llama.cpp.
	IK bool
	// PatchDir, when set, receives two patches as files:
	// cpu-info.patch, which applies at every commit and makes llama-bench
	// report cpu_info "Patched CPU", and threads-v1.patch, which applies at
	// v1 but no longer at v2.
	PatchDir string
}

// Refs are the names [Write] returns commits for, each also a tag.
const (
	// V1 is the first commit.
	V1 = "v1"
	// V2 follows V1 and changes a line that threads-v1.patch touches;
	// branch main points at it.
	V2 = "v2"
	// Broken is V2 with a syntax error in llama-bench.c: its build fails.
	Broken = "broken"
	// WrongCommit is V2 with build-info reporting commit 0badc0d, so that
	// its binary's build commit disagrees with the commit built.
	WrongCommit = "wrong-commit"
)

// Write writes the source tree into dir (created if needed; it must be
// empty) as a git repository with branch main and the tags [V1], [V2],
// [Broken] and [WrongCommit], and returns the full commit of each. Commit
// dates and authors are fixed, so the commits are the same on every run
// with the same options.
func Write(dir string, opts Options) (map[string]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("writing test engine: %w", err)
	}
	if des, err := os.ReadDir(dir); err != nil || len(des) > 0 {
		return nil, fmt.Errorf("writing test engine: %s is not an empty directory", dir)
	}
	ik := "OFF"
	if opts.IK {
		ik = "ON"
	}
	files := map[string]string{}
	err := fs.WalkDir(tree, "tree", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := tree.ReadFile(p)
		files[strings.TrimPrefix(p, "tree/")] = string(b)
		return err
	})
	if err != nil {
		return nil, err
	}
	files["CMakeLists.txt"] = strings.ReplaceAll(files["CMakeLists.txt"], "@IK@", ik)
	cmakeV1 := files["CMakeLists.txt"]
	files["CMakeLists.txt"] = strings.ReplaceAll(cmakeV1, "@COMMIT_OVERRIDE@\n", "")
	g := gitRunner{dir: dir}
	g.run("init", "--quiet", "--initial-branch=main", ".")
	commits := map[string]string{}
	commit := func(name, msg string) {
		for p, c := range files {
			g.write(p, c)
		}
		g.run("add", "-A")
		g.run("commit", "--quiet", "-m", msg)
		g.run("tag", name)
		commits[name] = g.run("rev-parse", "HEAD")
	}
	commit(V1, "test engine v1")
	bench := files["src/llama-bench.c"]
	const threadsLine = "-t, --threads <n>                   (default: 2)"
	if !strings.Contains(bench, threadsLine) {
		return nil, fmt.Errorf("writing test engine: llama-bench.c lacks %q", threadsLine)
	}
	v1Bench := bench
	files["src/llama-bench.c"] = strings.Replace(bench, threadsLine, "-t, --threads <n>                   (default: 4)", 1)
	commit(V2, "test engine v2: default threads in usage")
	v2Bench := files["src/llama-bench.c"]
	files["src/llama-bench.c"] = strings.Replace(v2Bench, "int main(int argc, char **argv) {", "int main(int argc, char **argv) { this is not C", 1)
	commit(Broken, "test engine: a syntax error")
	files["src/llama-bench.c"] = v2Bench
	files["CMakeLists.txt"] = strings.ReplaceAll(cmakeV1, "@COMMIT_OVERRIDE@", `set(BUILD_COMMIT "0badc0d")`)
	commit(WrongCommit, "test engine: build-info reports another commit")
	g.run("checkout", "--quiet", "main")
	g.run("reset", "--quiet", "--hard", commits[V2])
	if opts.PatchDir != "" && g.err == nil {
		patches := map[string][2]string{
			"cpu-info.patch":   {v1Bench, strings.ReplaceAll(v1Bench, `\"cpu_info\": \"Test CPU\"`, `\"cpu_info\": \"Patched CPU\"`)},
			"threads-v1.patch": {v1Bench, strings.Replace(v1Bench, threadsLine, "-t, --threads <n>                   (default: 8)", 1)},
		}
		if err := os.MkdirAll(opts.PatchDir, 0o755); err != nil {
			return nil, fmt.Errorf("writing test engine patches: %w", err)
		}
		for name, ab := range patches {
			p, err := diff("src/llama-bench.c", ab[0], ab[1])
			if err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(opts.PatchDir, name), p, 0o644); err != nil {
				return nil, fmt.Errorf("writing test engine patches: %w", err)
			}
		}
	}
	if g.err != nil {
		return nil, g.err
	}
	return commits, nil
}

// gitRunner runs git commands in dir with a fixed identity and clock and
// keeps the first error.
type gitRunner struct {
	dir string
	err error
}

func gitEnv() []string {
	env := []string{
		"GIT_AUTHOR_NAME=Test Engine", "GIT_AUTHOR_EMAIL=testengine@example.com",
		"GIT_COMMITTER_NAME=Test Engine", "GIT_COMMITTER_EMAIL=testengine@example.com",
		"GIT_AUTHOR_DATE=2026-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	return env
}

func (g *gitRunner) run(args ...string) string {
	if g.err != nil {
		return ""
	}
	cmd := exec.Command("git", args...)
	cmd.Dir = g.dir
	cmd.Env = gitEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		g.err = fmt.Errorf("writing test engine: git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String())
}

func (g *gitRunner) write(name, content string) {
	if g.err != nil {
		return
	}
	p := filepath.Join(g.dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		g.err = err
		return
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		g.err = err
	}
}

// diff returns a git-style patch of file from a to b, made by git diff
// --no-index in a scratch directory.
func diff(file, a, b string) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "testengine-diff-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	for name, c := range map[string]string{"a": a, "b": b} {
		if err := os.MkdirAll(filepath.Join(tmp, name, filepath.Dir(file)), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(tmp, name, file), []byte(c), 0o644); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command("git", "diff", "--no-index", "--no-prefix", "a/"+file, "b/"+file)
	cmd.Dir = tmp
	cmd.Env = gitEnv()
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
		err = nil // differences found
	}
	if err != nil {
		return nil, fmt.Errorf("diffing %s: %w", file, err)
	}
	return out, nil
}

// Cmd is the testscript command
//
//	testengine DIR [--ik] [--patches PDIR]
//
// that writes the source tree into DIR ([Write]) and sets TESTENGINE_V1,
// TESTENGINE_V2, TESTENGINE_BROKEN and TESTENGINE_WRONG_COMMIT to the
// commits. Register it in testscript.Params.Cmds.
func Cmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! testengine")
	}
	var opts Options
	var dir string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--ik":
			opts.IK = true
		case a == "--patches" && i+1 < len(args):
			i++
			opts.PatchDir = ts.MkAbs(args[i])
		case dir == "" && !strings.HasPrefix(a, "-"):
			dir = ts.MkAbs(a)
		default:
			ts.Fatalf("usage: testengine DIR [--ik] [--patches PDIR]")
		}
	}
	if dir == "" {
		ts.Fatalf("usage: testengine DIR [--ik] [--patches PDIR]")
	}
	commits, err := Write(dir, opts)
	ts.Check(err)
	for name, c := range commits {
		ts.Setenv("TESTENGINE_"+strings.ToUpper(strings.ReplaceAll(name, "-", "_")), c)
	}
}

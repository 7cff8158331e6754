package gitsrc

// The git CLI makes scratch checkouts and applies patches: `git apply` is the
// reference implementation of strict patch application, and its behaviour is
// what engine developers see on their own machines. Every call runs in a
// controlled environment: no user or system config (which could set
// core.autocrlf or apply.whitespace and change the tree or the verdict), no
// inherited GIT_DIR and friends, and the C locale so that error messages can
// be parsed.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// gitEnv is the environment of every git command.
func gitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GIT_") || strings.HasPrefix(k, "LC_") || k == "LANG" || k == "LANGUAGE" {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
	)
}

// gitError is a git command that exited with an error.
type gitError struct {
	args   []string
	stderr string
	err    error
}

func (e *gitError) Error() string {
	msg := strings.TrimSpace(e.stderr)
	if msg == "" {
		msg = e.err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.args, " "), strings.ReplaceAll(msg, "\n", "; "))
}

func (e *gitError) Unwrap() error { return e.err }

// runGit runs git with args in dir, with stdin as its input, and returns its
// stderr. A failure is a *gitError carrying stderr.
func runGit(ctx context.Context, dir string, stdin io.Reader, args ...string) (string, error) {
	path, err := exec.LookPath("git")
	if err != nil {
		return "", fmt.Errorf("the git command is needed to check out sources and apply patches: %w", err)
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = dir
	cmd.Env = gitEnv()
	cmd.Stdin = stdin
	cmd.Stdout = io.Discard
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return stderr.String(), fmt.Errorf("git %s: %w", strings.Join(args, " "), ctx.Err())
		}
		return stderr.String(), &gitError{args: args, stderr: stderr.String(), err: err}
	}
	return stderr.String(), nil
}

// isGitFailure reports whether err is git exiting with an error status (as
// opposed to git missing or the context ending).
func isGitFailure(err error) bool {
	var ge *gitError
	var ee *exec.ExitError
	return errors.As(err, &ge) && errors.As(err, &ee)
}

// gitOutput runs git with args in dir and returns its stdout; a failure is
// a *gitError carrying stderr.
func gitOutput(ctx context.Context, dir string, args ...string) (string, error) {
	return gitOutputEnv(ctx, dir, nil, args...)
}

// gitOutputEnv is gitOutput with env added to git's environment.
func gitOutputEnv(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	path, err := exec.LookPath("git")
	if err != nil {
		return "", fmt.Errorf("the git command is needed to read git bundles: %w", err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = dir
	cmd.Env = append(gitEnv(), env...)
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), ctx.Err())
		}
		return "", &gitError{args: args, stderr: stderr.String(), err: err}
	}
	return stdout.String(), nil
}

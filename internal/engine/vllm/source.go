package vllm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rigorbench/rigor/internal/logtail"
	"github.com/rigorbench/rigor/internal/spec"
)

// EngineFacts is what rigor records about an installed vLLM.
type EngineFacts struct {
	// Kind is the source kind: "path" (a vllm executable) or "python" (an
	// interpreter whose environment has vllm installed).
	Kind string `json:"kind"`
	// Executable is the resolved path of the vllm executable or the
	// Python interpreter.
	Executable string `json:"executable"`
	// ExecutableSHA256 is the sha256 of that file.
	ExecutableSHA256 string `json:"executableSha256,omitempty"`
	// Version is the first line `vllm --version` prints.
	Version string `json:"version"`
	// Python is the interpreter whose packages were listed: the source's
	// python, or the one named by a vllm script's #! line.
	Python string `json:"python,omitempty"`
	// PackagesDigest is "sha256:" plus the sha256 of `python -m pip list
	// --format=freeze`, lines sorted, one per line; empty when no Python
	// was found. Packages counts the lines.
	PackagesDigest string `json:"packagesDigest,omitempty"`
	Packages       int    `json:"packages,omitempty"`
}

// Describe finds a source's vLLM and records its version and the digest
// of its environment's installed packages. A path source is an executable
// path or a command name looked up on PATH; a python source is an
// interpreter (or a virtual environment directory, whose bin/python is
// used) run as `python -m vllm.entrypoints.cli.main`.
func Describe(ctx context.Context, src spec.Source) (EngineFacts, error) {
	var f EngineFacts
	var versionCmd []string
	switch {
	case src.Python != "":
		py, err := pythonOf(src.Python)
		if err != nil {
			return f, err
		}
		f.Kind, f.Executable, f.Python = "python", py, py
		versionCmd = []string{py, "-m", "vllm.entrypoints.cli.main", "--version"}
	case src.Path != "":
		exe, err := exec.LookPath(src.Path)
		if err != nil {
			return f, fmt.Errorf("vllm source path %s: %w", src.Path, err)
		}
		if abs, err := filepath.Abs(exe); err == nil {
			exe = abs
		}
		f.Kind, f.Executable = "path", exe
		f.Python = scriptPython(exe)
		versionCmd = []string{exe, "--version"}
	default:
		return f, fmt.Errorf("vllm source: want path or python, got %q", src.Kind())
	}
	sum, err := fileSHA256(f.Executable)
	if err != nil {
		return f, err
	}
	f.ExecutableSHA256 = sum
	out, err := run(ctx, versionCmd...)
	if err != nil {
		return f, fmt.Errorf("%s: %w", strings.Join(versionCmd, " "), err)
	}
	f.Version = strings.TrimSpace(string(firstLine(bytes.TrimSpace(out))))
	if f.Version == "" {
		return f, fmt.Errorf("%s printed no version", strings.Join(versionCmd, " "))
	}
	if f.Python != "" {
		out, err := run(ctx, f.Python, "-m", "pip", "list", "--format=freeze")
		if err != nil {
			return f, fmt.Errorf("listing the packages of %s: %w", f.Python, err)
		}
		f.PackagesDigest, f.Packages = PackagesDigest(out)
	}
	return f, nil
}

// PackagesDigest returns "sha256:<hex>" of a `pip list --format=freeze`
// output with its lines trimmed, empty lines dropped and the rest sorted
// (one per line, each ending in a newline), and the number of lines.
func PackagesDigest(freeze []byte) (string, int) {
	var lines []string
	for _, l := range strings.Split(string(freeze), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	sort.Strings(lines)
	h := sha256.New()
	for _, l := range lines {
		io.WriteString(h, l+"\n")
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), len(lines)
}

// pythonOf resolves a python source: an interpreter path or name, or a
// virtual environment directory.
func pythonOf(p string) (string, error) {
	if st, err := os.Stat(p); err == nil && st.IsDir() {
		p = filepath.Join(p, "bin", "python")
	}
	exe, err := exec.LookPath(p)
	if err != nil {
		return "", fmt.Errorf("vllm source python %s: %w", p, err)
	}
	if abs, err := filepath.Abs(exe); err == nil {
		exe = abs
	}
	return exe, nil
}

// scriptPython returns the interpreter of a Python console script's #!
// line, "" for a binary or a script of another language.
func scriptPython(exe string) string {
	fh, err := os.Open(exe)
	if err != nil {
		return ""
	}
	defer fh.Close()
	b := make([]byte, 256)
	n, _ := io.ReadFull(fh, b)
	line := string(firstLine(b[:n]))
	if !strings.HasPrefix(line, "#!") {
		return ""
	}
	words := strings.Fields(strings.TrimPrefix(line, "#!"))
	if len(words) == 0 {
		return ""
	}
	if filepath.Base(words[0]) == "env" && len(words) > 1 {
		words = words[1:]
	}
	if !strings.HasPrefix(filepath.Base(words[0]), "python") {
		return ""
	}
	return words[0]
}

func fileSHA256(p string) (string, error) {
	fh, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	h := sha256.New()
	if _, err := io.Copy(h, fh); err != nil {
		return "", fmt.Errorf("hashing %s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func run(ctx context.Context, argv ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if msg := strings.TrimSpace(logtail.Lines(stderr.Bytes(), 1)); msg != "" {
			return out, fmt.Errorf("%w: %s", err, msg)
		}
		return out, err
	}
	return out, nil
}

// Step is one command of an install plan.
type Step struct {
	Argv []string          `json:"argv"`
	Env  map[string]string `json:"env,omitempty"`
	Dir  string            `json:"dir,omitempty"`
}

// TargetDevice maps a build backend to vLLM's VLLM_TARGET_DEVICE.
func TargetDevice(backend string) (string, error) {
	switch backend {
	case "", "cuda":
		return "cuda", nil
	case "hip":
		return "rocm", nil
	case "sycl":
		return "xpu", nil
	case "cpu":
		return "cpu", nil
	}
	return "", fmt.Errorf("build.backend %q: vLLM builds for cuda, hip (rocm), sycl (xpu) or cpu", backend)
}

// InstallPlan is the commands that install vLLM from a git checkout at a
// commit, with patches applied in order, into a virtual environment:
// create the venv, check out the commit, check then apply each patch, and
// pip install the tree with VLLM_TARGET_DEVICE from the build recipe and
// the recipe's env. srcDir is a clone of the repository, venv the target
// directory, python the interpreter that creates the venv. The plan is
// not executed here (this machine has no PyPI access to test it).
func InstallPlan(python, srcDir, venv, commit string, patches []string, build spec.Build) ([]Step, error) {
	if !hex40(commit) {
		return nil, fmt.Errorf("install plan: commit %q is not a full 40-hex sha; lock the experiment first", commit)
	}
	dev, err := TargetDevice(build.Backend)
	if err != nil {
		return nil, err
	}
	steps := []Step{
		{Argv: []string{python, "-m", "venv", venv}},
		{Argv: []string{"git", "-C", srcDir, "checkout", "--detach", commit}},
	}
	for _, p := range patches {
		steps = append(steps,
			Step{Argv: []string{"git", "-C", srcDir, "apply", "--check", p}},
			Step{Argv: []string{"git", "-C", srcDir, "apply", p}})
	}
	env := map[string]string{"VLLM_TARGET_DEVICE": dev}
	for k, v := range build.Env {
		env[k] = v
	}
	pip := filepath.Join(venv, "bin", "python")
	steps = append(steps, Step{Argv: []string{pip, "-m", "pip", "install", "--no-build-isolation", srcDir}, Env: env})
	return steps, nil
}

func hex40(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

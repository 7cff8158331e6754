package lock

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"strings"

	"github.com/rigorbench/rigor/internal/spec"
)

// NodeLlamaPackage is the npm package of the node-llama-cpp engine.
const NodeLlamaPackage = "node-llama-cpp"

var lookPath = exec.LookPath

func hashBytes(b []byte) (string, int64, error) {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), int64(len(b)), nil
}

// nodePlatform names node-llama-cpp's prebuilt-binary package suffix for
// a Go GOOS and GOARCH, e.g. "linux-x64".
func nodePlatform(goos, goarch string) string {
	os := map[string]string{"darwin": "mac", "windows": "win"}[goos]
	if os == "" {
		os = goos
	}
	arch := map[string]string{"amd64": "x64", "386": "x32", "arm": "armv7l"}[goarch]
	if arch == "" {
		arch = goarch
	}
	p := os + "-" + arch
	if p == "mac-arm64" {
		p += "-metal"
	}
	return p
}

// NPMError is a failed npm lookup.
type NPMError struct {
	// Package and Version are what was asked for.
	Package, Version string
	// Code is npm's error code (E404, ENOTFOUND, ENOTCACHED, …) or "".
	Code string
	// Msg says what went wrong.
	Msg string
	// Missing is set when npm itself is not installed.
	Missing bool
}

// Error names the package, the version and the cause.
func (e *NPMError) Error() string {
	if e.Missing {
		return fmt.Sprintf("npm is not installed: it is needed to resolve %s@%s", e.Package, e.Version)
	}
	return fmt.Sprintf("npm: %s@%s: %s", e.Package, e.Version, e.Msg)
}

// Hint tells the user what to do.
func (e *NPMError) Hint() string {
	switch {
	case e.Missing:
		return "install Node.js and npm (Debian: apt-get install npm), or put npm on PATH"
	case e.Code == "E404" || e.Code == "ETARGET":
		return fmt.Sprintf("list the published versions with 'npm view %s versions'", e.Package)
	case e.Code == "ENOTCACHED":
		return "run without --offline to ask the npm registry"
	case e.Code != "":
		return "check the network and npm's registry setting ('npm config get registry')"
	}
	return ""
}

// npmResolve pins the node-llama-cpp version of s and its platform
// package.
func (r *Resolver) npmResolve(ctx context.Context, s spec.Engine) (*NPMLock, error) {
	pkg := NodeLlamaPackage
	if s.Family != spec.FamilyNodeLlama {
		return nil, fmt.Errorf("an npm source is only supported for %s, not %s", spec.FamilyNodeLlama, s.Family)
	}
	main, err := r.npmView(ctx, pkg, s.Source.NPM)
	if err != nil {
		return nil, err
	}
	p, err := r.npmView(ctx, r.npmPlatform(s), main.Version)
	if err != nil {
		return nil, err
	}
	main.Platform = p
	return main, nil
}

// npmPlatform is the node-llama-cpp platform package of s on this
// platform, e.g. @node-llama-cpp/linux-x64-cuda.
func (r *Resolver) npmPlatform(s spec.Engine) string {
	plat := r.opts.Platform
	if b := s.Build.Backend; b == "cuda" || b == "vulkan" {
		plat += "-" + b
	}
	return "@node-llama-cpp/" + plat
}

// npmView runs `npm view pkg@ver version dist.integrity --json` once per
// package and version.
func (r *Resolver) npmView(ctx context.Context, pkg, ver string) (*NPMLock, error) {
	v, err := r.once("npm\x00"+pkg+"\x00"+ver, func() (any, error) {
		ctx, cancel := context.WithTimeout(ctx, r.opts.NPMTimeout)
		defer cancel()
		args := []string{"view", pkg + "@" + ver, "version", "dist.integrity", "--json"}
		if r.opts.Offline {
			args = append(args, "--offline")
		}
		cmd := exec.CommandContext(ctx, r.opts.NPM, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		runErr := cmd.Run()
		if errors.Is(runErr, exec.ErrNotFound) || errors.Is(runErr, fs.ErrNotExist) {
			return nil, &NPMError{Package: pkg, Version: ver, Missing: true}
		}
		if ctx.Err() != nil {
			return nil, &NPMError{Package: pkg, Version: ver, Code: "ETIMEDOUT", Msg: fmt.Sprintf("npm did not answer within %s", r.opts.NPMTimeout)}
		}
		return parseNPMView(pkg, ver, stdout.Bytes(), stderr.String(), runErr)
	})
	if err != nil {
		return nil, err
	}
	n := *v.(*NPMLock)
	return &n, nil
}

// parseNPMView reads the output of `npm view … version dist.integrity
// --json`: one object, a list of objects (a range matching several
// versions, in ascending order), or an error object.
func parseNPMView(pkg, ver string, out []byte, stderr string, runErr error) (*NPMLock, error) {
	type view struct {
		Version   string `json:"version"`
		Integrity string `json:"dist.integrity"`
		Error     *struct {
			Code    string `json:"code"`
			Summary string `json:"summary"`
		} `json:"error"`
	}
	out = bytes.TrimSpace(out)
	var views []view
	switch {
	case len(out) == 0:
	case out[0] == '[':
		if err := json.Unmarshal(out, &views); err != nil {
			return nil, &NPMError{Package: pkg, Version: ver, Msg: "unreadable output of npm view: " + err.Error()}
		}
	default:
		var v view
		if err := json.Unmarshal(out, &v); err != nil {
			return nil, &NPMError{Package: pkg, Version: ver, Msg: "unreadable output of npm view: " + err.Error()}
		}
		views = []view{v}
	}
	if len(views) == 1 && views[0].Error != nil {
		e := views[0].Error
		msg := e.Summary
		switch e.Code {
		case "E404", "ETARGET":
			msg = "no such version in the registry (" + e.Summary + ")"
		case "ENOTCACHED":
			msg = "not in npm's cache (offline)"
		case "ENOTFOUND", "ECONNREFUSED", "ETIMEDOUT", "EAI_AGAIN", "ECONNRESET":
			msg = "npm registry unreachable (" + e.Code + ": " + e.Summary + ")"
		}
		return nil, &NPMError{Package: pkg, Version: ver, Code: e.Code, Msg: msg}
	}
	if runErr != nil {
		msg := strings.TrimSpace(stderr)
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		return nil, &NPMError{Package: pkg, Version: ver, Msg: fmt.Sprintf("npm view failed (%v): %s", runErr, msg)}
	}
	if len(views) == 0 {
		return nil, &NPMError{Package: pkg, Version: ver, Code: "E404", Msg: "no published version matches"}
	}
	v := views[len(views)-1]
	if v.Version == "" || !strings.HasPrefix(v.Integrity, "sha") {
		return nil, &NPMError{Package: pkg, Version: ver, Msg: fmt.Sprintf("npm view gave no version and integrity: %s", out)}
	}
	return &NPMLock{Package: pkg, Version: v.Version, Integrity: v.Integrity}, nil
}

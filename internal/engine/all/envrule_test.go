package all

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// envAllowed are the places outside internal/cli and cmd that may read
// the process environment, each with why. Everything else takes its
// configuration as values, read once in internal/cli/config.go: a library
// that reads the environment cannot be configured or tested without
// changing the process, and its setting is invisible at the front door.
// Keys are "path/to/file.go os.Name".
var envAllowed = map[string]string{
	"internal/engine/nodellama/native.go os.Environ":               "the environment is passed through to the native addon's build process",
	"internal/engine/nodellama/native.go os.Getenv":                "CC and CXX: the build process inherits this environment, so the compiler they name is the one it uses",
	"internal/engine/nodellama/install.go os.Environ":              "the environment is passed through to npm",
	"internal/engine/nodellama/install.go os.Getenv":               "PATH, extended for the npm process with the node rigor installed",
	"internal/engine/llamacpp/build.go os.Environ":                 "the environment is passed through to cmake and the compiler",
	"internal/buildcache/toolchain.go os.Getenv":                   "CC and CXX: the build processes inherit this environment, so the build key records the compiler they use",
	"internal/gitrepo/sync.go os.Environ":                          "the environment is passed through to git, for the user's ssh config and credential helpers",
	"internal/gitsrc/gitcli.go os.Environ":                         "the environment is passed through to git (its GIT_* and locale variables removed)",
	"internal/engine/enginetest/enginetest.go os.Getenv":           "test support, not a library: CI=true turns a missing tool from a skip into a failure",
	"internal/engine/llamacpp/testengine/testengine.go os.Environ": "test support, not a library: the environment of the git that writes a test engine",
	"internal/gitrepo/gittest/gittest.go os.Environ":               "test support, not a library: the environment of the git CLI that makes test repositories",
	"internal/engine/vllm/standin/standin.go os.Getenv":            "the stand-in engine's own main: its front door, as cmd/ is rigor's",
}

// TestEnvRule: configuration comes in at the front door. No package but
// internal/cli and cmd (and tests) calls os.Getenv, os.LookupEnv,
// os.Environ or their syscall forms, except the places listed in
// envAllowed with a reason; an entry no longer needed fails too.
func TestEnvRule(t *testing.T) {
	root := moduleRoot(t)
	used := map[string]bool{}
	var bad []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch {
			case rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules"),
				rel == "internal/cli", rel == "cmd", rel == "testscripts":
				return fs.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		for _, call := range envCalls(t, p) {
			key := rel + " " + call.name
			if envAllowed[key] != "" {
				used[key] = true
				continue
			}
			bad = append(bad, rel+":"+strconv.Itoa(call.line)+": "+call.name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Errorf("%s reads the environment: read it once in internal/cli/config.go and pass the value (or allow it in envAllowed, with why)", b)
	}
	var stale []string
	for k := range envAllowed {
		if !used[k] {
			stale = append(stale, k)
		}
	}
	sort.Strings(stale)
	for _, k := range stale {
		t.Errorf("envAllowed lists %q, which no longer reads the environment: remove the entry", k)
	}
}

type envCall struct {
	name string
	line int
}

// envCalls returns the environment reads of a Go file: selectors
// os.Getenv, os.LookupEnv, os.Environ, syscall.Getenv, syscall.Environ,
// whatever name the file imports os or syscall by.
func envCalls(t *testing.T, path string) []envCall {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	pkgs := map[string]string{} // local name -> import path
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if p != "os" && p != "syscall" {
			continue
		}
		name := p
		if imp.Name != nil {
			name = imp.Name.Name
		}
		pkgs[name] = p
	}
	var out []envCall
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok || pkgs[id.Name] == "" {
			return true
		}
		switch sel.Sel.Name {
		case "Getenv", "LookupEnv", "Environ", "ExpandEnv":
			out = append(out, envCall{name: "os." + sel.Sel.Name, line: fset.Position(sel.Pos()).Line})
			if pkgs[id.Name] == "syscall" {
				out[len(out)-1].name = "syscall." + sel.Sel.Name
			}
		}
		return true
	})
	return out
}

// moduleRoot is the directory of go.mod above this package.
func moduleRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

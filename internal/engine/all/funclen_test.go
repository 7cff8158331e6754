package all

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function of rigor's non-test code may be,
// from its func line to its closing brace: a longer one is split into
// named steps (issue 23). A reader holds a function's steps in mind only
// when each has a name.
const maxFuncLines = 120

// longFuncAllowed are the functions that may be longer, each with why a
// split would hurt. Keys are "path/to/file.go Func" or
// "path/to/file.go Type.Method".
var longFuncAllowed = map[string]string{}

// TestFunctionLength: no function of non-test code is over maxFuncLines
// lines, except those in longFuncAllowed; an entry no longer needed fails
// too.
func TestFunctionLength(t *testing.T) {
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
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return fs.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		for _, f := range longFuncs(t, p) {
			key := rel + " " + f.name
			if longFuncAllowed[key] != "" {
				used[key] = true
				continue
			}
			bad = append(bad, fmt.Sprintf("%s:%d: %s is %d lines", rel, f.line, f.name, f.lines))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("%s, over %d: split it into named steps (or allow it in longFuncAllowed, with why a split would hurt)", b, maxFuncLines)
	}
	for k := range longFuncAllowed {
		if !used[k] {
			t.Errorf("longFuncAllowed[%q] is no longer needed: remove it", k)
		}
	}
}

type longFunc struct {
	name        string
	line, lines int
}

// longFuncs returns the functions of a file over maxFuncLines lines.
func longFuncs(t *testing.T, path string) []longFunc {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []longFunc
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		start, end := fset.Position(fd.Pos()).Line, fset.Position(fd.End()).Line
		if n := end - start + 1; n > maxFuncLines {
			out = append(out, longFunc{name: funcName(fd), line: start, lines: n})
		}
	}
	return out
}

// funcName is Func or Type.Method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	typ := fd.Recv.List[0].Type
	for {
		switch x := typ.(type) {
		case *ast.StarExpr:
			typ = x.X
			continue
		case *ast.IndexExpr:
			typ = x.X
			continue
		case *ast.IndexListExpr:
			typ = x.X
			continue
		}
		break
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

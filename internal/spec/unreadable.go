package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"
)

// Unreadable returns the problems that are not an experiment's own: a
// package that does not parse, an import that fails, a file that is not
// part of its package or leaves the module. Such a package's experiments
// are missing from the set or incomplete, so a verb that locks, checks,
// lists or runs experiments must stop on them: what it would say about the
// module ("every experiment is locked and current") would leave out what it
// could not read.
func (s *Set) Unreadable() []*Problem {
	var out []*Problem
	for _, p := range s.Problems {
		if len(p.IDs) == 0 {
			out = append(out, p)
		}
	}
	return out
}

// UnreadablePackages names the packages of the problems ps, in order, each
// once.
func UnreadablePackages(ps []*Problem) []string {
	var out []string
	for _, p := range ps {
		if p.Package != "" && !contains(out, p.Package) {
			out = append(out, p.Package)
		}
	}
	return out
}

// SyntaxProblems parses every .cue file of the module's experiment
// packages, without evaluating anything, and returns the syntax errors,
// each at its position (the first of each file, as vet reports it). Verbs
// that look experiment ids up cheaply ([AllIDs]) use it so that an id in a
// file that does not parse is not called unknown.
func SyntaxProblems(root string) []*Problem {
	pkgs, err := Packages(root)
	if err != nil {
		return nil
	}
	var out []*Problem
	for _, pkg := range pkgs {
		dir := filepath.Join(root, ExperimentsDir, filepath.FromSlash(pkg))
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, en := range entries {
			if en.IsDir() || !strings.HasSuffix(en.Name(), ".cue") || strings.HasPrefix(en.Name(), ".") {
				continue
			}
			file := filepath.Join(dir, en.Name())
			if _, err := parser.ParseFile(file, nil); err != nil {
				for _, e := range cueerrors.Errors(err) {
					format, args := e.Msg()
					p := &Problem{Package: pkg, Msg: fmt.Sprintf(format, args...)}
					if pos := e.Position(); pos.IsValid() {
						p.Pos = []token.Pos{pos}
					} else {
						p.Pos = []token.Pos{filePos(file)}
					}
					out = append(out, p)
				}
			}
		}
	}
	return out
}

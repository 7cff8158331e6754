package spec

import (
	"fmt"
	"go/ast"
	goparser "go/parser"
	gotoken "go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	cueast "cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/parser"
)

// shippedExperiments are the experiment files rigor ships, by path in a
// module: the quick start and the seeds' experiments under experiments/,
// and the example 'rigor init' writes (read from internal/cli/init.go).
func shippedExperiments(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir("../../experiments", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".cue") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("../..", p)
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := goparser.ParseFile(gotoken.NewFileSet(), "../cli/init.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || vs.Names[0].Name != "exampleExperiment" || len(vs.Values) != 1 {
			return true
		}
		if lit, ok := vs.Values[0].(*ast.BasicLit); ok {
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatal(err)
			}
			files["experiments/example/example.cue"] = s
		}
		return false
	})
	if files["experiments/example/example.cue"] == "" {
		t.Fatal("no exampleExperiment in internal/cli/init.go")
	}
	if files["experiments/quickstart/quickstart.cue"] == "" {
		t.Fatal("no experiments/quickstart/quickstart.cue")
	}
	return files
}

// label is one field label of an experiment file that a user could
// misspell: its offset, name and line.
type label struct {
	off, line int
	name      string
	// top is the top-level field the label is in.
	top string
}

// labelsOf lists the labels of fields whose name the schema fixes: every
// field inside an experiment (at any depth, through embeddings and &),
// but not the experiments' own names, hidden fields and definitions, nor
// the keys of maps whose keys are the user's (env, engine.build.env,
// sweep.env).
func labelsOf(t *testing.T, name, src string) []label {
	f, err := parser.ParseFile(name, src)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out []label
	top := ""
	var expr func(e cueast.Expr, depth int, free bool)
	var decls func(ds []cueast.Decl, depth int, free bool)
	decls = func(ds []cueast.Decl, depth int, free bool) {
		for _, d := range ds {
			switch d := d.(type) {
			case *cueast.Field:
				id, ok := d.Label.(*cueast.Ident)
				if !ok {
					continue
				}
				if depth == 0 {
					top = id.Name
				}
				if depth > 0 && !free && !strings.HasPrefix(id.Name, "_") && !strings.HasPrefix(id.Name, "#") {
					out = append(out, label{off: id.Pos().Offset(), line: id.Pos().Line(), name: id.Name, top: top})
				}
				expr(d.Value, depth+1, id.Name == "env")
			case *cueast.EmbedDecl:
				expr(d.Expr, depth, free)
			}
		}
	}
	expr = func(e cueast.Expr, depth int, free bool) {
		switch e := e.(type) {
		case *cueast.StructLit:
			decls(e.Elts, depth, free)
		case *cueast.BinaryExpr:
			expr(e.X, depth, free)
			expr(e.Y, depth, free)
		case *cueast.ParenExpr:
			expr(e.X, depth, free)
		}
	}
	decls(f.Decls, 0, false)
	return out
}

// firstUser maps each top-level field of a package's files to the first
// experiment (a regular top-level field, by name) that is it or refers to
// it, directly or through other fields: the one experiment a mutant of
// the field needs evaluated.
func firstUser(t *testing.T, srcs map[string]string) map[string]string {
	refs := map[string]map[string]bool{}
	var exps []string
	for name, src := range srcs {
		f, err := parser.ParseFile(name, src)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*cueast.Field)
			if !ok {
				continue
			}
			id, ok := fd.Label.(*cueast.Ident)
			if !ok {
				continue
			}
			if !strings.HasPrefix(id.Name, "_") && !strings.HasPrefix(id.Name, "#") {
				exps = append(exps, id.Name)
			}
			r := map[string]bool{}
			cueast.Walk(fd.Value, func(n cueast.Node) bool {
				if x, ok := n.(*cueast.Ident); ok {
					r[x.Name] = true
				}
				return true
			}, nil)
			refs[id.Name] = r
		}
	}
	sort.Strings(exps)
	uses := func(e, h string) bool {
		seen := map[string]bool{}
		var walk func(x string) bool
		walk = func(x string) bool {
			if x == h {
				return true
			}
			if seen[x] {
				return false
			}
			seen[x] = true
			for r := range refs[x] {
				if walk(r) {
					return true
				}
			}
			return false
		}
		return walk(e)
	}
	out := map[string]string{}
	for h := range refs {
		for _, e := range exps {
			if uses(e, h) {
				out[h] = e
				break
			}
		}
	}
	return out
}

// typo is a near-typo of a field name that no schema allows: two letters
// swapped ("warmup" → "wramup"), or a letter added to a name of one or two
// letters, where a swap could make another flag.
func typo(name string) string {
	if len(name) > 2 && name[1] != name[2] {
		return name[:1] + string(name[2]) + string(name[1]) + name[3:]
	}
	return name + "q"
}

// TestShippedExperiments_typos renames each field of every shipped
// experiment to a near-typo, one at a time: every mutant must be refused
// with an error on the mutated line. An experiment that embeds its base
// (`serve: {_cpu, bench: {…}}`, the quick start's own serve) was closed
// only at its top: a typo in its bench, flags or serve passed vet and left
// the plan. Each mutant is a package of its own (a copy of the shipped
// package with one label changed), and all load in one Load, so the
// schema is loaded once.
func TestShippedExperiments_typos(t *testing.T) {
	files := shippedExperiments(t)
	pkgFiles := map[string][]string{} // package dir → its files
	for rel := range files {
		dir := filepath.ToSlash(filepath.Dir(rel))
		pkgFiles[dir] = append(pkgFiles[dir], rel)
	}
	type mutant struct {
		file, orig, typo string
		line             int
	}
	mod := map[string]string{}
	// Patches the seeds name, so that only the mutation is wrong.
	patches, _ := filepath.Glob("../../patches/*.patch")
	for _, p := range patches {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		mod["patches/"+filepath.Base(p)] = string(b)
	}
	// Unmutated, every package is clean.
	for rel, src := range files {
		mod[rel] = src
	}
	set, err := Load(Options{Root: writeModule(t, mod)})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Problems) > 0 {
		t.Fatalf("before mutation: %v", set.Problems[0])
	}
	for rel := range files {
		delete(mod, rel)
	}
	mutants := map[string]mutant{} // package dir → its mutant
	var patterns []string
	for rel, src := range files {
		labels := labelsOf(t, rel, src)
		if len(labels) < 10 {
			t.Fatalf("%s: only %d labels found", rel, len(labels))
		}
		srcs := map[string]string{}
		for _, other := range pkgFiles[filepath.ToSlash(filepath.Dir(rel))] {
			srcs[other] = files[other]
		}
		users := firstUser(t, srcs)
		for i, l := range labels {
			// Race-built (make test), every third label: a mutant costs
			// about 0.15 s of CPU there, 0.05 s without -race, which runs
			// them all.
			if raceEnabled && i%3 != 0 || testing.Short() && i%6 != 0 {
				continue
			}
			dir := fmt.Sprintf("experiments/mut%03d", len(mutants))
			// Only the first experiment that holds the mutated field is
			// evaluated: a field the schema does not know is refused in
			// every experiment that holds it.
			user := users[l.top]
			if user == "" {
				t.Fatalf("%s:%d: no experiment uses %s", rel, l.line, l.top)
			}
			patterns = append(patterns, strings.TrimPrefix(dir, "experiments/")+"/"+user)
			bad := typo(l.name)
			for _, other := range pkgFiles[filepath.ToSlash(filepath.Dir(rel))] {
				mod[dir+"/"+filepath.Base(other)] = files[other]
			}
			mod[dir+"/"+filepath.Base(rel)] = src[:l.off] + bad + src[l.off+len(l.name):]
			mutants[strings.TrimPrefix(dir, "experiments/")] = mutant{file: dir + "/" + filepath.Base(rel), orig: l.name, typo: bad, line: l.line}
		}
	}
	set, err = Load(Options{Root: writeModule(t, mod), Patterns: patterns})
	if err != nil {
		t.Fatal(err)
	}
	refused := map[string]bool{}
	at := map[string]bool{}
	for _, p := range set.Problems {
		pkg := p.Package
		if pkg == "" && len(p.IDs) > 0 {
			pkg = strings.SplitN(p.IDs[0], "/", 2)[0]
		}
		m, ok := mutants[pkg]
		if !ok {
			t.Errorf("a problem outside the mutants: %v", p)
			continue
		}
		refused[pkg] = true
		for _, pos := range p.Pos {
			if pos.Line() == m.line && strings.HasSuffix(filepath.ToSlash(pos.Filename()), m.file) {
				at[pkg] = true
			}
		}
	}
	for pkg, m := range mutants {
		switch {
		case !refused[pkg]:
			t.Errorf("%s:%d: %s → %s: accepted", m.file, m.line, m.orig, m.typo)
		case !at[pkg]:
			var first string
			for _, p := range set.Problems {
				if p.Package == pkg || len(p.IDs) > 0 && strings.HasPrefix(p.IDs[0], pkg+"/") {
					first = p.Error()
					break
				}
			}
			t.Errorf("%s:%d: %s → %s: refused, but no error on line %d; first: %s", m.file, m.line, m.orig, m.typo, m.line, first)
		}
	}
	t.Logf("%d mutants of %d files", len(mutants), len(files))
}

package spec

import (
	"fmt"
	"regexp"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/token"
)

// closedLike reports whether every regular field of the experiment v, at
// every depth, is one that #Experiment allows there for v's engine family
// and mode. A value that holds #Experiment through an embedding
// (`serve: {_cpu, bench: {warup: 4}}`, the shape of the quick start's own
// serve) is closed at the top, yet CUE lets the fields written beside the
// embedding through unchecked: bench, flags, serve, env, model, engine and
// quality of such an experiment took any field, and a typo silently left
// the plan. The check only reads the evaluated value and a reference
// definition per family and mode, so an experiment written with & costs
// no second evaluation; when it fails, the caller unifies v with
// #Experiment, which reports each field as the & spelling does.
func (s *Set) closedLike(v cue.Value) bool {
	fam, _ := v.LookupPath(cue.ParsePath("engine.family")).String()
	serve := v.LookupPath(cue.ParsePath("serve")).Exists()
	ref, ok := s.reference(fam, serve)
	if !ok {
		return false
	}
	return fieldsAllowed(v, ref)
}

// reference is #Experiment for one engine family, with or without serve:
// the definitions whose field sets an experiment of that shape must keep
// to.
func (s *Set) reference(fam string, serve bool) (cue.Value, bool) {
	key := fam
	if serve {
		key += "\x00serve"
	}
	if r, ok := s.refs[key]; ok {
		return r, r.Exists()
	}
	r := s.schema.LookupPath(cue.ParsePath("#Experiment")).FillPath(cue.ParsePath("engine.family"), fam)
	if serve {
		r = r.FillPath(cue.ParsePath("serve"), map[string]any{})
	}
	if r.Err() != nil {
		r = cue.Value{}
	}
	if s.refs == nil {
		s.refs = map[string]cue.Value{}
	}
	s.refs[key] = r
	return r, r.Exists()
}

// fieldsAllowed walks the regular fields of v and reports whether ref
// allows each at its place; a struct field is walked against ref's value
// there.
func fieldsAllowed(v, ref cue.Value) bool {
	it, err := v.Fields()
	if err != nil {
		return false
	}
	for it.Next() {
		sel := it.Selector()
		if !ref.Allows(sel) {
			return false
		}
		fv := it.Value()
		if fv.IncompleteKind() != cue.StructKind {
			continue
		}
		rv := ref.LookupPath(cue.MakePath(sel))
		if !rv.Exists() {
			rv = ref.LookupPath(cue.MakePath(sel.Optional()))
		}
		if !rv.Exists() {
			return false
		}
		if !fieldsAllowed(fv, rv) {
			return false
		}
	}
	return true
}

// pointAtMisspelling places a "field is not set" problem at the field
// the user wrote instead, when the struct that lacks the field holds one
// the schema does not allow there ("fmaily" for family): the typo is what
// to fix, and its line is where to look.
func (c *collector) pointAtMisspelling(p *Problem, s *Set, exp cue.Value) {
	i := strings.LastIndex(p.Path, ".")
	if i < 0 {
		return
	}
	c.pointAtMisspelt(p, s, exp, p.Path[:i], p.Path[i+1:])
}

var refNotFound = regexp.MustCompile(`^reference "([A-Za-z_][A-Za-z0-9_]*)" not found$`)

// pointAtMisspeltRef does the same for a reference to a field of the
// experiment that a typo renamed (tokenizer: model.path, with model
// written mdoel): the error is at the reference, the typo elsewhere.
func (c *collector) pointAtMisspeltRef(p *Problem, s *Set, exp cue.Value) {
	if m := refNotFound.FindStringSubmatch(p.Msg); m != nil {
		c.pointAtMisspelt(p, s, exp, "", m[1])
	}
}

// pointAtMisspelt places p at the field of exp's struct at parent ("" for
// the experiment itself) whose name the schema does not know there and
// is nearest to last, the field it lacks.
func (c *collector) pointAtMisspelt(p *Problem, s *Set, exp cue.Value, parent, last string) {
	at := func(v cue.Value) cue.Value {
		if parent == "" {
			return v
		}
		return v.LookupPath(cue.ParsePath(parent))
	}
	fam, _ := exp.LookupPath(cue.ParsePath("engine.family")).String()
	ref, ok := s.reference(fam, exp.LookupPath(cue.ParsePath("serve")).Exists())
	if !ok {
		ref = s.schema.LookupPath(cue.ParsePath("#Experiment"))
	}
	// The schema's names, not ref.Allows: a struct whose comprehensions
	// wait on the missing field (#Engine's on family) allows anything.
	known := map[string]bool{}
	rit, err := at(ref).Fields(cue.Optional(true))
	if err != nil {
		return
	}
	for rit.Next() {
		known[rit.Selector().Unquoted()] = true
	}
	it, err := at(exp).Fields()
	if err != nil || len(known) == 0 {
		return
	}
	unknown := map[string]cue.Value{}
	var names []string
	for it.Next() {
		if n := it.Selector().Unquoted(); !known[n] {
			unknown[n] = it.Value()
			names = append(names, n)
		}
	}
	typo := nearest(last, names)
	if typo == "" && len(names) == 1 {
		typo = names[0]
	}
	if typo == "" {
		return
	}
	if pos := userPositions(positionsOf(unknown[typo]), c.schemaDir); len(pos) > 0 {
		p.Pos = append(pos, p.Pos...)
	}
	where := "the experiment"
	if parent != "" {
		where = parent
	}
	p.Hints = append([]string{fmt.Sprintf("%s has %q, which is not one of its fields: did you mean %s?", where, typo, last)}, p.Hints...)
}

// pointAtMisspeltRefs does it for the package-level problems from the
// index first on: a reference that a typo broke fails the whole package
// (there is no value to look at), so the experiment is found in the
// syntax, by the first element of the problem's path, and the typo among
// the labels written directly in it that #Experiment does not have.
func (c *collector) pointAtMisspeltRefs(s *Set, inst *build.Instance, first int) {
	for _, p := range c.probs[first:] {
		m := refNotFound.FindStringSubmatch(p.Msg)
		if m == nil || p.Path == "" {
			continue
		}
		name := strings.SplitN(p.Path, ".", 2)[0]
		known := map[string]bool{}
		for _, f := range schemaFieldsAt(s, "x") {
			known[f] = true
		}
		labels := map[string]*ast.Ident{}
		var names []string
		var expr func(e ast.Expr)
		expr = func(e ast.Expr) {
			switch e := e.(type) {
			case *ast.BinaryExpr:
				expr(e.X)
				expr(e.Y)
			case *ast.ParenExpr:
				expr(e.X)
			case *ast.StructLit:
				for _, d := range e.Elts {
					switch d := d.(type) {
					case *ast.Field:
						if id, ok := d.Label.(*ast.Ident); ok && !known[id.Name] && !strings.HasPrefix(id.Name, "_") && !strings.HasPrefix(id.Name, "#") && labels[id.Name] == nil {
							labels[id.Name] = id
							names = append(names, id.Name)
						}
					case *ast.EmbedDecl:
						expr(d.Expr)
					}
				}
			}
		}
		for _, f := range inst.Files {
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.Field); ok {
					if id, ok := fd.Label.(*ast.Ident); ok && id.Name == name {
						expr(fd.Value)
					}
				}
			}
		}
		typo := nearest(m[1], names)
		if typo == "" && len(names) == 1 {
			typo = names[0]
		}
		if typo == "" {
			continue
		}
		p.Pos = append([]token.Pos{labels[typo].Pos()}, p.Pos...)
		p.Hints = append([]string{fmt.Sprintf("the experiment has %q, which is not one of its fields: did you mean %s?", typo, m[1])}, p.Hints...)
	}
}

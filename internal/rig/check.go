package rig

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/format"
	"cuelang.org/go/cue/token"
)

// Mismatch is one requirement of an experiment's #requires that the rig
// does not meet.
type Mismatch struct {
	// Path is the requirement's path under #requires, e.g. "gpu.count".
	Path string `json:"path"`
	// Want is the constraint as written, e.g. ">=4" or "\"Intel Arc Pro B70\"".
	Want string `json:"want"`
	// Got is the rig's value as JSON, or "" when the rig does not report
	// the fact at all.
	Got string `json:"got"`
	// Pos is where the requirement is written.
	Pos token.Pos `json:"-"`
}

// String describes the mismatch without its position:
// `gpu.count: want >=4, rig has 2` or `gpu.driver: want "560.1", the rig
// does not report it`.
func (m Mismatch) String() string {
	if m.Got == "" {
		return fmt.Sprintf("%s: want %s, the rig does not report it", m.Path, m.Want)
	}
	return fmt.Sprintf("%s: want %s, rig has %s", m.Path, m.Want, m.Got)
}

// Check unifies each requirement of requires (an experiment's #requires)
// with the same path of the rig's [Rig.Facts], encoded in requires' own CUE
// context, and returns every requirement the rig does not meet, in the
// order they are written. A requirement on a fact the rig lacks (no GPU
// driver detected, say) is a mismatch with an empty Got. A requires value
// that does not exist is met by every rig.
func Check(requires cue.Value, r *Rig) []Mismatch {
	if !requires.Exists() {
		return nil
	}
	// Values of different contexts may be unified (Value.Context is
	// deprecated), so the facts get a context of their own.
	facts := cuecontext.New().Encode(r.Facts())
	var out []Mismatch
	check(requires, facts, nil, &out)
	return out
}

func check(req, facts cue.Value, path []string, out *[]Mismatch) {
	if req.IncompleteKind() == cue.StructKind {
		it, err := req.Fields()
		if err != nil {
			*out = append(*out, Mismatch{Path: strings.Join(path, "."), Want: constraintText(req), Pos: req.Pos()})
			return
		}
		for it.Next() {
			sel := it.Selector()
			name := sel.String()
			if sel.IsString() {
				name = sel.Unquoted()
			}
			check(it.Value(), facts.LookupPath(cue.MakePath(sel)), append(path[:len(path):len(path)], name), out)
		}
		return
	}
	want, pos := userConstraint(req)
	m := Mismatch{Path: strings.Join(path, "."), Want: want, Pos: pos}
	if !facts.Exists() {
		*out = append(*out, m)
		return
	}
	if b, err := facts.MarshalJSON(); err == nil {
		m.Got = string(b)
	} else {
		m.Got = fmt.Sprint(facts)
	}
	if err := req.Unify(facts).Validate(cue.Concrete(true)); err != nil {
		*out = append(*out, m)
	}
}

// userConstraint returns the text and position of the part of a
// requirement the experiment wrote: a requirement unified with the schema
// (`int & >=0` from #Requires, `>=8` from the experiment) shows and points
// at the experiment's conjuncts, not at the schema in cue.mod/.
func userConstraint(v cue.Value) (string, token.Pos) {
	if op, args := v.Expr(); op == cue.AndOp {
		var texts []string
		var pos token.Pos
		for _, a := range args {
			p := a.Pos()
			if isSchemaPos(p) {
				continue
			}
			texts = append(texts, constraintText(a))
			if !pos.IsValid() {
				pos = p
			}
		}
		if len(texts) > 0 {
			return strings.Join(texts, " & "), pos
		}
	}
	return constraintText(v), v.Pos()
}

// isSchemaPos reports whether p is in a module's dependencies (cue.mod/),
// where rigor's schema is overlaid.
func isSchemaPos(p token.Pos) bool {
	f := filepath.ToSlash(p.Filename())
	return strings.Contains(f, "/cue.mod/") || strings.HasPrefix(f, "cue.mod/")
}

// constraintText renders a constraint as written: JSON for a concrete
// value, CUE syntax otherwise.
func constraintText(v cue.Value) string {
	if v.IsConcrete() && v.IncompleteKind() != cue.StructKind {
		if b, err := json.Marshal(v); err == nil {
			return string(b)
		}
	}
	b, err := format.Node(v.Syntax(cue.Docs(false), cue.Attributes(false)))
	if err != nil {
		return fmt.Sprint(v)
	}
	return strings.Join(strings.Fields(string(b)), " ")
}

package spec

import (
	"sort"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/format"
)

// RequiresLines renders a #requires value as "path: constraint" lines in
// sorted order (CUE's field order may differ between evaluations): a
// concrete value as JSON, a constraint as CUE ("=~\"Arc Pro B70\"",
// ">=32").
func RequiresLines(v cue.Value) []string {
	lines := constraintLines(v, "")
	sort.Strings(lines)
	return lines
}

func constraintLines(v cue.Value, prefix string) []string {
	it, err := v.Fields()
	if err != nil {
		return nil
	}
	var out []string
	for it.Next() {
		name := prefix + it.Selector().String()
		fv := it.Value()
		if fv.IncompleteKind() == cue.StructKind {
			out = append(out, constraintLines(fv, name+".")...)
			continue
		}
		if fv.IsConcrete() {
			if j, err := fv.MarshalJSON(); err == nil {
				out = append(out, name+": "+string(j))
				continue
			}
		}
		b, err := format.Node(fv.Syntax(cue.Docs(false), cue.Attributes(false)))
		if err != nil {
			continue
		}
		out = append(out, name+": "+strings.TrimSpace(string(b)))
	}
	return out
}

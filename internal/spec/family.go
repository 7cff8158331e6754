package spec

import (
	"fmt"
	"strings"
	"sync"

	"cuelang.org/go/cue"
)

// Family is one row of the schema's family table (#Families in
// schema/families.cue), read once at startup: everything rigor says and
// checks about a family that the schema can hold. Nothing in Go lists the
// families again; the Family* constants only name those that Go code
// treats specially.
type Family struct {
	// Name is the family's name, engine.family.
	Name string
	// Sources are the kinds of engine.source it takes ([Source.Kind]).
	Sources []string
	// Tool and ServerTool name its benchmark program and its server in
	// messages.
	Tool, ServerTool string
	// Fork is the family whose bench tool shares this one's lineage, "" for
	// none.
	Fork string
	// RPC is true for the families that start rpc-server workers.
	RPC bool
	// ExtraArgs is true when extraArgs reaches the bench tool as written,
	// so a flag a patched engine adds can go there.
	ExtraArgs bool
	// Hint says how an engine of the family is sourced.
	Hint string
	// Flags and Bench are the tables of an experiment without serve;
	// ServerFlags and Workload those of a serve experiment.
	Flags, Bench, ServerFlags, Workload *FlagTable
}

// Takes reports whether the family takes a source of the kind.
func (f *Family) Takes(kind string) bool {
	for _, k := range f.Sources {
		if k == kind {
			return true
		}
	}
	return false
}

// table returns the flag table of a section ("flags" or "bench"), in serve
// mode or not.
func (f *Family) table(serve bool, section string) *FlagTable {
	switch {
	case serve && section == "bench":
		return f.Workload
	case serve:
		return f.ServerFlags
	case section == "bench":
		return f.Bench
	}
	return f.Flags
}

// familiesPath is the schema's family table.
const familiesPath = "#Families"

// tablePath is the schema path of a family's flags or bench in serve mode
// or not.
func tablePath(family string, serve bool, section string) string {
	row := familiesPath + "." + cue.Str(family).String()
	switch {
	case serve && section == "bench":
		return "#Workload"
	case serve:
		return row + ".server.flags"
	case section == "bench":
		return row + ".bench"
	}
	return row + ".flags"
}

var families struct {
	once   sync.Once
	list   []*Family
	byName map[string]*Family
	err    error
}

// readFamiliesOnce reads the family table from a built schema, the first
// time anything asks for it; from is called only then. Every schema rigor
// builds is the embedded one, so the first is as good as any.
func readFamiliesOnce(from func() (cue.Value, error)) error {
	families.once.Do(func() {
		v, err := from()
		if err != nil {
			families.err = err
			return
		}
		families.list, families.err = readFamilies(v)
		families.byName = map[string]*Family{}
		for _, f := range families.list {
			families.byName[f.Name] = f
		}
	})
	return families.err
}

// familyTable is the family table, read from the built-in schema unless a
// loaded module read it first. The schema is embedded and tested: failing
// to read it is a broken build, and panics.
func familyTable() ([]*Family, map[string]*Family) {
	if err := readFamiliesOnce(builtinSchema); err != nil {
		panic(fmt.Sprintf("rigor: the embedded schema's family table: %v", err))
	}
	return families.list, families.byName
}

// Families lists the engine families in the schema's order.
func Families() []string {
	list, _ := familyTable()
	out := make([]string, len(list))
	for i, f := range list {
		out[i] = f.Name
	}
	return out
}

// LookupFamily returns the schema's row of a family.
func LookupFamily(name string) (*Family, bool) {
	_, by := familyTable()
	f, ok := by[name]
	return f, ok
}

// familyOf returns the row of a table key ([TableKey]) and whether the key
// is serve mode's.
func familyOf(key string) (*Family, bool, bool) {
	name, serve := strings.CutPrefix(key, ServePrefix)
	f, ok := LookupFamily(name)
	return f, serve, ok
}

// readFamilies reads #Families from a built schema, in the schema's order.
func readFamilies(schemaVal cue.Value) ([]*Family, error) {
	v := schemaVal.LookupPath(cue.ParsePath(familiesPath))
	if !v.Exists() {
		return nil, fmt.Errorf("schema has no %s", familiesPath)
	}
	it, err := v.Fields()
	if err != nil {
		return nil, fmt.Errorf("reading schema %s: %w", familiesPath, err)
	}
	var out []*Family
	for it.Next() {
		name := it.Selector().Unquoted()
		row := it.Value()
		f := &Family{Name: name}
		str := func(p string) string {
			s, _ := row.LookupPath(cue.ParsePath(p)).String()
			return s
		}
		f.Tool, f.ServerTool, f.Fork, f.Hint = str("tool"), str("server.tool"), str("fork"), str("hint")
		f.RPC, _ = row.LookupPath(cue.ParsePath("rpc")).Bool()
		f.ExtraArgs, _ = row.LookupPath(cue.ParsePath("extraArgs")).Bool()
		if err := row.LookupPath(cue.ParsePath("sources")).Decode(&f.Sources); err != nil {
			return nil, fmt.Errorf("schema %s.%s.sources: %w", familiesPath, name, err)
		}
		for _, t := range []struct {
			dst            **FlagTable
			serve          bool
			section, label string
		}{
			{&f.Flags, false, "flags", "flags"},
			{&f.Bench, false, "bench", "bench"},
			{&f.ServerFlags, true, "flags", "server.flags"},
			{&f.Workload, true, "bench", "#Workload"},
		} {
			tv := schemaVal.LookupPath(cue.ParsePath(tablePath(name, t.serve, t.section)))
			if *t.dst, err = flagTable(tv, defName(tv, t.label)); err != nil {
				return nil, fmt.Errorf("schema %s.%s: %w", familiesPath, name, err)
			}
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("schema %s lists no family", familiesPath)
	}
	return out, nil
}

// defName is the definition a table refers to (#LlamaBenchFlags), or
// label when it is written out in place.
func defName(v cue.Value, label string) string {
	if _, p := v.ReferencePath(); len(p.Selectors()) > 0 {
		return p.String()
	}
	// The row's value met #Family's constraint: the reference is one of
	// the conjuncts.
	if op, args := v.Expr(); op == cue.AndOp {
		for _, a := range args {
			if _, p := a.ReferencePath(); len(p.Selectors()) > 0 {
				return p.String()
			}
		}
	}
	return label
}

package spec

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"cuelang.org/go/cue"

	"github.com/rigorbench/rigor/internal/suggest"
)

// FlagDef is one typed flag of an engine family, read from the schema's
// `@flag(SPELLING[,sweep][,switch][,pairs][,field=NAME])` attributes.
type FlagDef struct {
	// Name is the CUE field name, e.g. "nkvo".
	Name string
	// Spelling is the command-line flag, e.g. "-nkvo".
	Spelling string
	// Sweep is true when the engine's bench tool sweeps the flag itself
	// from a comma list within one process.
	Sweep bool
	// Switch is true for flags that take no value: true writes the flag,
	// false leaves it out.
	Switch bool
	// Pairs is true for list-of-pairs values written once per pair
	// (-pg 512,128).
	Pairs bool
	// Field is the field of the engine's output that reports the flag's
	// value (llama-bench's JSON, e.g. "n_ubatch"), or "" when none does.
	Field string
	// Doc is the field's doc comment in the schema.
	Doc string
}

// FlagTable is the ordered flag set of one schema definition.
type FlagTable struct {
	// Def is the schema definition, e.g. "#IkLlamaBenchFlags" (the path in
	// #Families when the table is written out there).
	Def  string
	Defs []FlagDef
}

// Lookup finds a flag by field name.
func (t *FlagTable) Lookup(name string) (FlagDef, bool) {
	for _, d := range t.Defs {
		if d.Name == name {
			return d, true
		}
	}
	return FlagDef{}, false
}

// Names lists the field names in schema order.
func (t *FlagTable) Names() []string {
	names := make([]string, len(t.Defs))
	for i, d := range t.Defs {
		names[i] = d.Name
	}
	return names
}

// flagTable reads the flag definitions of a schema definition's value.
func flagTable(v cue.Value, def string) (*FlagTable, error) {
	if !v.Exists() {
		return nil, fmt.Errorf("schema has no definition %s", def)
	}
	it, err := v.Fields(cue.Optional(true))
	if err != nil {
		return nil, fmt.Errorf("reading schema %s: %w", def, err)
	}
	t := &FlagTable{Def: def}
	for it.Next() {
		sel := it.Selector()
		if sel.IsDefinition() || sel.PkgPath() != "" && strings.HasPrefix(sel.String(), "_") {
			continue
		}
		name := strings.TrimSuffix(sel.String(), "?")
		fd := FlagDef{Name: name}
		a := it.Value().Attribute("flag")
		if a.Err() == nil {
			fd.Spelling, _ = a.String(0)
			for i := 1; i < a.NumArgs(); i++ {
				s, _ := a.String(i)
				switch s {
				case "sweep":
					fd.Sweep = true
				case "switch":
					fd.Switch = true
				case "pairs":
					fd.Pairs = true
				}
			}
			if f, ok, _ := a.Lookup(1, "field"); ok {
				fd.Field = f
			}
		}
		for _, cg := range it.Value().Doc() {
			fd.Doc = strings.TrimSpace(cg.Text())
		}
		t.Defs = append(t.Defs, fd)
	}
	return t, nil
}

// Arg is one flag of a plan with its rendered value.
type Arg struct {
	Def FlagDef
	// Values are the rendered values; one for a scalar, several for pairs
	// (each written with its own occurrence of the flag).
	Values []string
	// On is false for a switch set to false (left out of the argv).
	On bool
}

// Argv renders the arg as command-line words.
func (a Arg) Argv() []string {
	if a.Def.Switch {
		if a.On {
			return []string{a.Def.Spelling}
		}
		return nil
	}
	var out []string
	for _, v := range a.Values {
		out = append(out, a.Def.Spelling, v)
	}
	return out
}

// renderArgs turns a decoded flags or bench map into ordered args, in the
// table's order. Fields without a spelling are skipped (the engine package
// maps them itself).
func renderArgs(t *FlagTable, m map[string]any) ([]Arg, error) {
	var out []Arg
	for _, d := range t.Defs {
		v, ok := m[d.Name]
		if !ok || d.Spelling == "" {
			continue
		}
		a := Arg{Def: d, On: true}
		switch {
		case d.Switch:
			b, _ := v.(bool)
			a.On = b
		case d.Pairs:
			list, _ := v.([]any)
			for _, p := range list {
				pair, _ := p.([]any)
				var parts []string
				for _, x := range pair {
					parts = append(parts, RenderValue(x))
				}
				a.Values = append(a.Values, strings.Join(parts, ","))
			}
			if len(a.Values) == 0 {
				continue
			}
		default:
			a.Values = []string{RenderValue(v)}
		}
		out = append(out, a)
	}
	return out, nil
}

// RenderValue writes a decoded CUE scalar the way a command line takes it:
// integers in decimal, floats in the shortest form, bools as 1/0.
func RenderValue(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		if x {
			return "1"
		}
		return "0"
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case json.Number:
		return x.String()
	case float64:
		if x == float64(int64(x)) && x < 1e15 && x > -1e15 {
			return strconv.FormatInt(int64(x), 10)
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = RenderValue(e)
		}
		return strings.Join(parts, ",")
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// nearest returns the candidate closest to s by edit distance, when it is
// close enough to be a plausible typo.
func nearest(s string, candidates []string) string {
	best, bestD := "", 1<<30
	ls := strings.ToLower(s)
	for _, c := range candidates {
		d := suggest.Distance(ls, strings.ToLower(c))
		if d < bestD || d == bestD && c < best {
			best, bestD = c, d
		}
	}
	limit := max(1, len(s)/3)
	if bestD <= limit {
		return best
	}
	return ""
}

package spec

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"

	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/load"

	"github.com/rigorbench/rigor/schema"
)

var builtin struct {
	once   sync.Once
	tables map[string]*FlagTable
	err    error
}

// BuiltinFlagTable returns the flag table of an engine family ("flags") or
// its bench workload ("bench") from the schema built into rigor, without a
// module. Packages that read engine output use it to map flags to the
// fields that report them (the @flag attributes' field= argument), so the
// mapping is written once, in the schema.
func BuiltinFlagTable(family, section string) (*FlagTable, error) {
	builtin.once.Do(func() { builtin.tables, builtin.err = loadBuiltinTables() })
	if builtin.err != nil {
		return nil, builtin.err
	}
	defs, ok := familyDefs[family]
	if !ok {
		return nil, fmt.Errorf("unknown engine family %q", family)
	}
	if section == "bench" {
		return builtin.tables[defs[1]], nil
	}
	return builtin.tables[defs[0]], nil
}

// loadBuiltinTables builds the embedded schema as a module of its own in a
// virtual directory (nothing on disk is read) and reads every flag table.
func loadBuiltinTables() (map[string]*FlagTable, error) {
	root := filepath.Join(string(filepath.Separator), "rigor-builtin-schema")
	ov := map[string]load.Source{
		filepath.Join(root, "cue.mod", "module.cue"): load.FromString("module: \"github.com/rigorbench/rigor@v0\"\nlanguage: version: \"v0.17.0\"\n"),
	}
	entries, err := fs.ReadDir(schema.FS, ".")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		b, err := fs.ReadFile(schema.FS, e.Name())
		if err != nil {
			return nil, err
		}
		ov[filepath.Join(root, "schema", e.Name())] = load.FromBytes(b)
	}
	insts := load.Instances([]string{"./schema"}, &load.Config{ModuleRoot: root, Dir: root, Overlay: ov})
	if len(insts) != 1 || insts[0].Err != nil {
		if len(insts) == 1 {
			return nil, fmt.Errorf("loading the built-in schema: %w", insts[0].Err)
		}
		return nil, fmt.Errorf("loading the built-in schema")
	}
	v := cuecontext.New().BuildInstance(insts[0])
	if v.Err() != nil {
		return nil, fmt.Errorf("building the built-in schema: %w", v.Err())
	}
	tables := map[string]*FlagTable{}
	for _, defs := range familyDefs {
		for _, d := range defs {
			if tables[d] != nil {
				continue
			}
			t, err := flagTable(v, d)
			if err != nil {
				return nil, err
			}
			tables[d] = t
		}
	}
	return tables, nil
}

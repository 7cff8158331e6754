package spec

import (
	"fmt"
	"path/filepath"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/load"

	"github.com/rigorbench/rigor/schema"
)

// BuiltinFlagTable returns the flag table of an engine family ("flags") or
// its bench workload ("bench") from the schema built into rigor, without a
// module; family is a [TableKey]. Packages that read engine output use it
// to map flags to the fields that report them (the @flag attributes'
// field= argument), so the mapping is written once, in the schema.
func BuiltinFlagTable(family, section string) (*FlagTable, error) {
	if err := readFamiliesOnce(builtinSchema); err != nil {
		return nil, err
	}
	f, serve, ok := familyOf(family)
	if !ok {
		return nil, fmt.Errorf("unknown engine family %q", family)
	}
	return f.table(serve, section), nil
}

// builtinSchema builds the embedded schema as a module of its own in a
// virtual directory (nothing on disk is read).
func builtinSchema() (cue.Value, error) {
	root := filepath.Join(string(filepath.Separator), "rigor-builtin-schema")
	ov := map[string]load.Source{
		filepath.Join(root, "cue.mod", "module.cue"): load.FromString("module: \"github.com/rigorbench/rigor@v0\"\nlanguage: version: \"v0.17.0\"\n"),
	}
	files, err := schema.Files()
	if err != nil {
		return cue.Value{}, err
	}
	for _, f := range files {
		ov[filepath.Join(root, "schema", f.Name)] = load.FromBytes(f.Src)
	}
	insts := load.Instances([]string{"./schema"}, &load.Config{ModuleRoot: root, Dir: root, Overlay: ov})
	if len(insts) != 1 || insts[0].Err != nil {
		if len(insts) == 1 {
			return cue.Value{}, fmt.Errorf("loading the built-in schema: %w", insts[0].Err)
		}
		return cue.Value{}, fmt.Errorf("loading the built-in schema")
	}
	v := cuecontext.New().BuildInstance(insts[0])
	if v.Err() != nil {
		return cue.Value{}, fmt.Errorf("building the built-in schema: %w", v.Err())
	}
	return v, nil
}

package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/load"
	"cuelang.org/go/cue/token"

	"github.com/rigorbench/rigor/schema"
)

// ExperimentsDir is the directory under the module root that holds the
// experiment packages.
const ExperimentsDir = "experiments"

// ErrNoModule is returned when no cue.mod directory is found.
var ErrNoModule = errors.New("not inside a rigor module: no cue.mod directory found")

// ErrNoExperiments is wrapped by the errors of a module that has no
// experiments to load: no experiments/ directory, or no .cue files in it.
var ErrNoExperiments = errors.New("no experiments")

// noExperiments says why a module has no experiments; it is
// ErrNoExperiments.
type noExperiments string

func (e noExperiments) Error() string        { return string(e) }
func (e noExperiments) Is(target error) bool { return target == ErrNoExperiments }

// FindRoot walks up from dir to the directory that holds cue.mod/.
func FindRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; d = filepath.Dir(d) {
		if fi, err := os.Stat(filepath.Join(d, "cue.mod", "module.cue")); err == nil && !fi.IsDir() {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", ErrNoModule
		}
	}
}

// Options control [Load].
type Options struct {
	// Root is the module root (the directory holding cue.mod/).
	Root string
	// Patterns select experiments by id: an exact id
	// ("minimax-m27-b70/baseline"), a package ("minimax-m27-b70"), or a
	// path.Match glob ("minimax-m27-b70/kv*"). No pattern selects all.
	Patterns []string
	// Release evaluates each package in a CUE context of its own and
	// lets it go once its experiments are decoded, expanded and checked:
	// Experiment.Value, Experiment.Requires and Point.Value are then left
	// zero, and peak memory is bounded by the largest package instead of
	// growing with the module. Verbs that need the CUE values of an
	// experiment (its #requires, say) load without it.
	Release bool
	// Check, when set, is called for each experiment that loaded without
	// problems, while its CUE values are still there: a check outside
	// this package that records problems with [Set.AddProblem], whose
	// positions come from the values.
	Check func(*Set, *Experiment)
}

// Set is the result of loading a module's experiments.
type Set struct {
	Root        string
	Experiments []*Experiment
	// Problems are every error found, each once, sorted by position.
	Problems []*Problem

	ctx       *cue.Context
	schema    cue.Value
	schemaDir string
	// releasing is Options.Release: a sweep point's CUE value is let go
	// as soon as the point is checked and decoded, so that vet of a sweep
	// of 10,000 points holds one point's evaluation at a time, not all.
	releasing bool
	// refs are #Experiment per engine family and mode, for closedLike,
	// in the current context.
	refs map[string]cue.Value
	// files maps the token files of the package being let go to copies
	// holding only their line tables ([Set.release]).
	files map[*token.File]*token.File
}

// Experiment is one named #Experiment value.
type Experiment struct {
	// ID is the package directory plus the field name.
	ID      string
	Package string
	Name    string
	Pos     token.Pos
	Value   cue.Value
	// Spec is the decoded experiment (its sweep not expanded).
	Spec Spec
	// Points are the sweep points; one point equal to the experiment when
	// there is no sweep.
	Points []*Point
	// Requires is the #requires constraint value.
	Requires cue.Value
	// RequiresLines are the #requires constraints as sorted "path: constraint"
	// lines, kept after the values are released; lockfiles' spec digest
	// covers them ([RequiresLines]).
	RequiresLines []string
	// Broken is true when the experiment has problems; its Spec and Points
	// are then incomplete.
	Broken bool

	canonical []byte
}

// Point is one concrete configuration after sweep expansion.
type Point struct {
	ID         string
	Experiment *Experiment
	// Axes are the swept values of the point, in axis order.
	Axes  []Axis
	Value cue.Value
	Spec  Spec
	// Flags and Bench are the typed flags and workload as command-line
	// args, in schema order.
	Flags []Arg
	Bench []Arg
	// Digest is the sha256 of the point's canonical JSON.
	Digest string
	// CanonicalJSON is the point's effective configuration with sorted
	// keys.
	CanonicalJSON []byte
}

// Axis is one swept field and its value at a point.
type Axis struct {
	// Section is flags, bench or env.
	Section string
	Name    string
	Value   any
}

// Label is the axis as written in point ids: "ub=16" for flags,
// "bench.n=64" otherwise.
func (a Axis) Label() string {
	v := RenderValue(a.Value)
	if a.Section == "flags" {
		return a.Name + "=" + v
	}
	return a.Section + "." + a.Name + "=" + v
}

// Path is the field path of the axis, e.g. "flags.ub".
func (a Axis) Path() string { return a.Section + "." + a.Name }

var idPart = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

// Packages lists the experiment package directories under root, relative to
// the experiments directory, slash-separated and sorted.
func Packages(root string) ([]string, error) {
	base := filepath.Join(root, ExperimentsDir)
	fi, err := os.Stat(base)
	if err != nil || !fi.IsDir() {
		return nil, noExperiments(fmt.Sprintf("no %s/ directory in the module", ExperimentsDir))
	}
	var pkgs []string
	err = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != base && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") || d.Name() == "cue.mod") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".cue") && !strings.HasPrefix(d.Name(), ".") {
			rel, _ := filepath.Rel(base, filepath.Dir(p))
			rel = filepath.ToSlash(rel)
			if len(pkgs) == 0 || pkgs[len(pkgs)-1] != rel {
				pkgs = append(pkgs, rel)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(pkgs)
	return dedupe(pkgs), nil
}

func dedupe(s []string) []string {
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// schemaOverlay maps the on-disk location of the schema package in the
// module to the embedded files, so the binary's schema always wins.
func schemaOverlay(root, modulePath string) (map[string]load.Source, string, error) {
	dir := filepath.Join(root, "cue.mod", "pkg", filepath.FromSlash(schema.ImportPath))
	if strings.TrimSuffix(modulePath, "@v0") == "github.com/rigorbench/rigor" {
		dir = filepath.Join(root, "schema")
	}
	files, err := schema.Files()
	if err != nil {
		return nil, "", err
	}
	ov := map[string]load.Source{}
	for _, f := range files {
		ov[filepath.Join(dir, f.Name)] = load.FromBytes(f.Src)
	}
	return ov, dir, nil
}

var moduleRe = regexp.MustCompile(`(?m)^\s*module:\s*"([^"]+)"`)

// ModulePath reads the CUE module path from cue.mod/module.cue.
func ModulePath(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "cue.mod", "module.cue"))
	if err != nil {
		return "", err
	}
	m := moduleRe.FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("cue.mod/module.cue: no module: field")
	}
	return string(m[1]), nil
}

// Load reads, validates and expands the experiments of a module. It
// returns an error only when nothing can be loaded at all (no module, no
// experiments directory); problems in experiments are in Set.Problems, and
// one broken experiment never hides the others.
func Load(opts Options) (*Set, error) {
	root := opts.Root
	modPath, err := ModulePath(root)
	if err != nil {
		return nil, fmt.Errorf("reading cue.mod/module.cue: %w", err)
	}
	pkgs, err := Packages(root)
	if err != nil {
		return nil, err
	}
	sel, err := newSelector(opts.Patterns)
	if err != nil {
		return nil, err
	}
	var load1 []string
	for _, p := range pkgs {
		if sel.wantsPackage(p) {
			load1 = append(load1, p)
		}
	}
	ov, schemaDir, err := schemaOverlay(root, modPath)
	if err != nil {
		return nil, err
	}
	s := &Set{Root: root, ctx: cuecontext.New(), schemaDir: schemaDir}
	s.releasing = opts.Release
	col := newCollector(root, schemaDir)

	if err := s.loadSchema(root, ov); err != nil {
		return nil, err
	}
	if len(load1) == 0 {
		if len(pkgs) == 0 {
			return s, noExperiments(fmt.Sprintf("no experiments: %s/ holds no .cue files", ExperimentsDir))
		}
		s.Problems = col.list()
		return s, sel.unmatched(s)
	}
	cfg := &load.Config{ModuleRoot: root, Dir: root, Overlay: ov}
	if !opts.Release {
		args := make([]string, len(load1))
		for i, p := range load1 {
			args[i] = "./" + ExperimentsDir + "/" + p
		}
		insts := load.Instances(args, cfg)
		for i, inst := range insts {
			s.loadChecked(load1[i], inst, sel, col, opts.Check)
		}
	} else {
		// One package at a time, each parsed, evaluated and let go
		// before the next: nothing of a package's CUE evaluation is
		// referenced once its experiments are decoded.
		for i, pkg := range load1 {
			if i > 0 {
				s.ctx = cuecontext.New()
				if err := s.loadSchema(root, ov); err != nil {
					return nil, err
				}
			}
			inst := load.Instances([]string{"./" + ExperimentsDir + "/" + pkg}, cfg)[0]
			for _, e := range s.loadChecked(pkg, inst, sel, col, opts.Check) {
				s.release(e)
			}
			clear(s.files) // the next package has files of its own
		}
	}
	// Problems found by opts.Check were added with AddProblem meanwhile.
	s.Problems = append(col.list(), s.Problems...)
	sort.SliceStable(s.Experiments, func(i, j int) bool { return s.Experiments[i].ID < s.Experiments[j].ID })
	return s, sel.unmatched(s)
}

func (s *Set) loadSchema(root string, ov map[string]load.Source) error {
	// The schema is loaded through a tiny package that imports it, so the
	// module's own resolution (cue.mod/pkg or the module itself) is used.
	dir := filepath.Join(root, ".rigor-schema-probe")
	file := filepath.Join(dir, "probe.cue")
	ov2 := map[string]load.Source{}
	for k, v := range ov {
		ov2[k] = v
	}
	ov2[file] = load.FromString("package probe\nimport \"" + schema.ImportPath + "\"\nschema\n")
	cfg := &load.Config{ModuleRoot: root, Dir: root, Overlay: ov2}
	insts := load.Instances([]string{file}, cfg)
	if len(insts) != 1 || insts[0].Err != nil {
		if len(insts) == 1 {
			return fmt.Errorf("loading the embedded schema: %w", insts[0].Err)
		}
		return fmt.Errorf("loading the embedded schema")
	}
	v := s.ctx.BuildInstance(insts[0])
	if v.Err() != nil {
		return fmt.Errorf("building the embedded schema: %w", v.Err())
	}
	s.schema = v
	s.refs = nil
	// The family table is read once, from the first schema built.
	return readFamiliesOnce(func() (cue.Value, error) { return v, nil })
}

// Schema returns the schema package value.
func (s *Set) Schema() cue.Value { return s.schema }

// Context returns the CUE context the set was built in.
func (s *Set) Context() *cue.Context { return s.ctx }

// FlagTable returns the flag table of an engine family ("flags") or its
// bench workload ("bench"); family is a [TableKey].
func (s *Set) FlagTable(family, section string) *FlagTable {
	f, serve, ok := familyOf(family)
	if !ok {
		return nil
	}
	return f.table(serve, section)
}

// release drops the experiment's CUE values, so that its package's
// evaluation can be collected, and moves its position to a copy of its
// file that holds only the line table (a parsed file's token.File keeps
// the file's syntax alive).
func (s *Set) release(e *Experiment) {
	if f := e.Pos.File(); f != nil {
		if s.files == nil {
			s.files = map[*token.File]*token.File{}
		}
		nf := s.files[f]
		if nf == nil {
			nf = token.NewFile(f.Name(), -1, f.Size())
			nf.SetLines(f.Lines())
			s.files[f] = nf
		}
		e.Pos = nf.Pos(e.Pos.Offset(), token.NoRelPos)
	}
	e.Value, e.Requires = cue.Value{}, cue.Value{}
	for _, p := range e.Points {
		p.Value = cue.Value{}
	}
}

// loadChecked loads a package and runs check on each of its experiments
// that has no problems; it returns the package's experiments.
func (s *Set) loadChecked(pkg string, inst *build.Instance, sel *selector, col *collector, check func(*Set, *Experiment)) []*Experiment {
	first := len(s.Experiments)
	s.loadPackage(pkg, inst, sel, col)
	if check != nil {
		for _, e := range s.Experiments[first:] {
			if !e.Broken {
				check(s, e)
			}
		}
	}
	return s.Experiments[first:]
}

func (s *Set) loadPackage(pkg string, inst *build.Instance, sel *selector, col *collector) {
	if s.checkFiles(pkg, inst, col) {
		// A file of the package leaves the module: none of its
		// experiments may be locked or run.
		defer func() {
			for _, e := range s.Experiments {
				if e.Package == pkg {
					e.Broken = true
				}
			}
		}()
	}
	if inst.Err != nil {
		before := col.count()
		col.addCUE(pkg, "", inst.Err, s, nil, token.NoPos)
		col.pointAtMisspeltRefs(s, inst, before)
		return
	}
	v := s.ctx.BuildInstance(inst)
	if v.Err() != nil && !v.Exists() {
		before := col.count()
		col.addCUE(pkg, "", v.Err(), s, nil, token.NoPos)
		col.pointAtMisspeltRefs(s, inst, before)
		return
	}
	def := s.schema.LookupPath(cue.ParsePath("#Experiment"))
	it, err := v.Fields()
	if err != nil {
		// A package-level error (e.g. a conflict at the top): report it
		// and carry on with what can be read.
		before := col.count()
		col.addCUE(pkg, "", err, s, nil, token.NoPos)
		col.pointAtMisspeltRefs(s, inst, before)
		return
	}
	for it.Next() {
		sel1 := it.Selector()
		name := sel1.Unquoted()
		id := pkg + "/" + name
		if pkg == "." {
			id = name
		}
		if !sel.wantsExperiment(id, pkg) {
			continue
		}
		fv := it.Value()
		e := &Experiment{ID: id, Package: pkg, Name: name, Pos: fv.Pos()}
		if !idPart.MatchString(name) {
			col.add(&Problem{IDs: []string{id}, Path: name, Msg: fmt.Sprintf("experiment name %q is not a valid id part", name),
				Pos:   userPositions([]token.Pos{fv.Pos()}, col.schemaDir),
				Hints: []string{"experiment names start with a letter and hold letters, digits, _ and -; name helpers with a leading underscore (_base) to keep them out of the experiment list"}})
			e.Broken = true
			s.Experiments = append(s.Experiments, e)
			continue
		}
		ev := fv
		if !isExperiment(fv) || !s.closedLike(fv) {
			// The user did not write schema.#Experiment & {…}, or embedded
			// it ({_base, bench: {…}}), which CUE leaves open to the fields
			// written beside it: apply it, so that the value is closed as
			// the & spelling is, with the same errors. Unifying a value
			// that already holds the definition again would double the
			// evaluation work, so it is done only here.
			ev = fv.Unify(def)
		}
		e.Value = ev
		e.Requires = ev.LookupPath(cue.MakePath(cue.Def("requires")))
		if e.Requires.Exists() {
			e.RequiresLines = RequiresLines(e.Requires)
		}
		before := col.count()
		if err := ev.Validate(cue.Concrete(true)); err != nil {
			col.addCUE(pkg, id, err, s, &ev, e.Pos)
			// CUE reports a field the schema does not allow only when
			// nothing else failed: an unknown family or a wrong type
			// hid a misspelt field name.
			col.addUnknownFields(pkg, id, s, fv)
		}
		if e.Requires.Exists() {
			if err := e.Requires.Validate(); err != nil {
				col.addCUE(pkg, id, err, s, &ev, e.Pos)
			}
		}
		if col.count() > before || col.hasID(id) {
			e.Broken = true
			s.Experiments = append(s.Experiments, e)
			continue
		}
		spec, canon, err := specFromValue(ev)
		if err != nil {
			col.add(&Problem{IDs: []string{id}, Msg: err.Error(), Pos: userPositions([]token.Pos{e.Pos}, col.schemaDir)})
			e.Broken = true
			s.Experiments = append(s.Experiments, e)
			continue
		}
		e.Spec, e.canonical = spec, canon
		s.check(e, col)
		if !e.Broken {
			s.checkQuality(e, v, def, col)
		}
		if !e.Broken {
			s.expand(e, col)
		}
		s.Experiments = append(s.Experiments, e)
	}
	s.checkDuplicates(col)
}

// checkFiles reports the files of a package that CUE would skip or that
// leave the module: a .cue file without a package clause beside packaged
// files (its experiments would silently vanish), and a file whose real
// path is outside the module. It reports whether a file leaves the
// module.
func (s *Set) checkFiles(pkg string, inst *build.Instance, col *collector) (escapes bool) {
	dir := path.Join(ExperimentsDir, pkg)
	for _, f := range inst.IgnoredFiles {
		if f.ExcludeReason == nil || !strings.Contains(f.ExcludeReason.Error(), "no package name") {
			continue
		}
		col.add(&Problem{Package: pkg, Msg: fmt.Sprintf("this file has no package clause, so its experiments are not part of package %s", inst.PkgName),
			Pos:   []token.Pos{filePos(f.Filename)},
			Hints: []string{fmt.Sprintf("start the file with 'package %s', as the other files of %s/ do", inst.PkgName, dir)}})
	}
	files := append([]*build.File(nil), inst.BuildFiles...)
	files = append(files, inst.IgnoredFiles...)
	for _, f := range files {
		rel, err := filepath.Rel(s.Root, f.Filename)
		if err != nil || !filepath.IsLocal(rel) {
			continue
		}
		if _, err := Confine(s.Root, filepath.ToSlash(rel)); err != nil {
			var esc *EscapeError
			if errors.As(err, &esc) {
				col.add(&Problem{Package: pkg, Msg: fmt.Sprintf("experiment file leaves the module: %s is a symlink to %s", esc.Link, esc.Target),
					Pos:   []token.Pos{filePos(f.Filename)},
					Hints: []string{"experiments are part of the module: copy the file in instead of linking to it, so every clone sees the same experiments"}})
				escapes = true
			}
		}
	}
	return escapes
}

// filePos is the position of the start of a file.
func filePos(filename string) token.Pos {
	return token.NewFile(filename, -1, 1).Pos(0, token.NoRelPos)
}

func (s *Set) checkDuplicates(col *collector) {
	seen := map[string]*Experiment{}
	for _, e := range s.Experiments {
		k := strings.ToLower(e.ID)
		if o, ok := seen[k]; ok && o != e {
			col.add(&Problem{IDs: []string{e.ID}, Path: e.Name,
				Msg:   fmt.Sprintf("duplicate experiment id %q (also %q)", e.ID, o.ID),
				Pos:   userPositions([]token.Pos{e.Pos, o.Pos}, col.schemaDir),
				Hints: []string{"ids name results directories, which must differ on case-insensitive file systems too: rename one of them"}})
			e.Broken = true
			continue
		}
		seen[k] = e
	}
}

// check runs the checks that CUE cannot express: model source, patches,
// engine source per family.
func (s *Set) check(e *Experiment, col *collector) {
	bad := func(p string, msg string, hints ...string) {
		pos := userPositions(positionsOf(e.Value.LookupPath(cue.ParsePath(p))), col.schemaDir)
		if len(pos) == 0 {
			pos = []token.Pos{e.Pos}
		}
		col.add(&Problem{IDs: []string{e.ID}, Path: p, Msg: msg, Pos: pos, Hints: hints})
		e.Broken = true
	}
	m := e.Spec.Model
	fam := e.Spec.Engine.Family
	checkAPIKeyEnv(e, bad)
	if fam == FamilyEndpoint {
		s.checkEndpoint(e, bad)
		return
	}
	if m.Name != "" {
		bad("model.name", "model.name is for the endpoint family, whose model rigor cannot lock",
			"give the model's bytes with hf, path or synthetic")
	}
	if m.HF == "" && m.Path == "" && m.Synthetic == nil {
		bad("model", "model has no source: set hf, path or synthetic",
			`write model: {hf: "owner/name", files: ["*.gguf"]}, model: path: "/models/x.gguf", or model: synthetic: {…}`)
	}
	if m.Synthetic != nil && (m.HF != "" || m.Path != "") {
		bad("model.synthetic", "model.synthetic cannot be combined with hf or path")
	}
	src := e.Spec.Engine.Source
	kinds := 0
	for _, k := range []string{src.Git, src.NPM, src.Python, src.Path, src.URL} {
		if k != "" {
			kinds++
		}
	}
	switch {
	case kinds == 0:
		bad("engine.source", "engine.source is empty: set one of git, npm, python, path or url",
			sourceHint(fam))
	case kinds > 1:
		bad("engine.source", "engine.source sets more than one of git, npm, python, path and url")
	default:
		k := src.Kind()
		row, ok := LookupFamily(fam)
		if !ok {
			bad("engine.family", fmt.Sprintf("unknown engine family %q", fam))
			return
		}
		takes := strings.Join(row.Sources, " or ")
		switch {
		case row.Takes(k):
		case k == "url":
			bad("engine.source.url", fmt.Sprintf("engine family %s cannot come from a url source (it takes %s)", fam, takes),
				sourceHint(fam), `to measure a server rigor did not start, use engine: {family: "endpoint", source: url: "…"}`)
		default:
			bad("engine.source."+k, fmt.Sprintf("engine family %s cannot come from a %s source (it takes %s)", fam, k, takes), sourceHint(fam))
		}
		if k == "npm" && !ValidNPMVersion(src.NPM) {
			bad("engine.source.npm", fmt.Sprintf("engine.source.npm %q is not an npm version or range", src.NPM),
				`write a version ("3.22.1"), a range ("^3.22.1", "3.x", ">=3.22 <4") or a dist-tag ("latest"); the lock pins the version it resolves to`)
		}
		if k == "git" && src.Ref != "" && strings.ContainsAny(src.Ref, " \t\n~^:?*[\\") {
			bad("engine.source.ref", fmt.Sprintf("engine.source.ref %q is not a valid git ref", src.Ref))
		}
	}
	if len(e.Spec.Engine.Patches) > 0 && src.Kind() != "git" {
		bad("engine.patches", "engine.patches need a git source: patches apply to a checkout")
	}
	for i, p := range e.Spec.Engine.Patches {
		ppath := fmt.Sprintf("engine.patches[%d]", i)
		if filepath.IsAbs(p) || strings.HasPrefix(path.Clean(filepath.ToSlash(p)), "../") || path.Clean(filepath.ToSlash(p)) == ".." {
			bad(ppath, fmt.Sprintf("patch %q is outside the module", p),
				"patches are part of the experiment: copy the file into the module (e.g. patches/) and give its path relative to the module root, so the lock and every clone see the same bytes")
			continue
		}
		real, err := Confine(s.Root, p)
		var esc *EscapeError
		if errors.As(err, &esc) {
			bad(ppath, fmt.Sprintf("patch %q leaves the module: %s is a symlink to %s", p, esc.Link, esc.Target),
				"patches are part of the experiment: copy the file into the module (e.g. patches/) instead of linking to it, so the lock and every clone see the same bytes")
			continue
		}
		fi, err := os.Stat(real)
		if err != nil || fi.IsDir() {
			bad(ppath, fmt.Sprintf("patch %q does not exist", p),
				"patch paths are relative to the module root, the directory that holds cue.mod/")
		}
	}
	if row, ok := LookupFamily(fam); e.Spec.Engine.RPC != nil && (!ok || !row.RPC) {
		bad("engine.rpc", "engine.rpc is only for "+rpcFamilies())
	}
	if b := e.Spec.Engine.Build; b.Flavour != "" && fam != FamilyNodeLlama {
		bad("engine.build.flavour", "engine.build.flavour is only for node-llama-cpp",
			"llama.cpp engines are built from their git source (or source: path for binaries built elsewhere); drop flavour")
	} else if b.LocalBuild() {
		if b.BackendOrCPU() != "cpu" {
			bad("engine.build.backend", fmt.Sprintf("engine.build.backend %q: node-llama-cpp's localBuild is CPU only in rigor", b.Backend),
				"drop backend (or set flavour: \"prebuilt\" to run node-llama-cpp's prebuilt GPU binaries)")
		}
		if len(b.CMake)+len(b.Targets)+len(b.Env) > 0 {
			bad("engine.build", "engine.build.cmake, targets and env are not used by node-llama-cpp's localBuild",
				"node-llama-cpp builds its bundled llama.cpp with its own options (GGML_NATIVE for this CPU); drop them")
		}
	}
	if fam == FamilyVLLM && e.Spec.Serve == nil {
		if _, ok := e.Spec.Bench["mode"]; !ok {
			bad("bench.mode", "bench.mode is required for vllm: throughput, latency or serve")
		}
	}
}

// sourceHint says how an engine of the family is sourced (#Families'
// hint).
func sourceHint(fam string) string {
	if row, ok := LookupFamily(fam); ok {
		return row.Hint
	}
	return ""
}

// rpcFamilies names the families that start rpc-server workers:
// "llama.cpp and ik_llama.cpp".
func rpcFamilies() string {
	list, _ := familyTable()
	var names []string
	for _, f := range list {
		if f.RPC {
			names = append(names, f.Name)
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// specFromValue decodes a concrete value into a Spec and its canonical JSON
// (sorted keys), from one JSON encoding: decoding through encoding/json is
// several times cheaper than cue's Decode.
func specFromValue(v cue.Value) (Spec, []byte, error) {
	var sp Spec
	b, err := v.MarshalJSON()
	if err != nil {
		return sp, nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&sp); err != nil {
		return sp, nil, err
	}
	var x any
	dec = json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&x); err != nil {
		return sp, nil, err
	}
	canon, err := json.Marshal(x)
	return sp, canon, err
}

// isExperiment reports whether v is already closed by #Experiment: it
// rejects an unknown field and has the #requires definition.
func isExperiment(v cue.Value) bool {
	if v.Allows(cue.Str("rigor__not_a_field")) {
		return false
	}
	return v.LookupPath(cue.MakePath(cue.Def("requires"))).Exists() && v.Allows(cue.Str("timeoutSeconds"))
}

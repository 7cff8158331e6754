package spec

import (
	"os"
	"path/filepath"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/parser"

	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/token"
)

// expand turns an experiment into its points: the cartesian product of its
// sweep axes, first axis outermost, values in the order written.
func (s *Set) expand(e *Experiment, col *collector) {
	axes, ok := s.sweepAxes(e, col)
	if !ok {
		e.Broken = true
		return
	}
	if len(axes) == 0 {
		// No sweep: the point is the experiment, already validated.
		p := &Point{ID: e.ID, Experiment: e, Value: e.Value, Spec: e.Spec, CanonicalJSON: e.canonical}
		if err := s.finishPoint(p); err != nil {
			col.add(&Problem{IDs: []string{e.ID}, Msg: err.Error(), Pos: userPositions([]token.Pos{e.Pos}, col.schemaDir)})
			e.Broken = true
			return
		}
		e.Points = append(e.Points, p)
		return
	}
	for _, combo := range Cartesian(axes) {
		pv := e.Value
		for _, a := range combo {
			pv = pv.FillPath(cue.ParsePath(a.Section+"."+quoteLabel(a.Name)), a.Value)
		}
		p := &Point{ID: PointID(e.ID, combo), Experiment: e, Axes: combo, Value: pv}
		if err := pv.Validate(cue.Concrete(true)); err != nil {
			col.addCUE(e.Package, e.ID, err, s, &pv, e.Pos)
			e.Broken = true
			return
		}
		sp, canon, err := specFromValue(pv)
		if err != nil {
			col.add(&Problem{IDs: []string{e.ID}, Msg: err.Error(), Pos: userPositions([]token.Pos{e.Pos}, col.schemaDir)})
			e.Broken = true
			return
		}
		p.Spec, p.CanonicalJSON = sp, canon
		if err := s.finishPoint(p); err != nil {
			col.add(&Problem{IDs: []string{e.ID}, Msg: err.Error(), Pos: userPositions([]token.Pos{e.Pos}, col.schemaDir)})
			e.Broken = true
			return
		}
		if s.releasing {
			// Each point's evaluation is garbage once the point is
			// decoded; kept, 10,000 points took 7 GB.
			p.Value = cue.Value{}
		}
		e.Points = append(e.Points, p)
	}
}

func quoteLabel(s string) string {
	if idPart.MatchString(s) && !strings.Contains(s, "-") {
		return s
	}
	return fmt.Sprintf("%q", s)
}

func (s *Set) finishPoint(p *Point) error {
	fam := p.Spec.TableKey()
	var err error
	if t := s.FlagTable(fam, "flags"); t != nil {
		if p.Flags, err = renderArgs(t, p.Spec.Flags); err != nil {
			return err
		}
	}
	if t := s.FlagTable(fam, "bench"); t != nil {
		if p.Bench, err = renderArgs(t, p.Spec.Bench); err != nil {
			return err
		}
	}
	sum := sha256.Sum256(p.CanonicalJSON)
	p.Digest = "sha256:" + hex.EncodeToString(sum[:])
	return nil
}

// sweepAxes reads and checks the sweep of an experiment.
func (s *Set) sweepAxes(e *Experiment, col *collector) ([][]Axis, bool) {
	sw := e.Value.LookupPath(cue.ParsePath("sweep"))
	if !sw.Exists() {
		return nil, true
	}
	ok := true
	bad := func(at cue.Value, also cue.Value, pth, msg string, hints ...string) {
		pos := append([]token.Pos{at.Pos()}, positionsOf(at)...)
		for _, c := range conjuncts(at) {
			pos = append(pos, c.Pos())
		}
		if also.Exists() {
			pos = append(pos, also.Pos())
		}
		if len(userPositions(pos, col.schemaDir)) == 0 {
			pos = append(pos, e.Pos)
		}
		col.add(&Problem{IDs: []string{e.ID}, Path: pth, Msg: msg, Pos: userPositions(pos, col.schemaDir), Hints: hints})
		ok = false
	}
	var axes [][]Axis
	fam := e.Spec.TableKey()
	for _, section := range []string{"flags", "bench", "env"} {
		sec := sw.LookupPath(cue.ParsePath(section))
		if !sec.Exists() {
			continue
		}
		it, err := sec.Fields()
		if err != nil {
			continue
		}
		for it.Next() {
			name := it.Selector().Unquoted()
			lv := it.Value()
			pth := "sweep." + section + "." + name
			if section != "env" {
				if t := s.FlagTable(fam, section); t != nil {
					if _, found := t.Lookup(name); !found {
						hint := []string{}
						if n := nearest(name, t.Names()); n != "" {
							hint = append(hint, fmt.Sprintf("did you mean %s?", n))
						}
						bad(lv, cue.Value{}, pth, fmt.Sprintf("cannot sweep %s.%s: %s has no %s %q", section, name, benchTool(fam), map[string]string{"flags": "flag", "bench": "workload field"}[section], name), hint...)
						continue
					}
				}
			}
			target := e.Value.LookupPath(cue.ParsePath(section + "." + quoteLabel(name)))
			if target.Exists() && target.IsConcrete() {
				if _, hasDefault := target.Default(); !hasDefault {
					v, _ := target.MarshalJSON()
					bad(lv, target, pth, fmt.Sprintf("cannot sweep %s.%s: the experiment sets it concretely to %s", section, name, v),
						fmt.Sprintf("give the base a default instead (%s: *%s | _), so each point can set its own value", name, v))
					continue
				}
			}
			var vals []any
			if err := lv.Decode(&vals); err != nil || len(vals) == 0 {
				bad(lv, cue.Value{}, pth, "a sweep axis is a non-empty list of values")
				continue
			}
			seen := map[string]bool{}
			var row []Axis
			for _, v := range vals {
				k := RenderValue(v)
				if seen[k] {
					bad(lv, cue.Value{}, pth, fmt.Sprintf("sweep axis %s.%s lists %s twice", section, name, k))
					break
				}
				seen[k] = true
				row = append(row, Axis{Section: section, Name: name, Value: normalizeNumber(v)})
			}
			axes = append(axes, row)
		}
	}
	return axes, ok
}

func normalizeNumber(v any) any {
	if f, ok := v.(float64); ok && f == float64(int64(f)) {
		return int64(f)
	}
	return v
}

// Cartesian returns every combination of one value per axis, the first axis
// varying slowest. No axes give one empty combination.
func Cartesian(axes [][]Axis) [][]Axis {
	out := [][]Axis{nil}
	for _, axis := range axes {
		var next [][]Axis
		for _, prefix := range out {
			for _, v := range axis {
				c := make([]Axis, len(prefix), len(prefix)+1)
				copy(c, prefix)
				next = append(next, append(c, v))
			}
		}
		out = next
	}
	return out
}

// PointID names a point: the experiment id, plus the axes in brackets.
func PointID(expID string, axes []Axis) string {
	if len(axes) == 0 {
		return expID
	}
	labels := make([]string, len(axes))
	for i, a := range axes {
		labels[i] = a.Label()
	}
	return expID + "[" + strings.Join(labels, ",") + "]"
}

// SweptMap returns the axes as a map from field path to value, the form
// result records use to match points.
func (p *Point) SweptMap() map[string]any {
	if len(p.Axes) == 0 {
		return nil
	}
	m := map[string]any{}
	for _, a := range p.Axes {
		m[a.Path()] = a.Value
	}
	return m
}

// SpecJSON is the point's canonical configuration as a raw JSON message.
func (p *Point) SpecJSON() json.RawMessage { return json.RawMessage(p.CanonicalJSON) }

// ---- selection ----

// MalformedIDError reports an experiment id on the command line that cannot
// be an id.
type MalformedIDError struct {
	ID     string
	Reason string
}

func (e *MalformedIDError) Error() string {
	return fmt.Sprintf("malformed experiment id %q: %s", e.ID, e.Reason)
}

// NoMatchError reports patterns that selected nothing.
type NoMatchError struct {
	Patterns []string
	// Suggestions are the nearest existing ids.
	Suggestions []string
}

func (e *NoMatchError) Error() string {
	if len(e.Patterns) == 1 {
		return fmt.Sprintf("no experiment matches %q", e.Patterns[0])
	}
	return fmt.Sprintf("no experiment matches %s", strings.Join(quoteAll(e.Patterns), ", "))
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = fmt.Sprintf("%q", x)
	}
	return out
}

var patternRe = regexp.MustCompile(`^[A-Za-z0-9_.*?\-\[\]]+(/[A-Za-z0-9_.*?\-\[\]]+)*$`)

type selector struct {
	pats    []string
	matched map[string]bool
}

// SplitPointID splits "exp[ub=16]" into "exp" and "ub=16".
func SplitPointID(id string) (exp, axes string) {
	if i := strings.IndexByte(id, '['); i > 0 && strings.HasSuffix(id, "]") {
		return id[:i], id[i+1 : len(id)-1]
	}
	return id, ""
}

// ValidatePattern checks that an id or pattern typed by the user can name
// experiments.
func ValidatePattern(p string) error {
	exp, _ := SplitPointID(p)
	switch {
	case p == "":
		return &MalformedIDError{ID: p, Reason: "empty"}
	case strings.Contains(exp, "[") || strings.Contains(exp, "]") && !strings.Contains(exp, "*"):
		return &MalformedIDError{ID: p, Reason: "brackets belong at the end, around a point's swept values: exp[ub=16]"}
	case strings.HasPrefix(exp, "/") || strings.HasSuffix(exp, "/") || strings.Contains(exp, "//"):
		return &MalformedIDError{ID: p, Reason: "ids are <package directory>/<experiment name>, without leading, trailing or double slashes"}
	case strings.HasSuffix(exp, ".cue"):
		return &MalformedIDError{ID: p, Reason: "give an experiment id, not a file name"}
	case !patternRe.MatchString(exp):
		return &MalformedIDError{ID: p, Reason: "ids hold letters, digits, _, -, . and / (and * ? in patterns)"}
	}
	if _, err := path.Match(exp, ""); err != nil {
		return &MalformedIDError{ID: p, Reason: "bad pattern"}
	}
	return nil
}

func newSelector(pats []string) (*selector, error) {
	for _, p := range pats {
		if err := ValidatePattern(p); err != nil {
			return nil, err
		}
	}
	return &selector{pats: pats, matched: map[string]bool{}}, nil
}

func (s *selector) all() bool {
	if len(s.pats) == 0 {
		return true
	}
	for _, p := range s.pats {
		if p == "..." || p == "./..." {
			return true
		}
	}
	return false
}

func (s *selector) wantsPackage(pkg string) bool {
	if s.all() {
		return true
	}
	for _, p := range s.pats {
		p, _ = SplitPointID(p)
		if m, _ := path.Match(p, pkg); m {
			return true
		}
		if strings.HasPrefix(p, pkg+"/") || strings.HasPrefix(pkg, p+"/") {
			return true
		}
		if i := strings.LastIndex(p, "/"); i >= 0 {
			if m, _ := path.Match(p[:i], pkg); m {
				return true
			}
		}
		if pkg == "." {
			return true
		}
	}
	return false
}

func (s *selector) wantsExperiment(id, pkg string) bool {
	if s.all() {
		return true
	}
	want := false
	for _, p := range s.pats {
		p0, _ := SplitPointID(p)
		m1, _ := path.Match(p0, id)
		m2, _ := path.Match(p0, pkg)
		if m1 || m2 || strings.HasPrefix(id, p0+"/") {
			s.matched[p] = true
			want = true
		}
	}
	return want
}

func (s *selector) unmatched(set *Set) error {
	if s.all() {
		return nil
	}
	// A package that failed to load as a whole has no experiments to
	// match: its errors already say why.
	failed := map[string]bool{}
	for _, pr := range set.Problems {
		if len(pr.IDs) == 0 && pr.Package != "" {
			failed[pr.Package] = true
		}
	}
	var missing []string
	for _, p := range s.pats {
		if !s.matched[p] && !failed[strings.SplitN(p, "/", 2)[0]] {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	e := &NoMatchError{Patterns: missing}
	ids, _ := AllIDs(set.Root)
	for _, m := range missing {
		m0, _ := SplitPointID(m)
		if n := nearest(m0, ids); n != "" && n != m0 {
			e.Suggestions = append(e.Suggestions, n)
		}
	}
	sort.Strings(e.Suggestions)
	return e
}

// AllIDs lists the ids of the experiments in a module cheaply, without
// evaluating CUE (top-level fields of each package's files), for
// suggestions.
func AllIDs(root string) ([]string, error) {
	pkgs, err := Packages(root)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, pkg := range pkgs {
		ids = append(ids, pkg)
		names, _ := topLevelNames(root, pkg)
		for _, n := range names {
			ids = append(ids, pkg+"/"+n)
		}
	}
	return ids, nil
}

// topLevelNames parses the package's files and returns their regular
// top-level field names.
func topLevelNames(root, pkg string) ([]string, error) {
	dir := filepath.Join(root, ExperimentsDir, filepath.FromSlash(pkg))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, en := range entries {
		if en.IsDir() || !strings.HasSuffix(en.Name(), ".cue") {
			continue
		}
		f, err := parser.ParseFile(filepath.Join(dir, en.Name()), nil)
		if err != nil {
			continue
		}
		for _, d := range f.Decls {
			fld, ok := d.(*ast.Field)
			if !ok {
				continue
			}
			name, _, err := ast.LabelName(fld.Label)
			if err != nil || strings.HasPrefix(name, "_") || strings.HasPrefix(name, "#") || seen[name] {
				continue
			}
			seen[name] = true
			out = append(out, name)
		}
	}
	return out, nil
}

// conjuncts returns the values a value was unified from (the list a
// variant wrote, behind the experiment that embeds it), for positions.
func conjuncts(v cue.Value) []cue.Value {
	op, args := v.Expr()
	if op != cue.AndOp {
		return nil
	}
	return args
}

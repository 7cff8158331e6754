package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/format"
	"cuelang.org/go/cue/token"
)

// Problem is one error in the experiments, reported once even when several
// experiments inherit it.
type Problem struct {
	// IDs are the experiments the problem affects; empty for a package-level
	// problem such as a syntax error.
	IDs []string
	// Package is the experiments package, for package-level problems.
	Package string
	// Path is the field path inside the experiment, e.g. "flags.nkvo".
	Path string
	Msg  string
	// Pos are the positions in the user's files, most relevant first.
	Pos   []token.Pos
	Hints []string
}

// Error renders the problem on one line without hints.
func (p *Problem) Error() string {
	var b strings.Builder
	if len(p.Pos) > 0 {
		b.WriteString(FormatPos(p.Pos[0], ""))
		b.WriteString(": ")
	}
	if len(p.IDs) > 0 {
		b.WriteString(p.IDs[0])
		b.WriteString(": ")
	}
	if p.Path != "" && !strings.HasPrefix(p.Msg, p.Path) {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// FormatPos renders a position as file:line:col, relative to dir when the
// file is below it.
func FormatPos(p token.Pos, dir string) string {
	f := p.Filename()
	if dir != "" {
		if rel, err := filepath.Rel(dir, f); err == nil && !strings.HasPrefix(rel, "..") {
			f = rel
		}
	}
	return fmt.Sprintf("%s:%d:%d", filepath.ToSlash(f), p.Line(), p.Column())
}

type collector struct {
	root, schemaDir string
	probs           []*Problem
	byKey           map[string]*Problem
	ids             map[string]bool
}

func newCollector(root, schemaDir string) *collector {
	return &collector{root: root, schemaDir: schemaDir, byKey: map[string]*Problem{}, ids: map[string]bool{}}
}

func (c *collector) count() int           { return len(c.probs) }
func (c *collector) hasID(id string) bool { return c.ids[id] }

func (c *collector) add(p *Problem) {
	var pos []string
	for _, x := range p.Pos {
		pos = append(pos, x.String())
	}
	key := p.Package + "\x00" + p.Path + "\x00" + p.Msg + "\x00" + strings.Join(pos, ",")
	for _, id := range p.IDs {
		c.ids[id] = true
	}
	if old, ok := c.byKey[key]; ok {
		for _, id := range p.IDs {
			if !contains(old.IDs, id) {
				old.IDs = append(old.IDs, id)
			}
		}
		return
	}
	c.byKey[key] = p
	c.probs = append(c.probs, p)
}

func contains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

func (c *collector) list() []*Problem {
	out := append([]*Problem(nil), c.probs...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if len(a.Pos) == 0 || len(b.Pos) == 0 {
			return len(a.Pos) > len(b.Pos)
		}
		pa, pb := a.Pos[0], b.Pos[0]
		if pa.Filename() != pb.Filename() {
			return pa.Filename() < pb.Filename()
		}
		if pa.Line() != pb.Line() {
			return pa.Line() < pb.Line()
		}
		return pa.Column() < pb.Column()
	})
	return out
}

// familyFree are the sections of an experiment whose field names do not
// depend on the engine family ("" is the experiment itself); flags and
// bench do.
var familyFree = []string{"", "model", "model.synthetic", "engine", "engine.source", "engine.build", "quality"}

// addUnknownFields reports the fields of the user's experiment v that the
// schema does not have, in the sections whose fields do not depend on the
// family, unless a problem at that path was reported already.
func (c *collector) addUnknownFields(pkg, id string, s *Set, v cue.Value) {
	for _, sec := range familyFree {
		at := v
		if sec != "" {
			at = v.LookupPath(cue.ParsePath(sec))
		}
		if !at.Exists() {
			continue
		}
		probe := "x"
		if sec != "" {
			probe = sec + ".x"
		}
		allowed := schemaFieldsAt(s, probe)
		if len(allowed) == 0 {
			continue
		}
		it, err := at.Fields()
		if err != nil {
			continue
		}
		for it.Next() {
			name := it.Selector().String()
			if it.Selector().IsDefinition() || strings.HasPrefix(name, "_") || contains(allowed, name) {
				continue
			}
			fpath := name
			if sec != "" {
				fpath = sec + "." + name
			}
			if c.hasPath(id, fpath) {
				continue
			}
			p := &Problem{Package: pkg, IDs: []string{id}, Path: fpath, Msg: fmt.Sprintf("field %q is not allowed here", name),
				Pos: userPositions(positionsOf(it.Value()), c.schemaDir)}
			if n := nearest(name, allowed); n != "" {
				p.Hints = append(p.Hints, fmt.Sprintf("did you mean %s?", n))
			} else {
				p.Hints = append(p.Hints, "allowed here: "+strings.Join(allowed, ", "))
			}
			c.add(p)
		}
	}
}

// hasPath reports whether a problem of experiment id at fpath was added.
func (c *collector) hasPath(id, fpath string) bool {
	for _, p := range c.probs {
		if p.Path == fpath && contains(p.IDs, id) {
			return true
		}
	}
	return false
}

// userPositions keeps the valid positions outside the schema, most
// derived (last in file order) first, without duplicates.
func userPositions(ps []token.Pos, schemaDir string) []token.Pos {
	var out []token.Pos
	seen := map[string]bool{}
	for _, p := range ps {
		if !p.IsValid() || p.Filename() == "" {
			continue
		}
		if schemaDir != "" && strings.HasPrefix(p.Filename(), schemaDir+string(filepath.Separator)) {
			continue
		}
		if seen[p.String()] {
			continue
		}
		seen[p.String()] = true
		out = append(out, p)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Filename() != b.Filename() {
			return a.Filename() > b.Filename()
		}
		if a.Line() != b.Line() {
			return a.Line() > b.Line()
		}
		return a.Column() > b.Column()
	})
	return out
}

type cueErr struct {
	path   []string
	format string
	args   []any
	msg    string
	pos    []token.Pos
}

// addCUE converts a CUE error (a list) into problems with hints. exp is the
// experiment value for context, nil for package-level errors.
func (c *collector) addCUE(pkg, id string, err error, s *Set, exp *cue.Value, fallback token.Pos) {
	var errs []cueErr
	for _, e := range cueerrors.Errors(err) {
		format, args := e.Msg()
		ce := cueErr{path: e.Path(), format: format, args: args, msg: fmt.Sprintf(format, args...), pos: cueerrors.Positions(e)}
		if len(ce.pos) == 0 && e.Position().IsValid() {
			ce.pos = []token.Pos{e.Position()}
		}
		errs = append(errs, ce)
	}
	// Group by path: a disjunction failure arrives as a headline plus one
	// error per alternative.
	type group struct {
		path string
		errs []cueErr
	}
	var groups []*group
	byPath := map[string]*group{}
	for i, e := range errs {
		p := e.path
		if id != "" && len(p) > 0 {
			p = p[1:] // drop the experiment name
		}
		key := strings.Join(p, ".")
		if id == "" && key == "" {
			// Syntax and load errors each stand on their own, at their own
			// position, first error first, as cue vet prints them: joined,
			// the message of one got the position of another.
			key = fmt.Sprintf("\x00%d", i)
		}
		g, ok := byPath[key]
		if !ok {
			g = &group{path: key}
			byPath[key] = g
			groups = append(groups, g)
		}
		g.errs = append(g.errs, e)
	}
	for _, g := range groups {
		if strings.HasPrefix(g.path, "\x00") {
			g.path = ""
		}
		p := c.explain(pkg, id, g.path, g.errs, s, exp)
		if exp != nil && s != nil {
			c.pointAtMisspeltRef(p, s, *exp)
		}
		if len(p.Pos) == 0 && exp != nil && p.Path != "" {
			p.Pos = userPositions(positionsOf(exp.LookupPath(cue.ParsePath(p.Path))), c.schemaDir)
		}
		if len(p.Pos) == 0 && fallback.IsValid() {
			p.Pos = []token.Pos{fallback}
		}
		c.add(p)
	}
}

var disjHead = regexp.MustCompile(`^\d+ errors in empty disjunction`)

// nearestFlag suggests a flag of t for the unknown field name: by field
// name (nkov → nkvo), else by the command-line option it is written as
// (threads → t, whose option is --threads; batch_size → b), else the one
// flag whose doc names the word (threads → llama-bench's t, "the number
// of threads").
func nearestFlag(name string, t *FlagTable) string {
	if n := nearest(name, t.Names()); n != "" {
		return n
	}
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(s))
	}
	var options []string
	byOption := map[string]string{}
	for _, d := range t.Defs {
		o := norm(strings.TrimLeft(d.Spelling, "-"))
		options = append(options, o)
		byOption[o] = d.Name
	}
	if o := nearest(norm(name), options); o != "" {
		return byOption[o]
	}
	// "batch_size" and "batch-size" match "batch size" in a doc.
	words := regexp.MustCompile(`[-_]+`).Split(name, -1)
	for i := range words {
		words[i] = regexp.QuoteMeta(words[i])
	}
	word := regexp.MustCompile(`(?i)\b` + strings.Join(words, `[\s_-]?`) + `\b`)
	definition := regexp.MustCompile(`^\w+ (is|are|sets) `)
	var hits, defs []string
	for _, d := range t.Defs {
		first, _, _ := strings.Cut(d.Doc, ".")
		if word.MatchString(first) {
			hits = append(hits, d.Name)
			if definition.MatchString(first) {
				defs = append(defs, d.Name)
			}
		}
	}
	switch {
	case len(hits) == 1:
		return hits[0]
	case len(defs) == 1:
		return defs[0]
	}
	return ""
}

// flagList lists a flag table: each name with its option when there are
// few, the names alone when there are many.
func flagList(family string, t *FlagTable) string {
	var parts []string
	for _, d := range t.Defs {
		if len(t.Defs) <= 12 {
			parts = append(parts, fmt.Sprintf("%s (%s)", d.Name, d.Spelling))
		} else {
			parts = append(parts, d.Name)
		}
	}
	return fmt.Sprintf("the flags of %s: %s", benchTool(family), strings.Join(parts, ", "))
}

var mismatchedTypes = regexp.MustCompile(`mismatched types (\w+) and (\w+)`)

func flagSpelling(t *FlagTable, name string) string {
	if d, ok := t.Lookup(name); ok {
		return d.Spelling
	}
	return ""
}

// splitDisjunction finds the user's value among the conflicts of a failed
// disjunction: it is the value present in every conflict; the others are the
// alternatives.
func splitDisjunction(conflicts []cueErr) (user string, alts []string) {
	count := map[string]int{}
	for _, c := range conflicts {
		if len(c.args) < 2 {
			continue
		}
		seen := map[string]bool{}
		for _, a := range c.args[:2] {
			s := fmt.Sprint(a)
			if !seen[s] {
				count[s]++
				seen[s] = true
			}
		}
	}
	for s, n := range count {
		if n == len(conflicts) && (user == "" || s < user) {
			user = s
		}
	}
	if len(conflicts) == 1 {
		return "", nil
	}
	for _, c := range conflicts {
		for _, a := range c.args[:min(2, len(c.args))] {
			s := fmt.Sprint(a)
			if s != user && !contains(alts, s) {
				alts = append(alts, s)
			}
		}
	}
	return user, alts
}

func isQualityPath(p string) bool {
	switch p {
	case "flags.ctk", "flags.ctv", "flags.ser", "flags.speculativeConfig":
		return true
	}
	return false
}

func explainQuality(p *Problem, fpath string, conflicts []cueErr, exp *cue.Value) {
	kv, _ := exp.LookupPath(cue.ParsePath("quality.kvCache")).String()
	switch fpath {
	case "flags.ctk", "flags.ctv":
		if kv == "" {
			return
		}
		parts := strings.Split(kv, "/")
		want := parts[0]
		if fpath == "flags.ctv" {
			want = parts[len(parts)-1]
		}
		got := ""
		for _, c := range conflicts {
			if len(c.args) >= 2 {
				a, b := fmt.Sprint(c.args[0]), fmt.Sprint(c.args[1])
				if a == fmt.Sprintf("%q", want) {
					got = b
				} else if b == fmt.Sprintf("%q", want) {
					got = a
				}
			}
		}
		if got == "" {
			return
		}
		p.Msg = fmt.Sprintf("%s %s breaks the quality invariant kvCache: %q", fpath, got, kv)
		k, v := parts[0], parts[len(parts)-1]
		if fpath == "flags.ctk" {
			k = strings.Trim(got, `"`)
		} else {
			v = strings.Trim(got, `"`)
		}
		newKV := k
		if k != v {
			newKV = k + "/" + v
		}
		p.Hints = append(p.Hints, fmt.Sprintf("a %s cache changes model quality: if that is the point, say so with quality: {kvCache: %q, tradeoff: \"…\"}", strings.Trim(got, `"`), newKV))
	case "flags.ser":
		p.Msg = "flags.ser turns on smart expert reduction, which breaks the quality invariant expertReduction: false"
		p.Hints = append(p.Hints, "if dropping experts is intended, declare it: quality: expertReduction: true")
	case "flags.speculativeConfig":
		p.Msg = "flags.speculativeConfig turns on speculative decoding, which breaks the quality invariant speculative: false"
		p.Hints = append(p.Hints, "declare it: quality: speculative: true")
	}
}

func explainSynthetic(p *Problem, fpath string, exp *cue.Value) {
	get := func(f string) int64 {
		if exp == nil {
			return 0
		}
		n, _ := exp.LookupPath(cue.ParsePath("model.synthetic." + f)).Int64()
		return n
	}
	switch fpath {
	case "model.synthetic._headsDivideEmbd":
		p.Path = "model.synthetic.heads"
		p.Msg = fmt.Sprintf("impossible shape: heads (%d) must divide embd (%d)", get("heads"), get("embd"))
		p.Hints = append(p.Hints, "each attention head gets embd/heads dimensions: pick heads among the divisors of embd")
	case "model.synthetic._kvDivideHeads":
		p.Path = "model.synthetic.kvHeads"
		p.Msg = fmt.Sprintf("impossible shape: kvHeads (%d) must divide heads (%d)", get("kvHeads"), get("heads"))
	}
}

func explainIncomplete(p *Problem, fpath string, main *cueErr, exp *cue.Value) {
	if strings.Contains(main.msg, "|") {
		p.Msg = fmt.Sprintf("%s has no single value: %s", fpath, strings.TrimPrefix(main.msg, "incomplete value "))
		p.Hints = append(p.Hints, "two defaults (*a | int and *b | int) met and cancel each other out: set the value concretely in the experiment, or keep a default in one place only")
		return
	}
	p.Msg = fmt.Sprintf("%s is not concrete: %s", fpath, main.msg)
	p.Hints = append(p.Hints, "every field of a runnable experiment needs a value: set "+fpath+" (constraints such as >=1 belong in #requires, or need a default: *4 | >=1)")
}

func explainConflict(p *Problem, fpath string, c cueErr, root string) {
	if len(c.args) < 2 {
		return
	}
	a, b := fmt.Sprint(c.args[0]), fmt.Sprint(c.args[1])
	if strings.Contains(c.msg, "mismatched types") {
		return
	}
	// Both sides concrete: one experiment set the field, another tried to
	// change it.
	if len(p.Pos) >= 2 {
		p.Msg = fmt.Sprintf("%s is set to %s at %s and to %s: unification narrows, it never overrides", fpath, a, FormatPos(p.Pos[len(p.Pos)-1], root), b)
	}
	last := fpath
	if i := strings.LastIndex(fpath, "."); i >= 0 {
		last = fpath[i+1:]
	}
	typ := "int"
	if strings.HasPrefix(a, `"`) {
		typ = "string"
	} else if strings.Contains(a, ".") {
		typ = "number"
	} else if a == "true" || a == "false" {
		typ = "bool"
	}
	p.Hints = append(p.Hints, fmt.Sprintf("a variant can change only fields its base gives as a default: write %s: *%s | %s in the base, then %s: %s in the variant", last, a, typ, last, b))
}

// schemaFieldsAt lists the schema's field names at a path of #Experiment.
func schemaFieldsAt(s *Set, fpath string) []string {
	if s == nil || !s.schema.Exists() {
		return nil
	}
	parts := strings.Split(fpath, ".")
	v := s.schema.LookupPath(cue.ParsePath("#Experiment"))
	for _, part := range parts[:len(parts)-1] {
		v = v.LookupPath(cue.MakePath(cue.Str(part).Optional()))
		if !v.Exists() {
			v = s.schema.LookupPath(cue.ParsePath("#Experiment")).LookupPath(cue.ParsePath(strings.Join(parts[:len(parts)-1], ".")))
			break
		}
	}
	if !v.Exists() {
		return nil
	}
	it, err := v.Fields(cue.Optional(true), cue.Definitions(true))
	if err != nil {
		return nil
	}
	var out []string
	for it.Next() {
		n := strings.TrimSuffix(it.Selector().String(), "?")
		if strings.HasPrefix(n, "_") {
			continue
		}
		out = append(out, n)
	}
	return out
}

// benchTool names the benchmark program of an engine family, or its
// server for a serve table key ([TableKey]).
func benchTool(family string) string {
	f, serve, ok := familyOf(family)
	switch {
	case !ok:
		return family
	case serve:
		return f.ServerTool
	}
	return f.Tool
}

// positionsOf collects the positions of a value and of the operands of its
// expression, two levels deep, so that a value unified from the schema and
// the user's file yields the user's position too.
func positionsOf(v cue.Value) []token.Pos {
	if !v.Exists() {
		return nil
	}
	out := []token.Pos{v.Pos()}
	_, args := v.Expr()
	for _, a := range args {
		out = append(out, a.Pos())
		_, args2 := a.Expr()
		for _, b := range args2 {
			out = append(out, b.Pos())
		}
	}
	return out
}

// schemaAt returns the schema's constraint for a field path of an
// experiment of the given family.
func schemaAt(s *Set, family, fpath string) cue.Value {
	if s == nil || !s.schema.Exists() {
		return cue.Value{}
	}
	parts := strings.SplitN(fpath, ".", 2)
	if len(parts) == 2 && (parts[0] == "flags" || parts[0] == "bench") {
		if f, serve, ok := familyOf(family); ok {
			return s.schema.LookupPath(cue.ParsePath(tablePath(f.Name, serve, parts[0]))).LookupPath(cue.MakePath(cue.Str(parts[1]).Optional()))
		}
		return cue.Value{}
	}
	v := s.schema.LookupPath(cue.ParsePath("#Experiment"))
	for _, part := range strings.Split(fpath, ".") {
		v = v.LookupPath(cue.MakePath(cue.Str(part).Optional()))
		if !v.Exists() {
			return cue.Value{}
		}
	}
	return v
}

// schemaViolation checks the concrete values of the conflicts against the
// schema's constraint at the path: when one breaks it, the problem says so
// in the schema's terms rather than as a clash with another value.
func schemaViolation(p *Problem, s *Set, family, fpath string, conflicts []cueErr) bool {
	sv := schemaAt(s, family, fpath)
	if !sv.Exists() {
		return false
	}
	tried := map[string]bool{}
	for _, c := range conflicts {
		for _, a := range c.args[:min(2, len(c.args))] {
			lit := fmt.Sprint(a)
			if tried[lit] {
				continue
			}
			tried[lit] = true
			lv := s.ctx.CompileString(lit)
			if lv.Err() != nil || !lv.IsConcrete() {
				continue
			}
			err := sv.Unify(lv).Validate(cue.Concrete(true))
			if err == nil {
				continue
			}
			want := sv.IncompleteKind()
			got := lv.Kind()
			if want&got == 0 {
				p.Msg = fmt.Sprintf("%s is a %s, but %s takes %s", lit, got, fpath, kindName(want))
				switch {
				case got == cue.StringKind && want&(cue.IntKind|cue.FloatKind) != 0 && isNumber(strings.Trim(lit, `"`)):
					p.Hints = append(p.Hints, "numbers are written without quotes: "+lastPart(fpath)+": "+strings.Trim(lit, `"`))
				case got == cue.StringKind && want&(cue.IntKind|cue.FloatKind) != 0:
					p.Hints = append(p.Hints, fmt.Sprintf("%s takes %s, written without quotes", lastPart(fpath), kindName(want)))
				case want == cue.StringKind:
					p.Hints = append(p.Hints, "strings are quoted: "+lastPart(fpath)+": \""+lit+"\"")
				}
				return true
			}
			allowed := ""
			if b, ok := sv.Syntax(cue.Docs(false), cue.Attributes(false)).(ast.Expr); ok {
				if src, err := format.Node(b); err == nil {
					allowed = strings.TrimSpace(string(src))
				}
			}
			msg := err.Error()
			if strings.Contains(msg, "empty disjunction") && allowed != "" {
				p.Msg = fmt.Sprintf("%s: %s is not one of %s", fpath, lit, allowed)
				var alts []string
				for _, a := range strings.Split(allowed, "|") {
					alts = append(alts, strings.Trim(strings.TrimSpace(a), `"`))
				}
				if n := nearest(strings.Trim(lit, `"`), alts); n != "" {
					p.Hints = append(p.Hints, fmt.Sprintf("did you mean %q?", n))
				}
				if family != "" && strings.HasPrefix(fpath, "flags.") {
					p.Hints = append(p.Hints, fmt.Sprintf("these are the values %s accepts", benchTool(family)))
				}
				return true
			}
			p.Msg = fmt.Sprintf("%s: %s", fpath, stripPath(msg))
			if allowed != "" {
				p.Hints = append(p.Hints, fmt.Sprintf("%s takes %s", fpath, allowed))
			}
			return true
		}
	}
	return false
}

func stripPath(msg string) string {
	// "invalid value 0 (out of bound >=1)" from "x.y: invalid value …"
	if i := strings.Index(msg, "invalid value"); i > 0 {
		return msg[i:]
	}
	if i := strings.Index(msg, "conflicting values"); i > 0 {
		return msg[i:]
	}
	return msg
}

func lastPart(fpath string) string {
	if i := strings.LastIndex(fpath, "."); i >= 0 {
		return fpath[i+1:]
	}
	return fpath
}

func kindName(k cue.Kind) string {
	switch {
	case k == cue.IntKind:
		return "an int"
	case k == cue.NumberKind || k == cue.FloatKind:
		return "a number"
	case k == cue.StringKind:
		return "a string"
	case k == cue.BoolKind:
		return "a bool"
	case k == cue.ListKind:
		return "a list"
	case k == cue.StructKind:
		return "a struct"
	}
	return k.String()
}

// PositionsOf returns the positions of a value in the user's files (not the
// schema), most derived first.
func (s *Set) PositionsOf(v cue.Value) []token.Pos {
	return userPositions(positionsOf(v), s.schemaDir)
}

// AddProblem records a problem found outside the loader (an engine refusing
// a plan, say) and marks the experiment broken.
func (s *Set) AddProblem(e *Experiment, path, msg string, hints ...string) {
	pos := s.PositionsOf(e.Value.LookupPath(cue.ParsePath(path)))
	if len(pos) == 0 {
		pos = []token.Pos{e.Pos}
	}
	e.Broken = true
	s.Problems = append(s.Problems, &Problem{IDs: []string{e.ID}, Path: path, Msg: msg, Pos: pos, Hints: hints})
}

// article puts "a" or "an" before a kind name: an int, a string.
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiouAEIOU", rune(word[0])) {
		return "an " + word
	}
	return "a " + word
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	return err == nil
}

// otherFork is the fork beside family (#Families' fork), for bench
// tables only.
func otherFork(family string) string {
	if f, serve, ok := familyOf(family); ok && !serve {
		return f.Fork
	}
	return ""
}

// forbidden are the fields the schema forbids (_|_) under some condition,
// with the sentence a user understands.
var forbidden = []struct {
	path string
	when func(exp *cue.Value, family string) bool
	msg  func(exp *cue.Value, family string) string
}{
	{"engine.rpc",
		func(_ *cue.Value, key string) bool {
			row, ok := LookupFamily(key) // a serve key is no family: CUE's words stand
			return ok && !row.RPC && key != FamilyEndpoint
		},
		func(_ *cue.Value, f string) string {
			return fmt.Sprintf("engine.rpc is only for %s (rpc-server workers); %s runs without them", rpcFamilies(), f)
		}},
	{"bench.requestRate", benchNotServe, serveOnly("requestRate")},
	{"bench.maxConcurrency", benchNotServe, serveOnly("maxConcurrency")},
	{"bench.baseUrl", benchNotServe, serveOnly("baseUrl")},
	{"flags.speculativeConfig",
		func(_ *cue.Value, f string) bool { return f == FamilyVLLM },
		func(*cue.Value, string) string {
			return "flags.speculativeConfig turns on speculative decoding, but quality.speculative is false: set quality: speculative: true to measure it"
		}},
}

func benchNotServe(exp *cue.Value, f string) bool {
	mode, _ := exp.LookupPath(cue.ParsePath("bench.mode")).String()
	return f == FamilyVLLM && mode != "serve"
}

func serveOnly(field string) func(*cue.Value, string) string {
	return func(exp *cue.Value, _ string) string {
		mode, _ := exp.LookupPath(cue.ParsePath("bench.mode")).String()
		if mode == "" {
			mode = "this"
		} else {
			mode = fmt.Sprintf("%q", mode)
		}
		return fmt.Sprintf("bench.%s is for vllm bench serve (bench.mode: \"serve\"); %s mode does not take it", field, mode)
	}
}

// explainForbidden rewrites CUE's "explicit error (_|_ literal)" and the
// conflicts a forbidden field causes as the rule the user broke, at the
// field they wrote. It reports whether it did.
func explainForbidden(p *Problem, exp *cue.Value, family, fpath, msg, schemaDir string) bool {
	explicit := strings.Contains(msg, "explicit error (_|_ literal)")
	for _, f := range forbidden {
		if !explicit && fpath != f.path {
			continue
		}
		v := exp.LookupPath(cue.ParsePath(f.path))
		if !v.Exists() || !f.when(exp, family) {
			continue
		}
		p.Msg, p.Path = f.msg(exp, family), f.path
		// Only where the user wrote the field: the schema's own positions
		// and the conflict's other side say nothing more.
		if pos := userPositions(positionsOf(v), schemaDir); len(pos) > 0 {
			p.Pos = pos
		}
		return true
	}
	if explicit {
		p.Msg = "this experiment sets a field the schema forbids in this combination (CUE: " + msg + ")"
		return true
	}
	return false
}

// explainUnresolved rewrites "unresolved disjunction A | B (type string)":
// a field that must be chosen among values was left unset.
func explainUnresolved(p *Problem, fpath, family string, e *cueErr) {
	alts := disjunctionAlts.FindStringSubmatch(e.msg)
	field := fpath
	list := ""
	if alts != nil {
		list = strings.ReplaceAll(alts[1], " | ", ", ")
		switch {
		case strings.Contains(alts[1], `"throughput"`):
			field = "bench.mode"
		case strings.Contains(alts[1], `"llama.cpp"`):
			field = "engine.family"
		}
	}
	if field == "" {
		field = "a field"
	}
	p.Path = field
	p.Msg = fmt.Sprintf("%s is not set", field)
	if list != "" {
		p.Msg += ": choose one of " + list
	}
	if field == "bench.mode" && family == FamilyVLLM {
		p.Hints = append(p.Hints, `vllm benchmarks run as "vllm bench MODE": write bench: mode: "throughput" (or "latency", "serve")`)
	}
}

var disjunctionAlts = regexp.MustCompile(`unresolved disjunction (.*?)(?: \(type \w+\))?$`)

// importAt returns the import path written at pos ("" when it cannot be
// read).
func importAt(pos token.Pos) string {
	b, err := os.ReadFile(pos.Filename())
	if err != nil {
		return ""
	}
	lines := strings.Split(string(b), "\n")
	if pos.Line() < 1 || pos.Line() > len(lines) {
		return ""
	}
	l := lines[pos.Line()-1]
	if i := strings.IndexByte(l, '"'); i >= 0 {
		if j := strings.IndexByte(l[i+1:], '"'); j >= 0 {
			return l[i+1 : i+1+j]
		}
	}
	return ""
}

package spec

import (
	"fmt"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/token"
)

// explaining is what the cases of explain read: the CUE errors at one
// path, the problem being written, and the experiment around them.
type explaining struct {
	c  *collector
	p  *Problem
	id string
	// fpath is the field path; last its last part and section its first.
	fpath, last, section string
	// family is the experiment's [TableKey], "" without an experiment.
	family    string
	main      *cueErr
	errs      []cueErr
	conflicts []cueErr
	s         *Set
	exp       *cue.Value
}

// explainCase is one case of explain: when it matches, it rewrites the
// problem in words a user understands.
type explainCase struct {
	match   func(*explaining) bool
	explain func(*explaining)
}

// explainCases are explain's cases, in order: the first that matches
// rewrites the problem, and the others are not asked.
var explainCases = []explainCase{
	{func(x *explaining) bool { return x.id == "" && x.fpath == "" }, explainLoadError},
	{func(x *explaining) bool { return x.main.format == "field not allowed" }, explainNotAllowed},
	{func(x *explaining) bool { return x.fpath == "engine.family" }, explainFamily},
	{func(x *explaining) bool { return isQualityPath(x.fpath) && x.exp != nil },
		func(x *explaining) { explainQuality(x.p, x.fpath, x.conflicts, x.exp) }},
	{func(x *explaining) bool { return strings.HasPrefix(x.fpath, "model.synthetic._") },
		func(x *explaining) { explainSynthetic(x.p, x.fpath, x.exp) }},
	{func(x *explaining) bool { return strings.HasPrefix(x.fpath, "#requires") }, explainRequires},
	{func(x *explaining) bool { return strings.Contains(x.main.msg, "incompatible list lengths") }, explainListLengths},
	{func(x *explaining) bool {
		return strings.HasPrefix(x.main.format, "incomplete value") || strings.Contains(x.main.msg, "non-concrete value")
	}, func(x *explaining) { explainIncomplete(x.p, x.fpath, x.main, x.exp) }},
	// The user's value breaks the schema's own constraint: schemaViolation
	// has said so when it matches.
	{func(x *explaining) bool {
		return len(x.conflicts) > 0 && schemaViolation(x.p, x.s, x.family, x.fpath, x.conflicts)
	}, func(*explaining) {}},
	{func(x *explaining) bool { return len(x.conflicts) == 1 && len(x.errs) == 1 },
		func(x *explaining) { explainConflict(x.p, x.fpath, x.conflicts[0], x.c.root) }},
	{func(x *explaining) bool { return len(x.conflicts) > 0 }, explainDisjunction},
	// Out of bound and invalid values keep CUE's wording: it names the
	// bound.
}

// explain turns the CUE errors at one path into one problem with hints.
func (c *collector) explain(pkg, id, fpath string, errs []cueErr, s *Set, exp *cue.Value) *Problem {
	x := c.explaining(pkg, id, fpath, errs, s, exp)
	p := x.p
	if exp != nil && explainForbidden(p, exp, x.family, fpath, x.main.msg, c.schemaDir) {
		return p
	}
	if strings.Contains(p.Msg, "import failed") && len(p.Pos) > 0 {
		if imp := importAt(p.Pos[0]); imp != "" {
			p.Msg = fmt.Sprintf("cannot import %q: no such package in this module, cue.mod/pkg or CUE's standard library", imp)
		}
	}
	if strings.Contains(x.main.msg, "unresolved disjunction") {
		explainUnresolved(p, fpath, x.family, x.main)
		if exp != nil && s != nil {
			c.pointAtMisspelling(p, s, *exp)
		}
		return p
	}
	for _, k := range explainCases {
		if k.match(x) {
			k.explain(x)
			break
		}
	}
	if mt := mismatchedTypes.FindStringSubmatch(p.Msg); mt != nil {
		p.Hints = append(p.Hints, fmt.Sprintf("%s: %s and %s met; numbers are written without quotes (ub: 32, not \"32\"), strings and env values with them (env: X: \"1\", not 1)", fpath, article(mt[1]), article(mt[2])))
	}
	return p
}

// explaining gathers the errors at one path: the main error (the first
// that is not a disjunction's headline), the conflicts among them, every
// position, and the experiment's family.
func (c *collector) explaining(pkg, id, fpath string, errs []cueErr, s *Set, exp *cue.Value) *explaining {
	x := &explaining{c: c, p: &Problem{Package: pkg, Path: fpath}, id: id, fpath: fpath, errs: errs, s: s, exp: exp}
	if id != "" {
		x.p.IDs = []string{id}
	}
	var allPos []token.Pos
	for i := range errs {
		e := &errs[i]
		allPos = append(allPos, e.pos...)
		if disjHead.MatchString(e.msg) {
			continue
		}
		if strings.HasPrefix(e.format, "conflicting values") {
			x.conflicts = append(x.conflicts, *e)
		}
		if x.main == nil {
			x.main = e
		}
	}
	if x.main == nil {
		x.main = &errs[0]
	}
	x.p.Msg = x.main.msg
	x.p.Pos = userPositions(allPos, c.schemaDir)
	if exp != nil {
		family, _ := exp.LookupPath(cue.ParsePath("engine.family")).String()
		x.family = TableKey(family, exp.LookupPath(cue.ParsePath("serve")).Exists())
	}
	x.last = lastPart(fpath)
	x.section = strings.SplitN(fpath, ".", 2)[0]
	return x
}

// explainLoadError: syntax and load errors, with the import to write.
func explainLoadError(x *explaining) {
	if m := x.p.Msg; strings.Contains(m, "cannot find package") || strings.Contains(m, "import failed") || strings.Contains(m, "cannot import") {
		x.p.Hints = append(x.p.Hints, "the schema import is \""+"github.com/rigorbench/rigor/schema"+"\"; other imports must be CUE standard library packages or packages of this module")
	}
}

// explainNotAllowed: a field the schema does not have, said in the terms
// of the family's flag or workload table when it is one of those.
func explainNotAllowed(x *explaining) {
	switch {
	case x.section == "flags" && x.family != "" && x.s != nil:
		explainUnknownFlag(x)
	case x.section == "bench" && x.family != "" && x.s != nil:
		explainUnknownBench(x)
	default:
		explainUnknownField(x)
	}
}

// explainUnknownFlag: a flag the family's tool does not have, the fork
// that has it, the nearest flag, and extraArgs.
func explainUnknownFlag(x *explaining) {
	p, family, last := x.p, x.family, x.last
	if strings.TrimPrefix(family, ServePrefix) == FamilyEndpoint {
		p.Msg = "an endpoint takes no flags: rigor does not start it"
		p.Hints = append(p.Hints, "configure the server where it runs; the record keeps what it reports of itself (/v1/models, /props, /version)")
		return
	}
	t := x.s.FlagTable(family, "flags")
	if t == nil {
		return
	}
	p.Msg = fmt.Sprintf("%s has no flag %q", benchTool(family), last)
	if other := otherFork(family); other != "" {
		if ot := x.s.FlagTable(other, "flags"); ot != nil {
			if _, ok := ot.Lookup(last); ok {
				p.Msg += fmt.Sprintf("; %s has it (%s)", benchTool(other), flagSpelling(ot, last))
				p.Hints = append(p.Hints, fmt.Sprintf("if the engine is %s, set engine.family: %q", other, other))
			}
		}
	}
	n := nearestFlag(last, t)
	if n != "" {
		p.Hints = append(p.Hints, fmt.Sprintf("did you mean %s (%s)?", n, flagSpelling(t, n)))
	}
	if n == "" || len(t.Defs) <= 12 {
		p.Hints = append(p.Hints, flagList(family, t))
	}
	if f, _, ok := familyOf(family); ok && f.ExtraArgs {
		// A tool that takes only its own options (node-llama-cpp's
		// runner) gets no extraArgs hint: extraArgs cannot add a flag.
		p.Hints = append(p.Hints, "flags that a patched engine adds go in extraArgs: [\"-flag\", \"value\"]")
	}
}

// explainUnknownBench: a workload field the family's tool (or serve mode)
// does not have, and the nearest one.
func explainUnknownBench(x *explaining) {
	t := x.s.FlagTable(x.family, "bench")
	if t == nil {
		return
	}
	p := x.p
	p.Msg = fmt.Sprintf("the %s workload of %s has no field %q", strings.TrimPrefix(x.family, ServePrefix), benchTool(x.family), x.last)
	if strings.HasPrefix(x.family, ServePrefix) {
		p.Msg = fmt.Sprintf("the serve workload has no field %q", x.last)
	}
	if n := nearest(x.last, t.Names()); n != "" {
		p.Hints = append(p.Hints, fmt.Sprintf("did you mean %s?", n))
	}
}

// explainUnknownField: any other field the schema does not have, with the
// nearest one or the fields allowed there.
func explainUnknownField(x *explaining) {
	p := x.p
	p.Msg = fmt.Sprintf("field %q is not allowed here", x.last)
	fields := schemaFieldsAt(x.s, x.fpath)
	switch n := nearest(x.last, fields); {
	case len(fields) == 0:
	case n != "":
		p.Hints = append(p.Hints, fmt.Sprintf("did you mean %s?", n))
	case strings.Count(x.fpath, ".") == 0 && x.id != "":
		p.Hints = append(p.Hints, "an experiment's fields are "+strings.Join(fields, ", ")+"; keep helpers in hidden fields (_name) or definitions (#name)")
	default:
		p.Hints = append(p.Hints, "allowed here: "+strings.Join(fields, ", "))
	}
}

// explainFamily: an engine family the schema's #Families does not have.
func explainFamily(x *explaining) {
	p := x.p
	if user, _ := splitDisjunction(x.conflicts); user != "" {
		p.Msg = fmt.Sprintf("unknown engine family %s", user)
		if n := nearest(strings.Trim(user, `"`), Families()); n != "" {
			p.Hints = append(p.Hints, fmt.Sprintf("did you mean %q?", n))
		}
	}
	p.Hints = append(p.Hints, "engine.family is one of "+strings.Join(Families(), ", "))
}

// explainRequires: #requires constraints no machine can meet.
func explainRequires(x *explaining) {
	p := x.p
	if len(x.conflicts) > 0 || strings.Contains(p.Msg, "incompatible") {
		p.Msg = "impossible requirement: " + p.Msg
		p.Hints = append(p.Hints, "no machine can satisfy #requires."+strings.TrimPrefix(x.fpath, "#requires.")+" as written: check the bounds (e.g. >=4 & <=8)")
	}
}

// explainListLengths: a variant that appends to a list its base set.
func explainListLengths(x *explaining) {
	x.p.Hints = append(x.p.Hints, "lists unify element by element, so a variant cannot append to or shorten a list its base set: give the base a default (tags: *[\"a\"] | _) and write the whole list in the variant")
}

// explainDisjunction: a value none of the alternatives allows, and the
// nearest alternative.
func explainDisjunction(x *explaining) {
	user, alts := splitDisjunction(x.conflicts)
	if user == "" || len(alts) == 0 {
		return
	}
	p := x.p
	p.Msg = fmt.Sprintf("%s is not allowed: %s takes %s", user, x.fpath, strings.Join(alts, " | "))
	var plain []string
	for _, a := range alts {
		plain = append(plain, strings.Trim(a, `"`))
	}
	if n := nearest(strings.Trim(user, `"`), plain); n != "" {
		p.Hints = append(p.Hints, fmt.Sprintf("did you mean %q?", n))
	}
}

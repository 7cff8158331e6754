package spec

import (
	"embed"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/token"

	"github.com/rigorbench/rigor/internal/gguf"
	"github.com/rigorbench/rigor/internal/suggest"
)

//go:embed corpus/*.txt
var corpora embed.FS

// BuiltinCorpus returns the bytes of a corpus shipped with rigor, by its
// name in quality.measure.corpus ("builtin:opticks").
func BuiltinCorpus(name string) ([]byte, bool) {
	n, ok := strings.CutPrefix(name, BuiltinCorpusPrefix)
	if !ok || strings.ContainsAny(n, "/.") {
		return nil, false
	}
	b, err := corpora.ReadFile("corpus/" + n + ".txt")
	return b, err == nil
}

// BuiltinCorpora are the names of the corpora shipped with rigor.
func BuiltinCorpora() []string {
	ents, _ := corpora.ReadDir("corpus")
	var out []string
	for _, e := range ents {
		out = append(out, BuiltinCorpusPrefix+strings.TrimSuffix(e.Name(), ".txt"))
	}
	sort.Strings(out)
	return out
}

// checkQuality checks quality.measure: the corpus exists (shipped or in
// the module), and the baseline is an experiment of the same package, of
// the same engine family, one point, with the same vocabulary where both
// models' are known (a synthetic model's vocab, a local GGUF's header),
// and, when it measures quality itself, on the same corpus, ctx and
// chunks. pkgValue is the package's CUE value, def #Experiment.
func (s *Set) checkQuality(e *Experiment, pkgValue, def cue.Value, col *collector) {
	m := e.Spec.Quality.Measure
	if m == nil {
		return
	}
	bad := func(p, msg string, related []token.Pos, hints ...string) {
		pos := userPositions(positionsOf(e.Value.LookupPath(cue.ParsePath(p))), col.schemaDir)
		if len(pos) == 0 {
			pos = []token.Pos{e.Pos}
		}
		pos = append(pos, userPositions(related, col.schemaDir)...)
		col.add(&Problem{IDs: []string{e.ID}, Path: p, Msg: msg, Pos: pos, Hints: hints})
		e.Broken = true
	}
	if e.Spec.Serve != nil && e.Spec.Engine.Family != FamilyEndpoint {
		bad("quality.measure", "quality.measure is for bench runs: a serve experiment's quality is its server's", nil,
			"measure quality in a bench experiment of the same model and flags")
		return
	}
	switch c := m.Corpus; {
	case c.Hub():
		if err := validHubRepo(c.HF); err != nil {
			bad("quality.measure.corpus.hf", fmt.Sprintf("quality.measure.corpus.hf %q: %v", c.HF, err), nil,
				"a hub corpus is a file of a model repo: {hf: \"owner/name\", file: \"wiki.test.raw\"}")
		}
		if f := c.File; f == "" || strings.HasPrefix(f, "/") || strings.Contains("/"+f+"/", "/../") || strings.ContainsAny(f, "*?[") {
			bad("quality.measure.corpus.file", fmt.Sprintf("quality.measure.corpus.file %q is not a file path in the repo", f), nil,
				"name one file of the repo by its path, as the hub lists it (no globs, no ..)")
		}
	case strings.HasPrefix(c.Name, BuiltinCorpusPrefix):
		if _, ok := BuiltinCorpus(c.Name); !ok {
			bad("quality.measure.corpus", fmt.Sprintf("quality.measure.corpus %q is not a corpus shipped with rigor", c.Name), nil,
				suggestOr(c.Name, BuiltinCorpora(), "the shipped corpora: "+strings.Join(BuiltinCorpora(), ", ")))
		}
	default:
		if real, err := Confine(s.Root, c.Name); err != nil {
			bad("quality.measure.corpus", fmt.Sprintf("quality.measure.corpus %q: %v", c.Name, err), nil,
				"a corpus is a text file in the module (the lock pins its sha256), a hub file {hf, file}, or "+strings.Join(BuiltinCorpora(), ", "))
		} else if fi, err := os.Stat(real); err != nil || !fi.Mode().IsRegular() {
			bad("quality.measure.corpus", fmt.Sprintf("quality.measure.corpus %q does not exist", c.Name), nil,
				"a corpus is a text file in the module, relative to its root, a hub file {hf, file}, or "+strings.Join(BuiltinCorpora(), ", "))
		}
	}

	name := m.Baseline
	if i := strings.LastIndexByte(m.Baseline, '/'); i >= 0 {
		pkg, n := m.Baseline[:i], m.Baseline[i+1:]
		if pkg != e.Package {
			bad("quality.measure.baseline", fmt.Sprintf("quality.measure.baseline %q is not an experiment of package %s", m.Baseline, e.Package), nil,
				"the baseline is an experiment of the same package (its logits are computed with the same lockfile): name it by its name")
			return
		}
		name = n
	}
	bv := pkgValue.LookupPath(cue.MakePath(cue.Str(name)))
	if !bv.Exists() || strings.HasPrefix(name, "_") || !idPart.MatchString(name) {
		var names []string
		if it, err := pkgValue.Fields(); err == nil {
			for it.Next() {
				names = append(names, it.Selector().Unquoted())
			}
		}
		bad("quality.measure.baseline", fmt.Sprintf("quality.measure.baseline %q is not an experiment of package %s", m.Baseline, e.Package), nil,
			suggestOr(name, names, "name an experiment of the same package: typically the same model at F16, or with an f16 KV cache"))
		return
	}
	bs, _, err := specFromValue(bv.Unify(def))
	if err != nil {
		return // the baseline's own problems are reported at the baseline
	}
	related := []token.Pos{bv.Pos()}
	if bs.Engine.Family != e.Spec.Engine.Family || (bs.Serve != nil) != (e.Spec.Serve != nil) {
		bad("quality.measure.baseline", fmt.Sprintf("quality.measure.baseline %s runs %s, but %s runs %s: the baseline's reference is computed by the same engine family", name, familyMode(bs), e.ID, familyMode(e.Spec)), related)
		return
	}
	if len(bs.Sweep) > 0 {
		bad("quality.measure.baseline", fmt.Sprintf("quality.measure.baseline %s is a sweep: its reference must be one point", name), related,
			"make the baseline an experiment of its own, without sweep")
		return
	}
	if bm := bs.Quality.Measure; bm != nil && bm.TopK != m.TopK {
		bad("quality.measure.topK", fmt.Sprintf("quality.measure.baseline %s keeps %s, %s %s: the two KL divergences' forms would differ", name, keeps(bm.TopK), e.ID, keeps(m.TopK)), related,
			"give both the same topK (a shared definition: _measure: {…})")
		return
	}
	if bm := bs.Quality.Measure; bm != nil && (bm.Corpus != m.Corpus || bm.Ctx != m.Ctx || bm.Chunks != m.Chunks) {
		bad("quality.measure.baseline", fmt.Sprintf("quality.measure.baseline %s measures on corpus %q, ctx %d, %d chunks; %s on %q, ctx %d, %d chunks: its reference would not be this experiment's",
			name, bm.Corpus.String(), bm.Ctx, bm.Chunks, e.ID, m.Corpus.String(), m.Ctx, m.Chunks), related,
			"measure both on the same corpus, ctx and chunks (a shared definition: _measure: {…})")
		return
	}
	if v, vwhere := s.vocabOf(e.Spec.Model); v > 0 {
		if bv, bwhere := s.vocabOf(bs.Model); bv > 0 && bv != v {
			bad("quality.measure.baseline", fmt.Sprintf("quality.measure.baseline %s has another vocabulary: %d tokens (%s) against %d (%s): KL divergence compares distributions over the same tokens", name, bv, bwhere, v, vwhere), related,
				"the baseline is the same model at a higher precision (F16, BF16) or with an unquantized KV cache")
		}
	}
}

func familyMode(s Spec) string {
	if s.Serve != nil {
		return s.Engine.Family + " (serve)"
	}
	return s.Engine.Family
}

// vocabOf is a model's vocabulary size and where it was read, when it can
// be known before the lock: a synthetic model's vocab, a local GGUF
// file's header. 0 when it cannot.
func (s *Set) vocabOf(m Model) (uint64, string) {
	if m.Synthetic != nil {
		return uint64(m.Synthetic.Vocab), "model.synthetic.vocab"
	}
	if m.Path == "" || m.HF != "" {
		return 0, ""
	}
	p := m.Path
	if entry := EntryFile(m.Files); entry != "" {
		p = path.Join(p, entry)
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(s.Root, filepath.FromSlash(p))
	}
	f, err := gguf.ReadFile(p)
	if err != nil {
		return 0, ""
	}
	if v := f.Facts().VocabSize; v > 0 {
		return v, "the GGUF header of " + m.Path
	}
	return 0, ""
}

func suggestOr(name string, names []string, otherwise string) string {
	if s := suggest.Nearest(name, names); s != "" {
		return fmt.Sprintf("did you mean %s?", s)
	}
	return otherwise
}

// keeps says what a reference of quality.measure.topK k keeps.
func keeps(k int) string {
	if k == 0 {
		return "the whole vocabulary's log-probabilities"
	}
	return fmt.Sprintf("the top %d log-probabilities", k)
}

// validHubRepo checks an "owner/name" hub repo id the way the schema's
// model.hf does.
func validHubRepo(id string) error {
	owner, name, ok := strings.Cut(id, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return fmt.Errorf("want owner/name")
	}
	for _, r := range owner + name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Errorf("character %q is not allowed", r)
		}
	}
	return nil
}

package lock

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/rigorbench/rigor/internal/spec"
)

// InputBaseline names the quality baseline in an [InputError].
const InputBaseline = "quality.measure.baseline"

// Vocabulary is a model's token list as its GGUF header gives it: the
// length of tokenizer.ggml.tokens and the digest of its strings
// (gguf.Facts.TokensSHA256), with where it was read.
type Vocabulary struct {
	Tokens uint64
	SHA256 string
	Where  string
}

// hintedError is an error with its hint: why two models cannot be
// compared token for token, why a model's vocabulary is not known, why a
// corpus cannot be locked.
type hintedError struct {
	msg, hint string
}

func (e *hintedError) Error() string { return e.msg }

// Hint says what to do.
func (e *hintedError) Hint() string { return e.hint }

// vocabulary reads the vocabulary of an entry's model from the GGUF
// facts the lock holds: the synthetic model's, or the entry file's (the
// first GGUF file when the request names none). A model without a token
// list in its locked facts is an error: the comparison fails closed.
func (e *Entry) vocabulary() (Vocabulary, error) {
	m := e.Model
	where := m.Requested.HF
	if where == "" {
		where = m.Requested.Path
	}
	var facts map[string]any
	switch {
	case m.Synthetic != nil:
		facts, where = m.Synthetic.GGUF, "the synthetic model"
	default:
		entry := spec.EntryFile(m.Requested.Files)
		var pick *FileLock
		for i := range m.Files {
			f := &m.Files[i]
			rel := f.Path
			if m.Requested.Path != "" {
				rel = strings.TrimPrefix(strings.TrimPrefix(f.Path, path.Clean(m.Requested.Path)), "/")
			}
			if ok, _ := path.Match(entry, rel); entry != "" && ok {
				pick = f
				break
			}
			if pick == nil && strings.HasSuffix(strings.ToLower(f.Path), ".gguf") {
				pick = f
			}
		}
		if pick == nil {
			return Vocabulary{}, &hintedError{
				msg:  fmt.Sprintf("cannot tell the vocabulary of %s: the lock holds no GGUF file of it", where),
				hint: "quality is measured on GGUF models: the vocabulary is read from tokenizer.ggml.tokens in the GGUF header"}
		}
		if m.Commit != "" {
			where = fmt.Sprintf("%s@%s: %s", m.Requested.HF, short(m.Commit), pick.Path)
		} else {
			where = pick.Path
		}
		facts = pick.GGUF
	}
	n, _ := facts["tokenCount"]
	sum, _ := facts["tokensSha256"].(string)
	count := toUint(n)
	if count == 0 || len(sum) != 64 {
		why := "its GGUF header was not read"
		if facts != nil {
			why = "the lock holds no token list from its GGUF header (tokenizer.ggml.tokens)"
		}
		return Vocabulary{}, &hintedError{
			msg: fmt.Sprintf("cannot tell the vocabulary of %s: %s", where, why),
			hint: "the lock reads the token list from the GGUF header; a lock written before it did needs " +
				"'rigor lock --update model ID' (ID the experiment and its baseline), and a model without one cannot be measured against a baseline"}
	}
	return Vocabulary{Tokens: count, SHA256: sum, Where: where}, nil
}

func toUint(v any) uint64 {
	var n uint64
	if v != nil {
		fmt.Sscan(fmt.Sprint(v), &n)
	}
	return n
}

// checkVocabularies compares the vocabulary of each experiment of xs that
// measures quality with its baseline's, from the GGUF headers the entries
// of nf hold, when either model comes from the hub (vet compares the
// others before the lock: a synthetic model's vocab, a local GGUF's
// header). The errors are *[InputError]s of [InputBaseline].
func checkVocabularies(xs []*spec.Experiment, nf *File) []error {
	var errs []error
	for _, x := range xs {
		m := x.Spec.Quality.Measure
		e := nf.Experiments[x.ID]
		if m == nil || e == nil {
			continue
		}
		baseID := spec.BaselineID(x.Package, m.Baseline)
		be := nf.Experiments[baseID]
		if be == nil {
			if x.Spec.Model.HF != "" {
				errs = append(errs, &InputError{ID: x.ID, Input: InputBaseline, Err: &hintedError{
					msg:  fmt.Sprintf("the baseline %s is not locked, so its vocabulary cannot be compared with this hub model's", baseID),
					hint: "lock the baseline too: 'rigor lock " + baseID + " " + x.ID + "'"}})
			}
			continue
		}
		if e.Model.Requested.HF == "" && be.Model.Requested.HF == "" {
			continue
		}
		v, err := e.vocabulary()
		bv, berr := be.vocabulary()
		if err := errors.Join(err, berr); err != nil {
			errs = append(errs, &InputError{ID: x.ID, Input: InputBaseline, Err: err})
			continue
		}
		if v.Tokens != bv.Tokens || v.SHA256 != bv.SHA256 {
			errs = append(errs, &InputError{ID: x.ID, Input: InputBaseline, Err: &hintedError{
				msg: fmt.Sprintf("the baseline %s has another vocabulary: %d tokens (sha256 %s, %s) against %d (sha256 %s, %s): KL divergence compares distributions over the same tokens",
					baseID, bv.Tokens, short(bv.SHA256), bv.Where, v.Tokens, short(v.SHA256), v.Where),
				hint: "the baseline is the same model at a higher precision (F16, BF16) or with an unquantized KV cache"}})
		}
	}
	return errs
}

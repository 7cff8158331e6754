package lock

import (
	"fmt"
	"os"

	"github.com/rigorbench/rigor/internal/spec"
)

// Corpus returns the bytes of a quality corpus: one shipped with rigor
// ("builtin:opticks") or a file of the module at root.
func Corpus(root, name string) ([]byte, error) {
	if b, ok := spec.BuiltinCorpus(name); ok {
		return b, nil
	}
	real, err := spec.Confine(root, name)
	if err != nil {
		return nil, fmt.Errorf("corpus %s: %w", name, err)
	}
	b, err := os.ReadFile(real)
	if err != nil {
		return nil, fmt.Errorf("corpus %s: %w", name, err)
	}
	return b, nil
}

// lockCorpus pins the corpus of x's quality.measure, if any.
func lockCorpus(root string, x *spec.Experiment) (*FileLock, error) {
	m := x.Spec.Quality.Measure
	if m == nil {
		return nil, nil
	}
	b, err := Corpus(root, m.Corpus)
	if err != nil {
		return nil, &InputError{ID: x.ID, Input: "quality.measure.corpus", Err: err}
	}
	sum, size, _ := hashBytes(b)
	return &FileLock{Path: m.Corpus, Size: size, SHA256: sum}, nil
}

// checkCorpus says how the locked corpus differs from x's, if it does.
func checkCorpus(root string, x *spec.Experiment, e *Entry) []string {
	m := x.Spec.Quality.Measure
	switch {
	case m == nil:
		return nil
	case e.Corpus == nil || e.Corpus.Path != m.Corpus:
		return []string{fmt.Sprintf("corpus %s is not locked", m.Corpus)}
	}
	b, err := Corpus(root, m.Corpus)
	if err != nil {
		return []string{err.Error()}
	}
	if sum, _, _ := hashBytes(b); sum != e.Corpus.SHA256 {
		return []string{fmt.Sprintf("corpus %s changed (locked sha256 %s, now %s)", m.Corpus, short(e.Corpus.SHA256), short(sum))}
	}
	return nil
}

package lock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/rigorbench/rigor/internal/gguf"
	"github.com/rigorbench/rigor/internal/spec"
)

// ModelFileError is a locked model file that is missing or whose bytes are
// not the locked ones. `rigor pull` and `rigor run` both return it.
type ModelFileError struct {
	// Experiment is the experiment id; Path the file on disk; File the
	// file as the lock names it.
	Experiment, Path, File string
	// Missing is true for a file that is not there; otherwise What says
	// how it differs ("size 12, lock has 10", "sha256 …, lock has …").
	Missing bool
	What    string
	// Hub is true for a model from the Hugging Face hub.
	Hub bool
}

func (e *ModelFileError) Error() string {
	switch {
	case e.Missing && e.Hub:
		return fmt.Sprintf("%s: model file %s is not in the hub cache (expected %s)", e.Experiment, e.File, e.Path)
	case e.Missing:
		return fmt.Sprintf("%s: model file %s is missing", e.Experiment, e.Path)
	}
	return fmt.Sprintf("%s: model file %s differs from the lock: %s", e.Experiment, e.Path, e.What)
}

// Hint says how to get the locked bytes back.
func (e *ModelFileError) Hint() string {
	switch {
	case e.Missing && e.Hub:
		return "run 'rigor pull " + e.Experiment + "' to download it"
	case e.Missing:
		return "restore it, or relock the model with 'rigor lock --update model " + e.Experiment + "'"
	case e.Hub:
		return "remove it and run 'rigor pull " + e.Experiment + "' to download the locked bytes"
	}
	return "restore the locked file, or relock with 'rigor lock --update model " + e.Experiment + "' if the change is intended"
}

// VerifyOptions say where a lock's model files are.
type VerifyOptions struct {
	// Root is the module root (local model paths are relative to it).
	Root string
	// HFCache is the Hugging Face hub cache.
	HFCache string
	// Cache is rigor's cache: the stat-keyed hash cache lives there, so an
	// unchanged file is not read again.
	Cache string
}

// VerifyModel checks every locked model file of an experiment (local
// files, or the hub cache's snapshot of the locked commit; config and
// tokenizer files too, not only the weights) against the lock: each must
// exist, have the locked size and, where the lock has one, the locked
// sha256 (hex, any case). It returns the files' absolute paths in lock
// order, or a *ModelFileError for the first file that is not the locked
// one. Synthetic models are checked by [EnsureSynthetic].
func VerifyModel(ctx context.Context, opts VerifyOptions, id string, entry *Entry) ([]string, error) {
	m := entry.Model
	paths := entry.ModelFiles(opts.Cache, opts.HFCache)
	if m.Synthetic != nil {
		return paths, nil
	}
	if len(paths) != len(m.Files) {
		return nil, fmt.Errorf("%s: the lock names %d model files but %d paths", id, len(m.Files), len(paths))
	}
	hub := m.Requested.HF != ""
	var hashable []string
	locked := map[string]FileLock{}
	for i, p := range paths {
		if !filepath.IsAbs(p) {
			p = filepath.Join(opts.Root, p)
			paths[i] = p
		}
		f := m.Files[i]
		fi, err := os.Stat(p)
		if err != nil {
			return nil, &ModelFileError{Experiment: id, Path: p, File: f.Path, Missing: true, Hub: hub}
		}
		if fi.Size() != f.Size {
			return nil, &ModelFileError{Experiment: id, Path: p, File: f.Path, Hub: hub,
				What: fmt.Sprintf("size %d, lock has %d", fi.Size(), f.Size)}
		}
		if f.SHA256 != "" {
			hashable = append(hashable, p)
			locked[p] = f
		}
	}
	h := &Hasher{Cache: opts.Cache}
	sums, err := h.Hash(ctx, hashable)
	if err != nil {
		return nil, err
	}
	for _, s := range sums {
		f := locked[s.Path]
		if !strings.EqualFold(s.SHA256, f.SHA256) {
			return nil, &ModelFileError{Experiment: id, Path: s.Path, File: f.Path, Hub: hub,
				What: fmt.Sprintf("sha256 %.12s, lock has %.12s", s.SHA256, f.SHA256)}
		}
	}
	return paths, nil
}

// GGUFSpec is the synthetic model of an experiment in the GGUF writer's
// terms: the one conversion from the schema's model.synthetic.
func GGUFSpec(s spec.Synthetic) gguf.SyntheticSpec {
	return gguf.SyntheticSpec{Arch: s.Arch, Layers: s.Layers, Embd: s.Embd, Heads: s.Heads, KVHeads: s.KVHeads,
		FF: s.FF, Vocab: s.Vocab, Ctx: s.Ctx, Type: s.Type, Seed: s.Seed}
}

// writeSynthetic writes a synthetic model into dir through a temporary
// file, and returns the file's final path (<dir>/<sha256>.gguf), sha256
// and size. The model is a pure function of its spec.
func writeSynthetic(dir string, s spec.Synthetic) (path, sum string, size int64, err error) {
	gs := GGUFSpec(s)
	if err := gs.Validate(); err != nil {
		return "", "", 0, fmt.Errorf("synthetic model: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", 0, fmt.Errorf("synthetic model: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".synthetic-*.gguf")
	if err != nil {
		return "", "", 0, fmt.Errorf("synthetic model: %w", err)
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(tmp, h)}
	err = gguf.WriteSynthetic(cw, gs)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", "", 0, fmt.Errorf("writing synthetic model %s: %w", gs.Name(), err)
	}
	sum = hex.EncodeToString(h.Sum(nil))
	path = filepath.Join(dir, sum+".gguf")
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return "", "", 0, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", "", 0, fmt.Errorf("synthetic model: %w", err)
	}
	return path, sum, cw.n, nil
}

// EnsureSynthetic makes sure the locked synthetic model is in the cache
// with the locked bytes: written when missing, and written again when the
// cached file was damaged (it is a pure function of its spec). It returns
// the file's path and, when it had to be rewritten, a warning for the
// record; bytes that still differ from the lock are a *ModelFileError.
func EnsureSynthetic(ctx context.Context, cache, id string, s *spec.Synthetic, want *SyntheticLock) (path, warning string, err error) {
	if s == nil {
		return "", "", fmt.Errorf("%s: the lock names a synthetic model but the experiment has none", id)
	}
	path = SyntheticPath(cache, want.SHA256)
	h := &Hasher{Cache: cache}
	check := func() (string, error) {
		got, err := h.Hash(ctx, []string{path})
		if err != nil {
			return "", err
		}
		return got[0].SHA256, nil
	}
	if _, err := os.Stat(path); err == nil {
		got, err := check()
		if err != nil {
			return "", "", err
		}
		if got == want.SHA256 {
			return path, "", nil
		}
		warning = fmt.Sprintf("the cached synthetic model %s had sha256 %s; it was written again", path, got)
		if err := os.Remove(path); err != nil {
			return "", "", err
		}
	}
	written, sum, _, err := writeSynthetic(filepath.Dir(path), *s)
	if err != nil {
		return "", "", err
	}
	if sum != want.SHA256 {
		os.Remove(written)
		return "", "", &ModelFileError{Experiment: id, Path: path, File: filepath.Base(path),
			What: fmt.Sprintf("this rigor writes the synthetic model with sha256 %.12s, lock has %.12s", sum, want.SHA256)}
	}
	return path, warning, nil
}

package lock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"

	"github.com/rigorbench/rigor/internal/spec"
)

// Stale is an experiment whose lock is missing or out of date.
type Stale struct {
	// ID is the experiment.
	ID string `json:"id"`
	// Reasons say why, one per finding, e.g. "not locked (no
	// lockfiles/x.lock.json)", "spec changed", "patch patches/a.patch
	// changed".
	Reasons []string `json:"reasons"`
}

// CheckOptions configure [CheckWith].
type CheckOptions struct {
	// Cache is rigor's cache (for the stat-keyed hash cache); "" hashes
	// every file again.
	Cache string
}

// CheckWith compares the lockfiles of set's module with its experiments,
// without the network, and returns the experiments whose lock is missing
// or stale, in set order. Local model files and prebuilt binaries are
// verified through the stat cache: a file whose size, mtime or inode
// changed is hashed again.
func CheckWith(set *spec.Set, opts CheckOptions) []Stale {
	c := &checker{root: set.Root, hasher: &Hasher{Cache: opts.Cache}, files: map[string]*File{}, errs: map[string]error{}, sums: map[string]sumResult{}}
	var out []Stale
	for _, x := range set.Experiments {
		if reasons := c.check(x); len(reasons) > 0 {
			out = append(out, Stale{ID: x.ID, Reasons: reasons})
		}
	}
	return out
}

type checker struct {
	root   string
	hasher *Hasher
	files  map[string]*File
	errs   map[string]error
	// sums memoizes file hashes: experiments of a package often share
	// their model and binaries.
	sums map[string]sumResult
}

type sumResult struct {
	sum string
	err error
}

func (c *checker) file(pkg string) (*File, error) {
	if f, ok := c.files[pkg]; ok {
		return f, c.errs[pkg]
	}
	f, err := Read(c.root, pkg)
	c.files[pkg], c.errs[pkg] = f, err
	return f, err
}

func (c *checker) check(x *spec.Experiment) []string {
	if x.Broken {
		return []string{"the experiment has errors (see 'rigor vet')"}
	}
	f, err := c.file(x.Package)
	if errors.Is(err, fs.ErrNotExist) {
		return []string{fmt.Sprintf("not locked (no %s)", relPath(x.Package))}
	}
	if err != nil {
		return []string{err.Error()}
	}
	e := f.Experiments[x.ID]
	if e == nil {
		return []string{fmt.Sprintf("not locked (no entry in %s)", relPath(x.Package))}
	}
	var reasons []string
	if d := SpecDigest(x); d != e.SpecDigest {
		reasons = append(reasons, fmt.Sprintf("spec changed (locked %s, now %s)", shortDigest(e.SpecDigest), shortDigest(d)))
		// The requested inputs are part of the spec; say which changed.
		eng := x.Spec.Engine
		req := requestOf(eng.Source)
		req.URL = ""
		if req != e.Engine.Requested || eng.Family != e.Engine.Family {
			reasons = append(reasons, "engine source changed")
		}
		m := x.Spec.Model
		mreq := ModelRequest{HF: m.HF, Revision: m.Revision, Files: m.Files, Path: m.Path, Synthetic: m.Synthetic}
		if len(mreq.Files) == 0 {
			mreq.Files = nil
		}
		if !reflect.DeepEqual(mreq, e.Model.Requested) {
			reasons = append(reasons, "model request changed")
		}
		var paths []string
		for _, p := range e.Engine.Patches {
			paths = append(paths, p.Path)
		}
		if !reflect.DeepEqual(paths, nilIfEmpty(eng.Patches)) {
			reasons = append(reasons, "patch list changed")
		}
	}
	for _, p := range e.Engine.Patches {
		b, err := os.ReadFile(filepath.Join(c.root, filepath.FromSlash(p.Path)))
		if err != nil {
			reasons = append(reasons, fmt.Sprintf("patch %s is missing", p.Path))
			continue
		}
		if sum, _, _ := hashBytes(b); sum != p.SHA256 {
			reasons = append(reasons, fmt.Sprintf("patch %s changed (locked sha256 %s, now %s)", p.Path, short(p.SHA256), short(sum)))
		}
	}
	for _, b := range e.Engine.Binaries {
		reasons = append(reasons, c.verify("prebuilt binary", b.Path, b)...)
	}
	if e.Model.Requested.Path != "" {
		for _, f := range e.Model.Files {
			reasons = append(reasons, c.verify("model file", f.Path, f)...)
		}
	}
	reasons = append(reasons, checkCorpus(c.root, x, e)...)
	return reasons
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// verify checks one local file against its lock through the stat cache.
func (c *checker) verify(what, shown string, fl FileLock) []string {
	p := filepath.FromSlash(fl.Path)
	if !filepath.IsAbs(p) {
		p = filepath.Join(c.root, p)
	}
	r, ok := c.sums[p]
	if !ok {
		hs, err := c.hasher.Hash(context.Background(), []string{p})
		if err == nil {
			r.sum = hs[0].SHA256
		}
		r.err = err
		c.sums[p] = r
	}
	err := r.err
	if errors.Is(err, fs.ErrNotExist) {
		return []string{fmt.Sprintf("%s %s is missing", what, shown)}
	}
	if err != nil {
		return []string{fmt.Sprintf("%s %s: %v", what, shown, err)}
	}
	if r.sum != fl.SHA256 {
		return []string{fmt.Sprintf("%s %s changed (locked sha256 %s, now %s)", what, shown, short(fl.SHA256), short(r.sum))}
	}
	return nil
}

func shortDigest(d string) string {
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12]
	}
	return d
}

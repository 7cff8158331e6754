package lock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"sync"

	"github.com/rigorbench/rigor/internal/spec"
)

// Change is one input whose lock changed.
type Change struct {
	// ID is the experiment.
	ID string `json:"id"`
	// Input names what changed: "spec", "engine.commit", "engine.npm",
	// "engine.patch <path>", "engine.binary <path>", "model.commit",
	// "model.file <path>", "model.synthetic", or "entry" for an entry added
	// or removed as a whole.
	Input string `json:"input"`
	// Old and New are the values; "" means none.
	Old string `json:"old"`
	New string `json:"new"`
}

// Diff lists what changed from old to new (either may be nil) for the
// experiment id, in a fixed order.
func Diff(id string, old, new *Entry) []Change {
	var out []Change
	add := func(input, o, n string) {
		if o != n {
			out = append(out, Change{ID: id, Input: input, Old: o, New: n})
		}
	}
	if old == nil && new == nil {
		return nil
	}
	if new == nil {
		add("entry", "locked", "")
		return out
	}
	if old == nil {
		old = &Entry{}
	}
	add("spec", old.SpecDigest, new.SpecDigest)
	add("engine.commit", old.Engine.Commit, new.Engine.Commit)
	add("engine.npm", npmString(old.Engine.NPM), npmString(new.Engine.NPM))
	if old.Engine.NPM != nil || new.Engine.NPM != nil {
		var o, n *NPMLock
		if old.Engine.NPM != nil {
			o = old.Engine.NPM.Platform
		}
		if new.Engine.NPM != nil {
			n = new.Engine.NPM.Platform
		}
		add("engine.npm.platform", npmString(o), npmString(n))
	}
	diffFiles(&out, id, "engine.patch", patchFiles(old.Engine.Patches), patchFiles(new.Engine.Patches))
	diffFiles(&out, id, "engine.binary", old.Engine.Binaries, new.Engine.Binaries)
	add("model.commit", old.Model.Commit, new.Model.Commit)
	diffFiles(&out, id, "model.file", old.Model.Files, new.Model.Files)
	var os, ns string
	if old.Model.Synthetic != nil {
		os = old.Model.Synthetic.SHA256
	}
	if new.Model.Synthetic != nil {
		ns = new.Model.Synthetic.SHA256
	}
	add("model.synthetic", os, ns)
	return out
}

func npmString(n *NPMLock) string {
	if n == nil {
		return ""
	}
	return n.Package + "@" + n.Version + " " + n.Integrity
}

func patchFiles(ps []PatchLock) []FileLock {
	out := make([]FileLock, len(ps))
	for i, p := range ps {
		out[i] = FileLock{Path: p.Path, Size: p.Size, SHA256: p.SHA256}
	}
	return out
}

func diffFiles(out *[]Change, id, input string, old, new []FileLock) {
	hash := func(f FileLock) string {
		if f.SHA256 != "" {
			return f.SHA256
		}
		return f.BlobID
	}
	o := map[string]string{}
	n := map[string]string{}
	var names []string
	for _, f := range old {
		o[f.Path] = hash(f)
		names = append(names, f.Path)
	}
	for _, f := range new {
		if _, ok := o[f.Path]; !ok {
			names = append(names, f.Path)
		}
		n[f.Path] = hash(f)
	}
	sort.Strings(names)
	for _, name := range names {
		if o[name] != n[name] {
			*out = append(*out, Change{ID: id, Input: input + " " + name, Old: o[name], New: n[name]})
		}
	}
}

// LockResult is what [Resolver.Lock] did.
type LockResult struct {
	// Changes lists every input whose lock changed, by experiment id.
	Changes []Change
	// Written lists the lockfiles written (module-relative paths).
	Written []string
	// Errors holds an *[InputError] for each input that failed, sorted by
	// experiment id. The lockfile of a package with an error is left as
	// it was.
	Errors []error
	// Moved lists the engine refs that a git mirror's fetch found moved
	// upstream while the lock of an experiment that requests them still
	// pins another commit (a kept pin: 'rigor lock --update engine'
	// moves it).
	Moved []Drift
	// FromArchive lists the inputs whose upstream was gone or could not be
	// reached (or, offline, were not cached), locked from the archive's
	// pin of their request (see [Options.Archive]).
	FromArchive []FromArchive
}

// Lock resolves the experiments of set (those a pattern selected) and
// writes the lockfile of each package whose experiments all resolved.
// Entries of experiments outside set are kept; entries of experiments that
// no longer exist are dropped. rigorVersion is recorded in a lockfile that
// changes. A lockfile that cannot be read stops everything before any
// resolution: it is returned as the error.
func (r *Resolver) Lock(ctx context.Context, set *spec.Set, rigorVersion string) (*LockResult, error) {
	if r.err != nil {
		return nil, r.err
	}
	byPkg := map[string][]*spec.Experiment{}
	var pkgs []string
	for _, x := range set.Experiments {
		if _, ok := byPkg[x.Package]; !ok {
			pkgs = append(pkgs, x.Package)
		}
		byPkg[x.Package] = append(byPkg[x.Package], x)
	}
	sort.Strings(pkgs)
	olds := map[string]*File{}
	for _, pkg := range pkgs {
		f, err := Read(set.Root, pkg)
		if errors.Is(err, fs.ErrNotExist) {
			f = nil
		} else if err != nil {
			return nil, err
		}
		olds[pkg] = f
	}
	existing := map[string]bool{}
	if ids, err := spec.AllIDs(set.Root); err == nil {
		for _, id := range ids {
			existing[id] = true
		}
	}

	results := r.resolveAll(ctx, set, olds)
	res := &LockResult{}
	entries := map[string]*Entry{}
	for x, rs := range results {
		if rs.err == nil {
			entries[x.ID] = rs.entry
		}
	}
	res.Moved = r.driftsOf(entries)
	ids := map[string]bool{}
	for _, x := range set.Experiments {
		ids[x.ID] = true
	}
	res.FromArchive = r.fromArchiveOf(ids)
	for _, pkg := range pkgs {
		old := olds[pkg]
		nf := &File{Version: Version, Rigor: rigorVersion, Experiments: map[string]*Entry{}}
		if old != nil {
			nf.Rigor = old.Rigor
			for id, e := range old.Experiments {
				if len(existing) == 0 || existing[id] {
					nf.Experiments[id] = e
				}
			}
		}
		failed := false
		var changes []Change
		for _, x := range byPkg[pkg] {
			rs := results[x]
			if rs.err != nil {
				failed = true
				res.Errors = append(res.Errors, flatten(rs.err)...)
				continue
			}
			var prev *Entry
			if old != nil {
				prev = old.Experiments[x.ID]
			}
			changes = append(changes, Diff(x.ID, prev, rs.entry)...)
			nf.Experiments[x.ID] = rs.entry
		}
		if old != nil {
			var gone []string
			for id := range old.Experiments {
				if _, ok := nf.Experiments[id]; !ok {
					gone = append(gone, id)
				}
			}
			sort.Strings(gone)
			for _, id := range gone {
				changes = append(changes, Diff(id, old.Experiments[id], nil)...)
			}
		}
		if !failed {
			// A hub model's vocabulary is known from the header the lock
			// read: compare it with the baseline's before writing.
			if errs := checkVocabularies(byPkg[pkg], nf); len(errs) > 0 {
				failed = true
				res.Errors = append(res.Errors, errs...)
			}
		}
		if failed {
			continue
		}
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("lock interrupted: %w", err)
		}
		if old != nil && sameBytes(old, nf) {
			continue
		}
		nf.Rigor = rigorVersion
		if err := Write(set.Root, pkg, nf); err != nil {
			return res, err
		}
		res.Changes = append(res.Changes, changes...)
		res.Written = append(res.Written, path.Join(Dir, pkg+Ext))
	}
	return res, nil
}

// resolved is one experiment's entry, or why it could not be resolved.
type resolved struct {
	entry *Entry
	err   error
}

// resolveAll resolves every experiment of set, Concurrency at a time, from
// its entry in the old lockfiles.
func (r *Resolver) resolveAll(ctx context.Context, set *spec.Set, olds map[string]*File) map[*spec.Experiment]*resolved {
	results := make(map[*spec.Experiment]*resolved)
	var mu sync.Mutex
	sem := make(chan struct{}, r.opts.Concurrency)
	var wg sync.WaitGroup
	for _, x := range set.Experiments {
		var old *Entry
		if f := olds[x.Package]; f != nil {
			old = f.Experiments[x.ID]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			e, err := r.Resolve(ctx, x, old)
			mu.Lock()
			results[x] = &resolved{e, err}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return results
}

// sameBytes reports whether nf encodes as old does (old's rigor version
// kept), so a relock with nothing changed rewrites nothing.
func sameBytes(old, nf *File) bool {
	a, err1 := Encode(old)
	b, err2 := Encode(nf)
	return err1 == nil && err2 == nil && string(a) == string(b)
}

// flatten splits a joined error into its parts.
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

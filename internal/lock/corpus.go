package lock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/rigorbench/rigor/internal/hf"
	"github.com/rigorbench/rigor/internal/spec"
)

// Corpus returns the bytes of a quality corpus named by its name: one
// shipped with rigor ("builtin:opticks") or a file of the module at root.
// A hub corpus is read by [HubCorpus].
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

// request is the corpus as the lock records its request.
func corpusRequest(c spec.Corpus) CorpusLock {
	if c.Hub() {
		return CorpusLock{Path: c.File, HF: c.HF, Revision: c.Revision}
	}
	return CorpusLock{Path: c.Name}
}

// sameRequest reports whether a locked corpus answers the request c.
func (cl *CorpusLock) sameRequest(c spec.Corpus) bool {
	want := corpusRequest(c)
	return cl != nil && cl.Path == want.Path && cl.HF == want.HF && cl.Revision == want.Revision
}

// lockCorpus pins the corpus of x's quality.measure, if any: a name's
// bytes are hashed; a hub file's commit, size and sha256 are pinned (kept
// from old while the request is the same, unless the model is updated,
// as a hub model's are).
func (r *Resolver) lockCorpus(ctx context.Context, x *spec.Experiment, old *CorpusLock) (*CorpusLock, error) {
	m := x.Spec.Quality.Measure
	if m == nil {
		return nil, nil
	}
	fail := func(err error) (*CorpusLock, error) {
		return nil, &InputError{ID: x.ID, Input: "quality.measure.corpus", Err: err}
	}
	c := m.Corpus
	if !c.Hub() {
		b, err := Corpus(r.opts.Root, c.Name)
		if err != nil {
			return fail(err)
		}
		sum, size, _ := hashBytes(b)
		return &CorpusLock{Path: c.Name, Size: size, SHA256: sum}, nil
	}
	if old.sameRequest(c) && old.Commit != "" && !r.opts.Update.Model {
		kept := *old
		return &kept, nil
	}
	if err := hf.ValidateRepoID(c.HF); err != nil {
		return fail(err)
	}
	if r.opts.Offline || r.hf.Offline() {
		return fail(&hintedError{msg: fmt.Sprintf("offline: the corpus %s is not locked yet, and resolving it needs the hub", c),
			hint: "run without --offline (and without HF_HUB_OFFLINE) to lock it"})
	}
	cl, err := r.hubCorpus(ctx, c)
	if err != nil {
		what := c.HF + "@" + c.Rev() + " " + c.File
		p, aerr := r.fromArchive(ctx, x.ID, DriftCorpus, what, CorpusKey(c.HF, c.Rev(), c.File), err)
		if aerr != nil {
			return fail(aerr)
		}
		f := p.Files[0]
		return &CorpusLock{Path: c.File, HF: c.HF, Revision: c.Revision, Commit: p.Commit, Size: f.Size, SHA256: f.SHA256, BlobID: f.BlobID}, nil
	}
	return cl, nil
}

// hubCorpus locks a hub corpus from the hub.
func (r *Resolver) hubCorpus(ctx context.Context, c spec.Corpus) (*CorpusLock, error) {
	fail := func(err error) (*CorpusLock, error) { return nil, err }
	if err := r.probeHub(ctx); err != nil {
		return fail(err)
	}
	commit, err := r.hf.ResolveRevision(ctx, c.HF, c.Rev())
	if err != nil {
		return fail(err)
	}
	all, err := r.hf.ListFiles(ctx, c.HF, commit)
	if err != nil {
		return fail(err)
	}
	var info *hf.FileInfo
	var names []string
	for i := range all {
		if all[i].Path == c.File {
			info = &all[i]
		}
		names = append(names, all[i].Path)
	}
	if info == nil {
		return fail(fmt.Errorf("%s@%s has no file %s (it has %s)", c.HF, short(commit), c.File, strings.Join(clipNames(names, 8), ", ")))
	}
	fl, err := r.hubFile(ctx, c.HF, commit, *info)
	if err != nil {
		return fail(err)
	}
	return &CorpusLock{Path: c.File, HF: c.HF, Revision: c.Revision, Commit: commit, Size: fl.Size, SHA256: fl.SHA256, BlobID: fl.BlobID}, nil
}

func clipNames(names []string, n int) []string {
	if len(names) <= n {
		return names
	}
	return append(names[:n:n], fmt.Sprintf("and %d more", len(names)-n))
}

// checkCorpus says how the locked corpus differs from x's, if it does. A
// hub corpus is checked by its request; its bytes are checked when a run
// reads them.
func checkCorpus(root string, x *spec.Experiment, e *Entry) []string {
	m := x.Spec.Quality.Measure
	switch {
	case m == nil:
		return nil
	case !e.Corpus.sameRequest(m.Corpus):
		return []string{fmt.Sprintf("corpus %s is not locked", m.Corpus)}
	case m.Corpus.Hub():
		return nil
	}
	b, err := Corpus(root, m.Corpus.Name)
	if err != nil {
		return []string{err.Error()}
	}
	if sum, _, _ := hashBytes(b); sum != e.Corpus.SHA256 {
		return []string{fmt.Sprintf("corpus %s changed (locked sha256 %s, now %s)", m.Corpus, short(e.Corpus.SHA256), short(sum))}
	}
	return nil
}

// CorpusFileError is a hub corpus whose bytes in the hub cache are not
// the locked ones.
type CorpusFileError struct {
	Path, What string
}

func (e *CorpusFileError) Error() string {
	return fmt.Sprintf("corpus file %s differs from the lock: %s", e.Path, e.What)
}

// Hint says how to get the locked bytes back.
func (e *CorpusFileError) Hint() string {
	return "remove it: the next run downloads the locked bytes again (the lock pins the commit and the sha256)"
}

// CorpusMissingError is a hub corpus that is not in the hub cache and
// could not be downloaded there (no hub, or the hub failed): an archive
// may stand in.
type CorpusMissingError struct{ Err error }

func (e *CorpusMissingError) Error() string { return e.Err.Error() }

// Unwrap returns why it could not be downloaded.
func (e *CorpusMissingError) Unwrap() error { return e.Err }

// HubCorpus returns the bytes of a locked hub corpus from the hub cache,
// downloading it there first when it is missing (client may be nil when
// it is there), and refuses bytes that are not the locked ones, naming
// the file. A corpus it could neither find nor download is a
// [*CorpusMissingError].
func HubCorpus(ctx context.Context, client *hf.Client, hfCache string, c *CorpusLock) ([]byte, error) {
	if c == nil || c.HF == "" || c.Commit == "" {
		return nil, errors.New("the corpus is not a locked hub file")
	}
	p := hf.SnapshotPath(hfCache, c.HF, c.Commit, c.Path)
	if _, err := os.Stat(p); err != nil {
		if client == nil {
			return nil, &CorpusMissingError{fmt.Errorf("corpus %s@%s: %s is not in the hub cache, and there is no hub to download it from", c.HF, short(c.Commit), c.Path)}
		}
		info := hf.FileInfo{Path: c.Path, Size: c.Size, SHA256: c.SHA256, BlobID: c.BlobID, LFS: c.BlobID == ""}
		// refs/<revision> as rigor pull writes it: a revision that is the
		// commit (or its prefix) writes none.
		opts := hf.DownloadOptions{CacheDir: hfCache, Revision: c.Revision}
		if rev := strings.ToLower(c.Revision); rev != "" && strings.HasPrefix(strings.ToLower(c.Commit), rev) {
			opts.Revision = c.Commit
		}
		if err := client.Download(ctx, c.HF, c.Commit, []hf.FileInfo{info}, opts); err != nil {
			return nil, &CorpusMissingError{fmt.Errorf("downloading the corpus: %w", err)}
		}
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("corpus %s: %w", p, err)
	}
	sum, size, _ := hashBytes(b)
	switch {
	case size != c.Size:
		return nil, &CorpusFileError{Path: p, What: fmt.Sprintf("size %d, lock has %d", size, c.Size)}
	case sum != strings.ToLower(c.SHA256):
		return nil, &CorpusFileError{Path: p, What: fmt.Sprintf("sha256 %s, lock has %s", short(sum), short(c.SHA256))}
	}
	return b, nil
}

package lock

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/rigorbench/rigor/internal/hf"
	"github.com/rigorbench/rigor/internal/spec"
)

// model locks the model of x.
func (r *Resolver) model(ctx context.Context, x *spec.Experiment, old *ModelLock) (ModelLock, error) {
	m := x.Spec.Model
	req := ModelRequest{HF: m.HF, Revision: m.Revision, Files: m.Files, Path: m.Path, Synthetic: m.Synthetic, Name: m.Name}
	if len(req.Files) == 0 {
		req.Files = nil
	}
	ml := ModelLock{Requested: req}
	keep := old != nil && reflect.DeepEqual(old.Requested, req) && !r.opts.Update.Model
	fail := func(err error) (ModelLock, error) {
		return ModelLock{}, &InputError{ID: x.ID, Input: InputModel, Err: err}
	}
	switch {
	case m.Synthetic != nil:
		var oldSyn *SyntheticLock
		if keep {
			oldSyn = old.Synthetic
		}
		s, err := r.synthetic(ctx, *m.Synthetic, oldSyn)
		if err != nil {
			return fail(err)
		}
		ml.Synthetic = s
	case m.HF != "":
		if keep && old.Commit != "" && (m.Path != "" || len(old.Files) > 0) {
			ml.Commit, ml.Files = old.Commit, old.Files
		} else {
			res, err := r.hubResolve(ctx, m, m.Path == "")
			if err != nil && m.Path == "" {
				res, err = r.hubFromArchive(ctx, x.ID, m, err)
			} else if err != nil {
				res, err = r.revisionFromArchive(ctx, x.ID, m, err)
			}
			if err != nil {
				return fail(err)
			}
			ml.Commit, ml.Files = res.commit, res.files
		}
		if m.Path != "" {
			files, err := r.localModel(ctx, m)
			if err != nil {
				return fail(err)
			}
			ml.Files = files
		}
	case m.Path != "":
		files, err := r.localModel(ctx, m)
		if err != nil {
			return fail(err)
		}
		ml.Files = files
	case m.Name != "":
		// An endpoint's model: only its name is known.
	default:
		return fail(errors.New("the model names no hf repo, path or synthetic model"))
	}
	return ml, nil
}

type hubResult struct {
	commit string
	files  []FileLock
}

// hubResolve pins a hub repo's revision and, when withFiles, its files.
func (r *Resolver) hubResolve(ctx context.Context, m spec.Model, withFiles bool) (*hubResult, error) {
	key := fmt.Sprintf("hf\x00%s\x00%s\x00%q\x00%v", m.HF, m.Rev(), m.Files, withFiles)
	v, err := r.once(key, func() (any, error) {
		if err := hf.ValidateRepoID(m.HF); err != nil {
			return nil, err
		}
		if r.opts.Offline || r.hf.Offline() {
			return r.hubFromCache(m, withFiles)
		}
		if err := r.probeHub(ctx); err != nil {
			return nil, err
		}
		commit, err := r.hf.ResolveRevision(ctx, m.HF, m.Rev())
		if err != nil {
			return nil, err
		}
		res := &hubResult{commit: commit}
		if !withFiles {
			return res, nil
		}
		all, err := r.hf.ListFiles(ctx, m.HF, commit)
		if err != nil {
			return nil, err
		}
		matched, err := hf.MatchFiles(all, m.Files)
		if err != nil {
			return nil, fmt.Errorf("%s@%s: %w", m.HF, short(commit), err)
		}
		if len(matched) > 0 {
			if err := r.checkAccess(ctx, m.HF, m.Rev(), commit, matched[0].Path); err != nil {
				return nil, err
			}
		}
		for _, f := range matched {
			fl, err := r.hubFile(ctx, m.HF, commit, f)
			if err != nil {
				return nil, err
			}
			res.files = append(res.files, fl)
		}
		return res, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*hubResult), nil
}

// hubFromArchive takes the pin of a hub model of experiment id from the
// archive after the hub failed with upErr.
func (r *Resolver) hubFromArchive(ctx context.Context, id string, m spec.Model, upErr error) (*hubResult, error) {
	what := m.HF + "@" + m.Rev()
	if len(m.Files) > 0 {
		what += " " + strings.Join(m.Files, ",")
	}
	p, err := r.fromArchive(ctx, id, InputModel, what, HubKey(m.HF, m.Rev(), m.Files), upErr)
	if err != nil {
		return nil, err
	}
	return &hubResult{commit: p.Commit, files: p.Files}, nil
}

// revisionFromArchive takes the pin of the revision of a hub model read
// from a local path from the archive after the hub failed with upErr: the
// commit only, since its files are the module's, hashed where they are.
func (r *Resolver) revisionFromArchive(ctx context.Context, id string, m spec.Model, upErr error) (*hubResult, error) {
	p, err := r.fromArchive(ctx, id, InputModel, m.HF+"@"+m.Rev()+" (files at "+m.Path+")", RevisionKey(m.HF, m.Rev()), upErr)
	if err != nil {
		return nil, err
	}
	return &hubResult{commit: p.Commit}, nil
}

// hubFile locks one hub file from the hub itself, never from what the
// local cache happens to hold, so the lockfile's bytes are the same on
// every machine: an LFS file's sha256 is the tree's, its GGUF facts are
// read from the first bytes of its content; a small file stored in git
// (config.json, tokenizer files) is read whole and hashed, so that it too
// has a sha256 a run can verify (its git blob id is kept and checked as
// it streams).
func (r *Resolver) hubFile(ctx context.Context, repo, commit string, f hf.FileInfo) (FileLock, error) {
	fl := FileLock{Path: f.Path, Size: f.Size, SHA256: f.SHA256}
	isGGUF := strings.HasSuffix(strings.ToLower(f.Path), ".gguf")
	if f.LFS && !isGGUF {
		return fl, nil
	}
	if !f.LFS {
		fl.BlobID = f.BlobID
	}
	body, err := r.hf.Open(ctx, repo, commit, f.Path)
	if err != nil {
		return FileLock{}, err
	}
	defer body.Close()
	if f.LFS {
		fl.GGUF = ggufFactsFrom(body, f.Size)
		return fl, nil
	}
	b, err := io.ReadAll(io.LimitReader(body, f.Size+1))
	if err != nil {
		return FileLock{}, fmt.Errorf("reading %s@%s: %s: %w", repo, short(commit), f.Path, err)
	}
	if int64(len(b)) != f.Size || gitBlobID(b) != f.BlobID {
		return FileLock{}, fmt.Errorf("reading %s@%s: %s: the hub served %d bytes that do not match the tree's size %d and git blob id %s", repo, short(commit), f.Path, len(b), f.Size, short(f.BlobID))
	}
	fl.SHA256, _, _ = hashBytes(b)
	if isGGUF {
		fl.GGUF = ggufFactsFrom(bytes.NewReader(b), f.Size)
	}
	return fl, nil
}

// gitBlobID is git's object id of a blob with content b.
func gitBlobID(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// OfflineError says what an offline resolution could not find in the
// caches.
type OfflineError struct {
	// What names the input, e.g. "org/name@main".
	What string
	// Cache is the cache searched.
	Cache string
	// Missing says what was not there.
	Missing string
}

// Error names the input, the cache and what is missing.
func (e *OfflineError) Error() string {
	return fmt.Sprintf("offline: %s is not in the cache %s (%s)", e.What, e.Cache, e.Missing)
}

// Hint tells the user what to do.
func (e *OfflineError) Hint() string {
	return "run without --offline (and without HF_HUB_OFFLINE) to resolve it from the hub, or download it first"
}

// hubFromCache resolves a hub model from the hub cache alone: refs/<rev>
// (or the commit's snapshot), then the snapshot's files, whose blob names
// are their sha256 (LFS) or git blob id.
func (r *Resolver) hubFromCache(m spec.Model, withFiles bool) (*hubResult, error) {
	what := m.HF + "@" + m.Rev()
	if r.hfCache == "" {
		return nil, &OfflineError{What: what, Cache: "(none)", Missing: "no hub cache directory"}
	}
	repoDir := hf.RepoDir(r.hfCache, m.HF)
	commit := m.Rev()
	if !hex40.MatchString(commit) {
		b, err := os.ReadFile(filepath.Join(repoDir, "refs", filepath.FromSlash(commit)))
		if err != nil {
			return nil, &OfflineError{What: what, Cache: r.hfCache, Missing: "no refs/" + commit}
		}
		commit = strings.TrimSpace(string(b))
	}
	snap := filepath.Join(repoDir, "snapshots", commit)
	if _, err := os.Stat(snap); err != nil {
		return nil, &OfflineError{What: what, Cache: r.hfCache, Missing: "no snapshot " + commit}
	}
	res := &hubResult{commit: commit}
	if !withFiles {
		return res, nil
	}
	var infos []hf.FileInfo
	err := filepath.WalkDir(snap, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		st, err := os.Stat(p)
		if err != nil {
			return nil // a dangling link: not downloaded
		}
		rel, _ := filepath.Rel(snap, p)
		infos = append(infos, hf.FileInfo{Path: filepath.ToSlash(rel), Size: st.Size()})
		return nil
	})
	if err != nil {
		return nil, err
	}
	matched, err := hf.MatchFiles(infos, m.Files)
	if err != nil {
		return nil, &OfflineError{What: what, Cache: r.hfCache, Missing: err.Error()}
	}
	for _, f := range matched {
		p := filepath.Join(snap, filepath.FromSlash(f.Path))
		fl := FileLock{Path: f.Path, Size: f.Size, GGUF: ggufFacts(p)}
		target, err := os.Readlink(p)
		name := filepath.Base(target)
		switch {
		case err == nil && hex64.MatchString(name):
			fl.SHA256 = name
		default:
			// A small file stored in git (its blob named by the git blob
			// id), or a file not linked into blobs/: hash it, as the
			// online lock does.
			if err == nil && hex40.MatchString(name) {
				fl.BlobID = name
			}
			sum, _, err := HashFile(context.Background(), p)
			if err != nil {
				return nil, err
			}
			fl.SHA256 = sum
		}
		res.files = append(res.files, fl)
	}
	return res, nil
}

// localModel hashes the local files of a model: the file at path, or the
// files under the directory path that match the globs (every file but
// hidden ones when there are none).
func (r *Resolver) localModel(ctx context.Context, m spec.Model) ([]FileLock, error) {
	root := r.abs(m.Path)
	fi, err := os.Stat(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("model path %s does not exist", m.Path)
	}
	if err != nil {
		return nil, fmt.Errorf("model path %s: %w", m.Path, err)
	}
	if !fi.IsDir() {
		if len(m.Files) > 0 {
			return nil, fmt.Errorf("model path %s is a file, but files globs need a directory", m.Path)
		}
		return r.hashFiles(ctx, []string{root}, []string{m.Path})
	}
	var infos []hf.FileInfo
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		infos = append(infos, hf.FileInfo{Path: filepath.ToSlash(rel), Size: st.Size()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("model path %s: %w", m.Path, err)
	}
	if len(infos) == 0 {
		return nil, fmt.Errorf("model path %s holds no files", m.Path)
	}
	matched, err := hf.MatchFiles(infos, m.Files)
	if err != nil {
		return nil, fmt.Errorf("model path %s: %w", m.Path, err)
	}
	abs := make([]string, len(matched))
	shown := make([]string, len(matched))
	for i, f := range matched {
		abs[i] = filepath.Join(root, filepath.FromSlash(f.Path))
		shown[i] = path.Join(filepath.ToSlash(m.Path), f.Path)
	}
	return r.hashFiles(ctx, abs, shown)
}

// SyntheticPath returns where the synthetic model with the given sha256 is
// kept in rigor's cache: <cache>/models/synthetic/<sha256>.gguf.
func SyntheticPath(cache, sha string) string {
	return filepath.Join(cache, "models", "synthetic", sha+".gguf")
}

// synthetic writes the synthetic model into the cache (unless the old
// lock's file is there already) and pins its hash.
func (r *Resolver) synthetic(ctx context.Context, s spec.Synthetic, old *SyntheticLock) (*SyntheticLock, error) {
	if old != nil {
		if st, err := os.Stat(SyntheticPath(r.opts.Cache, old.SHA256)); err == nil && st.Size() == old.Size {
			return old, nil
		}
	}
	v, err := r.once(fmt.Sprintf("synthetic\x00%+v", s), func() (any, error) {
		final, sum, size, err := writeSynthetic(filepath.Join(r.opts.Cache, "models", "synthetic"), s)
		if err != nil {
			return nil, err
		}
		return &SyntheticLock{SHA256: sum, Size: size, GGUF: ggufFacts(final)}, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*SyntheticLock), nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// ModelFiles returns where a run finds the locked model files: the local
// files (as the experiment names them: a relative path is relative to the
// module root), the snapshot files <hfCache>/models--o--n/snapshots/
// <commit>/<file> of a hub model, or the synthetic model in rigor's cache
// directory cache.
func (e *Entry) ModelFiles(cache, hfCache string) []string {
	m := e.Model
	var out []string
	switch {
	case m.Synthetic != nil:
		out = append(out, SyntheticPath(cache, m.Synthetic.SHA256))
	case m.Requested.Path != "":
		for _, f := range m.Files {
			out = append(out, filepath.FromSlash(f.Path))
		}
	default:
		for _, f := range m.Files {
			out = append(out, hf.SnapshotPath(hfCache, m.Requested.HF, m.Commit, f.Path))
		}
	}
	return out
}

// EntryModel returns the file (or directory) the engine is given: for a
// split GGUF the -00001-of- part (spec.EntryFile), for a glob the first
// locked file that matches it in sorted order, with no files named the
// model path or the hub snapshot directory itself.
func (e *Entry) EntryModel(cache, hfCache string) string {
	m := e.Model
	if m.Requested.HF == "" && m.Requested.Path == "" && m.Synthetic == nil {
		return "" // an endpoint's model: a name, no file
	}
	if m.Synthetic != nil {
		return SyntheticPath(cache, m.Synthetic.SHA256)
	}
	base := func(rel string) string {
		if m.Requested.Path != "" {
			return filepath.Join(filepath.FromSlash(m.Requested.Path), filepath.FromSlash(rel))
		}
		return hf.SnapshotPath(hfCache, m.Requested.HF, m.Commit, rel)
	}
	entry := spec.EntryFile(m.Requested.Files)
	if entry == "" {
		return base("")
	}
	if strings.ContainsAny(entry, "*?[") {
		var names []string
		for _, f := range m.Files {
			rel := f.Path
			if m.Requested.Path != "" {
				rel = strings.TrimPrefix(strings.TrimPrefix(f.Path, path.Clean(filepath.ToSlash(m.Requested.Path))), "/")
			}
			if ok, _ := path.Match(entry, rel); ok {
				names = append(names, rel)
			}
		}
		sort.Strings(names)
		if len(names) == 0 {
			return base(entry)
		}
		entry = names[0]
	}
	return base(entry)
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rigorbench/rigor/internal/buildcache"
	"github.com/rigorbench/rigor/internal/hf"
	"github.com/rigorbench/rigor/internal/lock"
)

// A ModelSubstituter brings a model file this machine lacks from
// elsewhere (rigor archive's registry), by the sha256 the lock holds, into
// dest, refusing bytes that do not hash to it: false when it does not hold
// the file (or cannot be reached: then the run fails as it would without
// it). The substituter a run's context carries for builds and installs
// ([buildcache.WithSubstituter]) serves model files when it implements it.
type ModelSubstituter interface {
	SubstituteModel(ctx context.Context, what, sha string, size int64, dest string) (bool, error)
}

// Where a model file's bytes came from, as results.File.From says it.
const (
	FromCache    = "cache"
	FromUpstream = "upstream"
	FromArchive  = "archive"
)

// verifyModel checks the locked model files, as lock.VerifyModel does, and
// brings each missing hub file that carries a sha256 from ctx's model
// substituter when it has one, into the Hugging Face cache's layout (its
// blob named by the sha256, the snapshot's link to it). It returns, per file of the lock, where its bytes
// came from: "archive" for a file it brought, "cache" for a hub file that
// was there, "" for a local file (a hub model read from a local path's
// too: it is read where it is). A file present with other bytes is the
// error it was (a damaged blob is removed by hand, as the hint says).
func (r *Runner) verifyModel(ctx context.Context, id string, entry *lock.Entry) ([]string, error) {
	m := entry.Model
	from := make([]string, len(m.Files))
	for range len(m.Files) + 1 {
		_, err := lock.VerifyModel(ctx, lock.VerifyOptions{Root: r.Root, HFCache: r.HFCache, Cache: r.Cache}, id, entry)
		if err == nil {
			break
		}
		var mfe *lock.ModelFileError
		if !errors.As(err, &mfe) || !mfe.Missing {
			return nil, err
		}
		i := -1
		for j, f := range m.Files {
			if f.Path == mfe.File {
				i = j
			}
		}
		if i < 0 || from[i] != "" {
			return nil, err
		}
		ok, serr := r.substituteModel(ctx, entry, i)
		if serr != nil {
			return nil, serr
		}
		if !ok {
			return nil, err
		}
		from[i] = FromArchive
	}
	for i := range from {
		if from[i] == "" && m.Requested.HF != "" && m.Requested.Path == "" {
			from[i] = FromCache
		}
	}
	return from, nil
}

// substituteModel brings file i of the lock's model from ctx's model
// substituter, if it has one and the file carries a sha256.
func (r *Runner) substituteModel(ctx context.Context, entry *lock.Entry, i int) (bool, error) {
	s, ok := buildcache.SubstituterOf(ctx).(ModelSubstituter)
	m := entry.Model
	f := m.Files[i]
	// A local file is the module's: one that is missing makes the lock
	// stale before a run gets here (rigor archive pull restores it).
	if !ok || f.SHA256 == "" || m.Requested.HF == "" || m.Requested.Path != "" {
		return false, nil
	}
	f.BlobID = "" // a model file's blob is named by its sha256, as before
	return r.substituteHubFile(ctx, s, m.Requested.HF+"/"+f.Path, m.Requested.HF, m.Commit, f)
}

// substituteCorpus brings the locked hub corpus from ctx's model
// substituter, if it has one, into the Hugging Face cache's layout.
func (r *Runner) substituteCorpus(ctx context.Context, c *lock.CorpusLock) (bool, error) {
	s, ok := buildcache.SubstituterOf(ctx).(ModelSubstituter)
	if !ok || c.SHA256 == "" {
		return false, nil
	}
	f := lock.FileLock{Path: c.Path, Size: c.Size, SHA256: c.SHA256, BlobID: c.BlobID}
	return r.substituteHubFile(ctx, s, "corpus "+c.HF+"/"+c.Path, c.HF, c.Commit, f)
}

// substituteHubFile brings the hub file f of repo@commit from s into the
// Hugging Face cache: its blob (named by its sha256, or by its git blob
// id for a file stored in git, as huggingface_hub names them) and the
// snapshot's link to it.
func (r *Runner) substituteHubFile(ctx context.Context, s ModelSubstituter, what, repo, commit string, f lock.FileLock) (bool, error) {
	blob := hf.BlobPath(r.HFCache, repo, hf.FileInfo{SHA256: f.SHA256, BlobID: f.BlobID, LFS: f.BlobID == ""})
	ok, err := s.SubstituteModel(ctx, what, f.SHA256, f.Size, blob)
	if err != nil || !ok {
		return ok, err
	}
	link := hf.SnapshotPath(r.HFCache, repo, commit, f.Path)
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		return false, err
	}
	rel, err := filepath.Rel(filepath.Dir(link), blob)
	if err != nil {
		return false, err
	}
	os.Remove(link)
	if err := os.Symlink(rel, link); err != nil {
		return false, fmt.Errorf("linking %s: %w", link, err)
	}
	return true, nil
}

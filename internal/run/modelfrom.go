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
// was there, "" for a local file. A file present with other bytes is the
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
		if from[i] == "" && m.Requested.HF != "" {
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
	if !ok || f.SHA256 == "" || m.Requested.HF == "" {
		return false, nil
	}
	blob := hf.BlobPath(r.HFCache, m.Requested.HF, hf.FileInfo{SHA256: f.SHA256, LFS: true})
	ok, err := s.SubstituteModel(ctx, m.Requested.HF+"/"+f.Path, f.SHA256, f.Size, blob)
	if err != nil || !ok {
		return ok, err
	}
	link := hf.SnapshotPath(r.HFCache, m.Requested.HF, m.Commit, f.Path)
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

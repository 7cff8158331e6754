package archive

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Substituter brings builds and engine installs from an archive when the
// cache misses (a buildcache.Substituter): FetchDir into the caller's
// directory, which the caller checks before use. An archive that does not
// hold the artifact, or cannot be reached or logged in to, is no
// substitute (warned about through Warn) and the caller builds or
// installs as usual; bytes that do not match their digest are an error.
type Substituter struct {
	A *Archive
	// TmpDir is where a layer is staged before it is unpacked.
	TmpDir string
	// Warn, when set, is told why the archive could not be used.
	Warn func(string)
	// Fetching, when set, is told what is about to be fetched.
	Fetching func(kind, key string)

	mu  sync.Mutex
	got map[string]bool
}

// Substitute implements buildcache.Substituter.
func (s *Substituter) Substitute(ctx context.Context, kind, key, dir string) (bool, error) {
	ok, err := s.A.HasArtifact(ctx, Tag(kind, key))
	if err == nil && ok && s.Fetching != nil {
		s.Fetching(kind, key)
	}
	if err == nil && ok {
		err = s.A.FetchDir(ctx, kind, key, dir, s.TmpDir, nil)
	} else if err == nil {
		err = ErrNotArchived
	}
	if errors.Is(err, ErrNotArchived) {
		return false, nil
	}
	if errors.Is(err, ErrUnreachable) || errors.Is(err, ErrUnauthorized) {
		if s.Warn != nil {
			s.Warn(fmt.Sprintf("the archive could not be used for %s %.12s: %v", kind, key, err))
		}
		return false, nil
	}
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	if s.got == nil {
		s.got = map[string]bool{}
	}
	s.got[Tag(kind, key)] = true
	s.mu.Unlock()
	return true, nil
}

// Substituted says whether this substituter brought Tag(kind, key).
func (s *Substituter) Substituted(kind, key string) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got[Tag(kind, key)]
}

// SubstituteModel brings the archived model file of sha256 sha to dest
// (a run.ModelSubstituter): false when the archive does not hold it, or
// cannot be reached or logged in to (warned about through Warn); bytes
// that do not hash to sha are refused, naming the artifact.
func (s *Substituter) SubstituteModel(ctx context.Context, what, sha string, size int64, dest string) (bool, error) {
	ok, err := s.A.HasArtifact(ctx, ModelTag(sha))
	if err == nil && ok {
		if s.Fetching != nil {
			s.Fetching("model", what)
		}
		err = s.A.FetchModelFile(ctx, what, sha, size, dest, nil)
	} else if err == nil {
		return false, nil
	}
	if errors.Is(err, ErrNotArchived) {
		return false, nil
	}
	if errors.Is(err, ErrUnreachable) || errors.Is(err, ErrUnauthorized) {
		if s.Warn != nil {
			s.Warn(fmt.Sprintf("the archive could not be used for model file %s: %v", what, err))
		}
		return false, nil
	}
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	if s.got == nil {
		s.got = map[string]bool{}
	}
	s.got[ModelTag(sha)] = true
	s.mu.Unlock()
	return true, nil
}

package archive

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	return s.bring(ctx, Tag(kind, key), kind, key, fmt.Sprintf("%s %.12s", kind, key), func() error {
		return s.A.FetchDir(ctx, kind, key, dir, s.TmpDir, nil)
	})
}

// bring fetches the artifact tag with fetch when the archive holds it,
// telling Fetching (kind, key) first. An artifact the archive does not
// hold, or an archive that cannot be reached or logged in to (warned
// about through Warn, naming what), is no substitute: false and no
// error. Any other error (bytes that do not match their digest) is
// returned. What was brought is remembered for Substituted.
func (s *Substituter) bring(ctx context.Context, tag, kind, key, what string, fetch func() error) (bool, error) {
	ok, err := s.A.HasArtifact(ctx, tag)
	if err == nil && ok {
		if s.Fetching != nil {
			s.Fetching(kind, key)
		}
		err = fetch()
	} else if err == nil {
		err = ErrNotArchived
	}
	if errors.Is(err, ErrNotArchived) {
		return false, nil
	}
	if errors.Is(err, ErrUnreachable) || errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrNoCredentials) {
		if s.Warn != nil {
			s.Warn(fmt.Sprintf("the archive could not be used for %s: %v", what, err))
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
	s.got[tag] = true
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
	return s.bring(ctx, ModelTag(sha), "model", what, strings.TrimSuffix(fileWhat(what, ""), " ()"), func() error {
		return s.A.FetchModelFile(ctx, what, sha, size, dest, nil)
	})
}

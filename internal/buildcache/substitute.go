package buildcache

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// A Substituter brings a complete entry from elsewhere instead of building
// it, as Nix's substituters do: the build id is the key. rigor's archive
// (internal/archive) is one.
//
// Substitute writes what it has of kind ("build", or an engine install
// such as "install") and key into dir, an empty directory, marker
// included, and reports whether it had it. It is called holding the
// key's build lock, before any build starts; the caller checks what it
// wrote (the marker names the key, every program hashes to what its build
// recorded) before the entry is used. An error stops the build: an
// archive that holds damaged bytes is refused, never silently replaced by
// a build.
type Substituter interface {
	Substitute(ctx context.Context, kind, key, dir string) (ok bool, err error)
}

type substituterKey struct{}

// WithSubstituter returns ctx carrying s for the builds and installs run
// under it.
func WithSubstituter(ctx context.Context, s Substituter) context.Context {
	return context.WithValue(ctx, substituterKey{}, s)
}

// SubstituterOf returns the substituter ctx carries, or nil.
func SubstituterOf(ctx context.Context) Substituter {
	s, _ := ctx.Value(substituterKey{}).(Substituter)
	return s
}

// SubstitutedError is an entry a substituter brought whose marker or
// programs are not what the key and its build recorded: refused.
type SubstitutedError struct {
	Key string
	Err error
}

func (e *SubstitutedError) Error() string {
	return fmt.Sprintf("the archived build %.12s was refused: %v", e.Key, e.Err)
}
func (e *SubstitutedError) Unwrap() error { return e.Err }

// substitute asks ctx's substituter for key's entry into the build
// directory; on success the entry is checked and moved into place, and
// returned. nil, nil: no substituter, or it has none.
func (c Cache) substitute(ctx context.Context, key string) (*Entry, error) {
	s := SubstituterOf(ctx)
	if s == nil {
		return nil, nil
	}
	tmp := c.BuildDir(key)
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return nil, fmt.Errorf("creating build directory: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
	had, err := s.Substitute(ctx, "build", key, tmp)
	if err != nil || !had {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(tmp, MarkerFile))
	if err != nil {
		return nil, &SubstitutedError{Key: key, Err: fmt.Errorf("no %s: %w", MarkerFile, err)}
	}
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, &SubstitutedError{Key: key, Err: fmt.Errorf("%s: %w", MarkerFile, err)}
	}
	if e.Key != key || e.Inputs.Key() != key {
		return nil, &SubstitutedError{Key: key, Err: fmt.Errorf("its %s names build %.12s (inputs %.12s)", MarkerFile, e.Key, e.Inputs.Key())}
	}
	e.Dir = tmp
	if len(e.SHA256) == 0 || len(e.SHA256) < len(e.Bins) {
		return nil, &SubstitutedError{Key: key, Err: fmt.Errorf("its %s records no hash for some programs", MarkerFile)}
	}
	if err := e.Verify(fileSHA256); err != nil {
		return nil, &SubstitutedError{Key: key, Err: err}
	}
	final := c.EntryDir(key)
	if err := os.Rename(tmp, final); err != nil {
		return nil, fmt.Errorf("build %s: moving into place: %w", key[:12], err)
	}
	ok = true
	syncDir(c.Dir())
	e.Dir = final
	if t := traceOf(ctx); t != nil && t.Substituted != nil {
		t.Substituted(key)
	}
	return &e, nil
}

// Substituted reports whether ctx's substituter brought key (a build id
// or an install key) in this process: a record says its engine came from
// the archive.
func Substituted(ctx context.Context, key string) bool {
	s, ok := SubstituterOf(ctx).(interface{ Substituted(kind, key string) bool })
	return ok && key != "" && (s.Substituted("build", key) || s.Substituted("install", key))
}

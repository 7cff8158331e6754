package buildcache

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// copier substitutes from a complete entry of another cache, as the
// archive does, optionally damaging a program on the way.
type copier struct {
	from   Cache
	damage bool
	calls  int
}

func (c *copier) Substitute(ctx context.Context, kind, key, dir string) (bool, error) {
	c.calls++
	if kind != "build" {
		return false, nil
	}
	src := c.from.EntryDir(key)
	if _, err := os.Stat(src); err != nil {
		return false, nil
	}
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if c.damage && rel == filepath.Join("bin", "prog") {
			b = append(b, '!')
		}
		return os.WriteFile(filepath.Join(dir, rel), b, info.Mode())
	})
	return true, err
}

func TestCache_BuildSubstituted(t *testing.T) {
	ctx := context.Background()
	prog := func(ctx context.Context, dir string, log *os.File) (map[string]string, error) {
		os.MkdirAll(filepath.Join(dir, "bin"), 0o755)
		os.WriteFile(filepath.Join(dir, "bin", "prog"), []byte("x"), 0o755)
		return map[string]string{"prog": "bin/prog"}, nil
	}
	origin := Cache{Root: t.TempDir()}
	first, _, err := origin.Build(ctx, inputs(), prog)
	if err != nil {
		t.Fatal(err)
	}
	build := func(ctx context.Context, dir string, log *os.File) (map[string]string, error) {
		t.Fatal("built although the substituter had the entry")
		return nil, nil
	}

	// Substituted: no build, the same hashes, a complete entry, traced.
	c := Cache{Root: t.TempDir()}
	s := &copier{from: origin}
	var traced string
	sctx := WithTrace(WithSubstituter(ctx, s), &Trace{Substituted: func(key string) { traced = key }})
	e, built, err := c.Build(sctx, inputs(), build)
	if err != nil || built || s.calls != 1 {
		t.Fatalf("substituted Build: built %v, calls %d, %v", built, s.calls, err)
	}
	if e.SHA256["prog"] != first.SHA256["prog"] || traced != e.Key {
		t.Fatalf("substituted entry %+v, traced %q", e, traced)
	}
	if _, err := c.Lookup(e.Key); err != nil {
		t.Fatalf("the substituted entry is not complete: %v", err)
	}

	// A program that does not hash to what its build recorded is refused,
	// and leaves nothing that looks complete.
	c2 := Cache{Root: t.TempDir()}
	_, _, err = c2.Build(WithSubstituter(ctx, &copier{from: origin, damage: true}), inputs(), build)
	var se *SubstitutedError
	var bc *BinaryChangedError
	if !errors.As(err, &se) || !errors.As(err, &bc) || bc.Program != "prog" {
		t.Fatalf("damaged substitute: %v, want a SubstitutedError naming prog", err)
	}
	if _, err := c2.Lookup(inputs().Key()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a refused substitute left an entry: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(c2.Dir(), "*.tmp-*")); len(m) != 0 {
		t.Fatalf("a refused substitute left %v", m)
	}

	// A substituter without the entry: the build runs.
	c3 := Cache{Root: t.TempDir()}
	_, built, err = c3.Build(WithSubstituter(ctx, &copier{from: Cache{Root: t.TempDir()}}), inputs(), prog)
	if err != nil || !built {
		t.Fatalf("no substitute: built %v, %v", built, err)
	}
}

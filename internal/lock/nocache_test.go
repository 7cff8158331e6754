package lock

import (
	"context"
	"strings"
	"testing"

	"github.com/rigorbench/rigor/internal/gitsrc"
	"github.com/rigorbench/rigor/internal/spec"
)

// TestNoCache: the cache directory is configuration, read at the front
// door; a resolver or a git source without one fails instead of reading
// the environment for a default.
func TestNoCache(t *testing.T) {
	r := NewResolver(Options{Root: t.TempDir()})
	if _, err := r.Lock(context.Background(), &spec.Set{Root: t.TempDir()}, "test"); err == nil || !strings.Contains(err.Error(), "no cache directory") {
		t.Errorf("Lock without a cache = %v", err)
	}
	if errs := r.CheckOnline(context.Background(), &spec.Set{}).Errs; len(errs) != 1 || !strings.Contains(errs[0].Error(), "no cache directory") {
		t.Errorf("CheckOnline without a cache = %v", errs)
	}
	if _, err := gitsrc.Resolve(context.Background(), t.TempDir(), "main", gitsrc.Options{}); err == nil || !strings.Contains(err.Error(), "no cache directory") {
		t.Errorf("gitsrc.Resolve without a cache = %v", err)
	}
}

//go:build !unix

package gitrepo

import (
	"context"
)

// lockFile relies on git's index.lock alone where flock does not exist.
func lockFile(ctx context.Context, path string) (func(), error) { return func() {}, nil }

package gitrepo

import (
	"errors"
	"os"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Uncommitted returns those of paths (files) whose content differs from
// the file at HEAD: changed since, or never committed. Each file is hashed
// as a git blob and compared with HEAD's tree entry: no status scan of the
// working tree. A repository without commits has every path uncommitted;
func (g *Repo) Uncommitted(paths []string) ([]string, error) {
	var tree *object.Tree
	if head, err := g.r.Head(); err == nil {
		c, err := g.r.CommitObject(head.Hash())
		if err != nil {
			return nil, err
		}
		if tree, err = c.Tree(); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, plumbing.ErrReferenceNotFound) {
		return nil, err
	}
	var out []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		rel, err := g.Rel(p)
		if err != nil {
			return nil, err
		}
		if tree == nil {
			out = append(out, p)
			continue
		}
		f, err := tree.File(rel)
		if err != nil || f.Hash != plumbing.ComputeHash(plumbing.BlobObject, b) {
			out = append(out, p)
		}
	}
	return out, nil
}

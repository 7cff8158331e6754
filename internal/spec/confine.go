package spec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// EscapeError is returned by [Confine] when a path inside the module
// resolves, through a symbolic link, to a place outside it.
type EscapeError struct {
	// Path is the path as written, relative to the module root.
	Path string
	// Link is the symbolic link that leads out, relative to the module
	// root; Target is where it leads (absolute, symlinks resolved).
	Link, Target string
}

func (e *EscapeError) Error() string {
	return fmt.Sprintf("%s leaves the module: %s is a symlink to %s", e.Path, e.Link, e.Target)
}

// Confine resolves rel, a slash-separated path relative to the module root,
// with every symbolic link on the way, and returns its real path. A path
// that is absolute or climbs out with "..", or a link on the way whose
// target is outside the module's real root, is an *[EscapeError] naming
// the link and its target. A path that does not exist is not an error
// here: callers report that in their own words.
func Confine(root, rel string) (string, error) {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fmt.Errorf("resolving the module root %s: %w", root, err)
	}
	clean := filepath.Clean(filepath.FromSlash(rel))
	if !filepath.IsLocal(clean) {
		return "", &EscapeError{Path: rel, Link: rel, Target: filepath.Join(realRoot, clean)}
	}
	cur := realRoot
	walked := ""
	for _, part := range strings.Split(clean, string(filepath.Separator)) {
		cur = filepath.Join(cur, part)
		walked = filepath.Join(walked, part)
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			return filepath.Join(cur, strings.TrimPrefix(clean, walked)), nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		target, err := filepath.EvalSymlinks(cur)
		if err != nil {
			// A dangling link: where it points, as far as can be said.
			t, lerr := os.Readlink(cur)
			if lerr != nil {
				return "", err
			}
			if !filepath.IsAbs(t) {
				t = filepath.Join(filepath.Dir(cur), t)
			}
			target = filepath.Clean(t)
		}
		if !within(realRoot, target) {
			return "", &EscapeError{Path: rel, Link: filepath.ToSlash(walked), Target: target}
		}
		cur = target
	}
	return cur, nil
}

// within reports whether p is dir or under it.
func within(dir, p string) bool {
	r, err := filepath.Rel(dir, p)
	return err == nil && filepath.IsLocal(r) || r == "."
}

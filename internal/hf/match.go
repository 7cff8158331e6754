package hf

import (
	"fmt"
	"path"
	"strings"
)

// MatchFiles returns the files whose paths match at least one of globs, in
// the order of files. A glob is matched segment by segment with
// [path.Match] ("*" never crosses "/"), and a segment "**" matches any
// number of segments, including none. No globs means every file. A glob
// that is malformed or matches no file is an error naming it.
func MatchFiles(files []FileInfo, globs []string) ([]FileInfo, error) {
	if len(globs) == 0 {
		return append([]FileInfo(nil), files...), nil
	}
	pats := make([][]string, len(globs))
	for i, g := range globs {
		if g == "" {
			return nil, fmt.Errorf("empty file glob")
		}
		pats[i] = strings.Split(g, "/")
		for _, seg := range pats[i] {
			if _, err := path.Match(seg, ""); err != nil {
				return nil, fmt.Errorf("file glob %q: %w", g, err)
			}
		}
	}
	used := make([]bool, len(globs))
	var out []FileInfo
	for _, f := range files {
		segs := strings.Split(f.Path, "/")
		matched := false
		for i, p := range pats {
			if matchSegments(p, segs) {
				used[i] = true
				matched = true
			}
		}
		if matched {
			out = append(out, f)
		}
	}
	var unused []string
	for i, u := range used {
		if !u {
			unused = append(unused, fmt.Sprintf("%q", globs[i]))
		}
	}
	switch len(unused) {
	case 0:
		return out, nil
	case 1:
		return nil, fmt.Errorf("file glob %s matches none of the %d files in the repo", unused[0], len(files))
	default:
		return nil, fmt.Errorf("file globs %s match none of the %d files in the repo", strings.Join(unused, ", "), len(files))
	}
}

// matchSegments matches path segments against pattern segments, where a
// "**" pattern segment matches zero or more path segments.
func matchSegments(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			// Collapse runs of "**" so the search stays linear per level.
			for len(pat) > 1 && pat[1] == "**" {
				pat = pat[1:]
			}
			if len(pat) == 1 {
				return true
			}
			for i := 0; i <= len(segs); i++ {
				if matchSegments(pat[1:], segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		ok, err := path.Match(pat[0], segs[0])
		if err != nil || !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}

package spec

import (
	"regexp"
	"strings"
)

// npm version ranges, as node-semver reads them (https://github.com/npm/node-semver#range-grammar):
// a version ("3.22.1", "v3.22.1"), a partial or x-range ("3", "3.x",
// "3.22.*"), a comparator (">=3.22.0"), a tilde or caret range ("~3.22",
// "^3"), a hyphen range ("3.0.0 - 3.22.1"), several comparators joined by
// spaces (an intersection) and ranges joined by "||".
var (
	npmXR       = `(?:[xX*]|0|[1-9][0-9]*)`
	npmQual     = `(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?`
	npmPartial  = `v?` + npmXR + `(?:\.` + npmXR + `(?:\.` + npmXR + npmQual + `)?)?`
	npmSimple   = regexp.MustCompile(`^(?:[<>]=?|=|~>?|\^)?\s*` + npmPartial + `$`)
	npmHyphen   = regexp.MustCompile(`^(` + npmPartial + `)\s+-\s+(` + npmPartial + `)$`)
	npmDistTag  = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9._-]*$`)
	npmVersionV = regexp.MustCompile(`^v[0-9]`)
)

// ValidNPMVersion reports whether s is what npm takes after "pkg@": a
// version, a range, or a dist-tag ("latest", "beta"). A string npm would
// read as neither ("=.22.1", "3.22c1") is refused at vet instead of at
// lock, where npm's answer ("No matching version") does not say which
// part is wrong.
func ValidNPMVersion(s string) bool {
	if npmDistTag.MatchString(s) && !npmVersionV.MatchString(s) && !isXR(s) {
		return true
	}
	if strings.TrimSpace(s) == "" {
		return false
	}
	for _, r := range strings.Split(s, "||") {
		r = strings.TrimSpace(r)
		if r == "" {
			return false
		}
		if npmHyphen.MatchString(r) {
			continue
		}
		// Comparators joined by spaces; an operator may be followed by
		// spaces (">= 3.0.0").
		fields := strings.Fields(r)
		for i := 0; i < len(fields); i++ {
			f := fields[i]
			if strings.Trim(f, "<>=~^") == "" && i+1 < len(fields) {
				f += fields[i+1]
				i++
			}
			if !npmSimple.MatchString(f) {
				return false
			}
		}
	}
	return true
}

// isXR is a lone x-range word ("x", "X"), which is a range, not a tag.
func isXR(s string) bool { return s == "x" || s == "X" }

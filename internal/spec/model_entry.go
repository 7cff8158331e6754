package spec

import "regexp"

var splitGGUF = regexp.MustCompile(`-\*-of-(\d{5})\.gguf$`)

// EntryFile is the file the engine is given out of the model's file globs:
// for a split GGUF ("…-*-of-00004.gguf") the first part, which loads the
// others; for a plain name the name itself; otherwise the glob, to be
// resolved against the lock.
func EntryFile(files []string) string {
	if len(files) == 0 {
		return ""
	}
	f := files[0]
	if m := splitGGUF.FindStringSubmatch(f); m != nil {
		return splitGGUF.ReplaceAllString(f, "-00001-of-"+m[1]+".gguf")
	}
	return f
}

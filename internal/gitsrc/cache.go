package gitsrc

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
)

// CacheDirFrom returns rigor's cache directory from an environment:
// $RIGOR_CACHE if set, else $XDG_CACHE_HOME/rigor if XDG_CACHE_HOME is an
// absolute path, else ~/.cache/rigor. Without a home directory it falls
// back to a directory under [os.TempDir].
func CacheDirFrom(getenv func(string) string) string {
	if d := getenv("RIGOR_CACHE"); d != "" {
		return d
	}
	if d := getenv("XDG_CACHE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "rigor")
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		return filepath.Join(home, ".cache", "rigor")
	}
	return filepath.Join(os.TempDir(), "rigor-cache")
}

// maxMirrorNameLen bounds the readable part of a mirror's directory name.
const maxMirrorNameLen = 80

// MirrorPath returns the directory of the bare mirror of url under the cache
// directory cache: <cache>/git/<sanitized host and path>-<short sha256 of url>.
// The readable part helps a person browsing the cache; the hash of the exact
// URL string keeps two URLs from ever sharing a mirror.
func MirrorPath(cache, url string) string {
	url = StripUserinfo(url)
	sum := sha256.Sum256([]byte(url))
	return filepath.Join(cache, "git", sanitizeName(url)+"-"+hex.EncodeToString(sum[:6]))
}

// sanitizeName keeps the host and path of url as a file name: letters,
// digits, '.', '_' and '-', other runs of characters folded to one '-'.
func sanitizeName(url string) string {
	s := url
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	if i := strings.LastIndex(s, "@"); i >= 0 && !strings.Contains(s[:i], "/") {
		s = s[i+1:] // drop user info: user@host:path or user:pass@host/path
	}
	var b strings.Builder
	dash := false
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
		if !ok {
			if !dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = true
			continue
		}
		b.WriteRune(r)
		dash = false
	}
	name := strings.Trim(b.String(), "-.")
	if len(name) > maxMirrorNameLen {
		name = strings.Trim(name[len(name)-maxMirrorNameLen:], "-.")
	}
	if name == "" {
		name = "repo"
	}
	return name
}

// MirrorFor is the mirror directory of url as [EnsureMirror] names it: a
// local path made absolute first, credentials dropped.
func MirrorFor(cache, url string) string {
	if c, _, err := canonicalURL(url); err == nil {
		url = c
	}
	return MirrorPath(cache, url)
}

package hf

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// CacheDirFrom returns the hub cache directory of an environment as
// huggingface_hub computes it:
// $HF_HUB_CACHE, else the legacy $HUGGINGFACE_HUB_CACHE, else
// $HF_HOME/hub, where HF_HOME defaults to $XDG_CACHE_HOME/huggingface and
// then ~/.cache/huggingface. A leading "~/" is expanded.
func CacheDirFrom(getenv func(string) string) (string, error) {
	for _, k := range []string{"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"} {
		if v := getenv(k); v != "" {
			return expandHome(v, getenv)
		}
	}
	home, err := homeDir(getenv)
	if err != nil {
		return "", err
	}
	return filepath.Join(home, "hub"), nil
}

// homeDir returns HF_HOME with its defaults.
func homeDir(getenv func(string) string) (string, error) {
	if v := getenv("HF_HOME"); v != "" {
		return expandHome(v, getenv)
	}
	if v := getenv("XDG_CACHE_HOME"); v != "" {
		return expandHome(filepath.Join(v, "huggingface"), getenv)
	}
	home, err := userHome(getenv)
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".cache", "huggingface"), nil
}

func userHome(getenv func(string) string) (string, error) {
	if h := getenv("HOME"); h != "" {
		return h, nil
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return "", errors.New("finding the hugging face cache: no home directory: set HF_HUB_CACHE or HF_HOME")
	}
	return h, nil
}

func expandHome(p string, getenv func(string) string) (string, error) {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p, nil
	}
	home, err := userHome(getenv)
	if err != nil {
		return "", err
	}
	return filepath.Join(home, p[1:]), nil
}

// RepoDir returns the directory of a model repo in the cache:
// cache/models--owner--name.
func RepoDir(cache, repo string) string {
	return filepath.Join(cache, "models--"+strings.ReplaceAll(repo, "/", "--"))
}

// SnapshotPath returns where file of repo at commit appears in the cache:
// cache/models--owner--name/snapshots/<commit>/<file>.
func SnapshotPath(cache, repo, commit, file string) string {
	return filepath.Join(RepoDir(cache, repo), "snapshots", commit, filepath.FromSlash(file))
}

// BlobPath returns where the content of f is stored in the cache: the
// blob named by its sha256 for LFS files and by its git blob id otherwise,
// as huggingface_hub names them. It returns "" when f lacks the hash.
func BlobPath(cache, repo string, f FileInfo) string {
	name := blobName(f)
	if name == "" {
		return ""
	}
	return filepath.Join(RepoDir(cache, repo), "blobs", name)
}

// blobName is the file name of f's blob (its etag in huggingface_hub's
// terms), or "" when it has no usable hash.
func blobName(f FileInfo) string {
	switch {
	case f.LFS && isHex(f.SHA256, 64):
		return strings.ToLower(f.SHA256)
	case !f.LFS && isHex(f.BlobID, 40):
		return strings.ToLower(f.BlobID)
	case !f.LFS && isHex(f.SHA256, 64):
		return strings.ToLower(f.SHA256)
	}
	return ""
}

//go:build !linux

package results

import (
	"io/fs"
	"os"

	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// fillStat leaves the stat data out where it is not read portably; git
// then rehashes the file once.
func fillStat(e *index.Entry, fi fs.FileInfo) {}

// statKey returns what the index keeps of a record file's stat where
// only the portable part is read: size and modification time.
func statKey(path string) (fileKey, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileKey{}, err
	}
	return fileKey{Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}, nil
}

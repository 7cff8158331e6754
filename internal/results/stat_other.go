//go:build !linux

package results

import (
	"os"
)

// statKey returns what the index keeps of a record file's stat where
// only the portable part is read: size and modification time. A
// symbolic link is not followed ([Load] refuses it).
func statKey(path string) (fileKey, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return fileKey{}, err
	}
	return fileKey{Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}, nil
}

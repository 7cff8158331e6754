package results

import (
	"io/fs"
	"syscall"
)

// statKey returns what the index keeps of a record file's stat: size,
// modification and change times to the nanosecond, and inode. The change
// time cannot be set back by a program, so an edited file never matches.
// A symbolic link is not followed: [Load] refuses it, so nothing of its
// target is ever indexed.
func statKey(path string) (fileKey, error) {
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		return fileKey{}, &fs.PathError{Op: "lstat", Path: path, Err: err}
	}
	return fileKey{Size: st.Size, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(), Ino: st.Ino}, nil
}

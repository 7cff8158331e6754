package results

import (
	"io/fs"
	"syscall"
)

// statKey returns what the index keeps of a record file's stat: size,
// modification and change times to the nanosecond, and inode. The change
// time cannot be set back by a program, so an edited file never matches.
// A symbolic link is followed: its target is what is read.
func statKey(path string) (fileKey, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return fileKey{}, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	return fileKey{Size: st.Size, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(), Ino: st.Ino}, nil
}

package results

import (
	"io/fs"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// fillStat copies the stat data git keeps in the index, so that git sees
// the file as unchanged without hashing it again.
func fillStat(e *index.Entry, fi fs.FileInfo) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return
	}
	e.CreatedAt = time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
	e.Dev = uint32(st.Dev)
	e.Inode = uint32(st.Ino)
	e.UID = st.Uid
	e.GID = st.Gid
}

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

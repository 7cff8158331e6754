package gitrepo

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

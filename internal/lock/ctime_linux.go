package lock

import "syscall"

// ctimeNs is the file's change time, which no user can set back.
func ctimeNs(st *syscall.Stat_t) int64 { return st.Ctim.Nano() }

//go:build unix

package compare

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time the process has used, user plus system.
// The scale test and the benchmarks measure CPU as well as wall time, so
// that a machine busy with other work does not distort them.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

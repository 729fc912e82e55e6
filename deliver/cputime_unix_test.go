//go:build unix

package deliver

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the process has used, user and system: what a
// benchmark costs, unlike its wall time, does not grow while other jobs
// hold the machine's cores.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

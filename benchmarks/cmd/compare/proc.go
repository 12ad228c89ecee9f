package main

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user + system) the process has used so
// far, every thread counted: the SDK's background goroutines as well as
// the caller's.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

package main

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user + system) the process has used so
// far, every thread counted: the clients, their producers and the mock API
// share it, and on a small machine its ratio to the wall time shows how
// near the run came to using every core.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

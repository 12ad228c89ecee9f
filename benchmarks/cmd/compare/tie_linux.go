package main

import (
	"os/exec"
	"syscall"
)

// tieToParent has the kernel kill cmd when the orchestrator dies, however
// it dies (even SIGKILL), so that no sink or driver outlives it.
func tieToParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

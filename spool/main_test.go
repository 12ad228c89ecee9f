package spool

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(lockHolderEnv); dir != "" {
		os.Exit(holdLock(dir)) // the child of TestLockedByAnotherProcess
	}
	goleak.VerifyTestMain(m)
}

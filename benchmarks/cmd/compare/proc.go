package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// procStatusKiB reads one "Name:   1234 kB" field of /proc/self/status
// (VmRSS, VmHWM), in KiB; -1 where there is no /proc.
func procStatusKiB(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return -1
		}
		return v
	}
	return -1
}

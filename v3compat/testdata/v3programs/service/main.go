// Command service runs a short workload through a Tracker, an ordinary
// service wrapper of a v3 client, and prints what happened to it.
package main

import (
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
)

func main() {
	logger := log.New(os.Stderr, "service: ", 0)
	batchSize, _ := strconv.Atoi(os.Getenv("TRACKING_BATCH_SIZE"))
	tracker, err := NewTracker(Settings{
		WriteKey:  os.Getenv("SEGMENT_WRITE_KEY"),
		Endpoint:  os.Getenv("TRACKING_ENDPOINT"),
		BatchSize: batchSize,
		Tenant:    "tenant-42",
		Logger:    logger,
	})
	if err != nil {
		fmt.Println("could not start:", err)
		os.Exit(2)
	}

	for _, user := range []string{"ada", "grace", "edsger"} {
		if err := tracker.SignedUp(user, "pro"); err != nil {
			fmt.Println("error:", err)
		}
	}
	if err := tracker.JoinedTeam("ada", "team-7"); err != nil {
		fmt.Println("error:", err)
	}
	if err := tracker.SignedUp("", "free"); err != nil { // a bug: no user
		fmt.Println("error:", err)
	}
	if err := tracker.Invoiced("grace", 99.5, "paid by card"); err != nil {
		fmt.Println("error:", err)
	}
	if err := tracker.Invoiced("edsger", 12, strings.Repeat("long notes ", 4000)); err != nil {
		fmt.Println("error:", err)
	}

	if err := tracker.Close(); err != nil {
		fmt.Println("close:", err)
	}
	if err := tracker.Close(); err != nil {
		fmt.Println("second close:", err)
	}
	fmt.Println(tracker.Summary())
}

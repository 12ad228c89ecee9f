// Command trackloop sends a stream of track events the way v3's
// examples/track.go does: NewWithConfig with a longer Interval, a smaller
// BatchSize and Verbose logs, a deferred Close, and each Enqueue checked.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/segmentio/analytics-go/v3"
)

func main() {
	events := flag.Int("events", 120, "how many events to send")
	flag.Parse()

	client, _ := analytics.NewWithConfig(os.Getenv("SEGMENT_WRITE_KEY"), analytics.Config{
		Interval:  30 * time.Second,
		BatchSize: 50,
		Verbose:   true,
	})
	defer client.Close()

	for i := 0; i < *events; i++ {
		if err := client.Enqueue(analytics.Track{
			Event:  "Download",
			UserId: fmt.Sprintf("user-%d", i),
			Properties: map[string]interface{}{
				"application": "Desktop App",
				"version":     "1.1.0",
				"platform":    "linux",
			},
		}); err != nil {
			fmt.Println("error:", err)
			return
		}
	}
	fmt.Printf("queued %d events\n", *events)
}

// Command readme is the usage snippet of segmentio/analytics-go v3's
// README, in its shape: analytics.New returns one value, errors are not
// checked, the default endpoint is used.
package main

import (
	"os"

	"github.com/segmentio/analytics-go/v3"
)

func main() {
	// Create the client that sends messages to the tracking API.
	client := analytics.New(os.Getenv("SEGMENT_WRITE_KEY"))

	// Queue a track event; it is sent in the background.
	client.Enqueue(analytics.Track{
		UserId: "readme-user",
		Event:  "Readme Snippet Ran",
	})

	// Send whatever is queued and stop the client.
	client.Close()
}

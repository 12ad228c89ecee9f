// Command cli sends one message given on the command line and waits for
// its outcome, as v3's cmd/cli does: BatchSize 1 and a Callback that
// reports to a channel. Exit status: 0 delivered, 1 not delivered, 2 bad
// input.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/segmentio/analytics-go/v3"
)

func main() {
	var (
		writeKey   = flag.String("writeKey", os.Getenv("SEGMENT_WRITE_KEY"), "the write key of the source")
		typ        = flag.String("type", "track", "the message type: track, identify, group, page, screen or alias")
		userID     = flag.String("userId", "", "who")
		previousID = flag.String("previousId", "", "the identity an alias merges")
		groupID    = flag.String("groupId", "", "the group of a group call")
		traits     = flag.String("traits", "{}", "traits, as a JSON object")
		event      = flag.String("event", "", "the event of a track call")
		properties = flag.String("properties", "{}", "properties, as a JSON object")
		name       = flag.String("name", "", "the name of a page or screen")
	)
	flag.Parse()

	done := make(outcome, 1)
	client, err := analytics.NewWithConfig(*writeKey, analytics.Config{
		BatchSize: 1,
		Callback:  done,
	})
	if err != nil {
		fmt.Println("could not create the analytics client:", err)
		os.Exit(2)
	}
	defer client.Close()

	var msg analytics.Message
	switch *typ {
	case "track":
		msg = analytics.Track{UserId: *userID, Event: *event, Properties: object(*properties)}
	case "identify":
		msg = analytics.Identify{UserId: *userID, Traits: object(*traits)}
	case "group":
		msg = analytics.Group{UserId: *userID, GroupId: *groupID, Traits: object(*traits)}
	case "page":
		msg = analytics.Page{UserId: *userID, Name: *name, Properties: object(*properties)}
	case "screen":
		msg = analytics.Screen{UserId: *userID, Name: *name, Properties: object(*properties)}
	case "alias":
		msg = analytics.Alias{UserId: *userID, PreviousId: *previousID}
	default:
		fmt.Println("unknown type", *typ)
		os.Exit(2)
	}
	if err := client.Enqueue(msg); err != nil {
		if fe, ok := err.(analytics.FieldError); ok {
			fmt.Printf("invalid %s: %s is required\n", fe.Type, fe.Name)
		} else {
			fmt.Println("could not send:", err)
		}
		client.Close()
		os.Exit(2)
	}
	if err := <-done; err != nil {
		client.Close()
		os.Exit(1)
	}
	fmt.Println("delivered")
}

// object parses a JSON object, exiting on bad input.
func object(s string) map[string]interface{} {
	var m map[string]interface{}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		fmt.Println("not a JSON object:", s, err)
		os.Exit(2)
	}
	return m
}

// outcome is the analytics.Callback of the single message.
type outcome chan error

func (o outcome) Success(analytics.Message) { o <- nil }

func (o outcome) Failure(m analytics.Message, err error) {
	fmt.Printf("not delivered: %v\n", err)
	o <- err
}

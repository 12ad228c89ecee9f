package analytics_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	analytics "github.com/dualpath/analytics-go"
	"github.com/dualpath/analytics-go/analyticstest"
)

// localAPI starts a mock tracking API on 127.0.0.1 for the examples; a
// real program uses the default endpoint or WithEndpoint.
func localAPI(answers ...analyticstest.Answer) (*analyticstest.Server, string, func()) {
	api := analyticstest.New().Script(answers...)
	l, err := api.Start()
	if err != nil {
		log.Fatal(err)
	}
	return api, l.URL, func() { l.Close() }
}

func ExampleNew() {
	_, endpoint, stop := localAPI()
	defer stop()

	client, err := analytics.New("YOUR_WRITE_KEY",
		analytics.WithEndpoint(endpoint), // default: https://api.segment.io
		analytics.WithFlushAt(100),
		analytics.WithFlushInterval(2*time.Second),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	// Invalid options are refused by New, naming the option.
	_, err = analytics.New("YOUR_WRITE_KEY", analytics.WithFlushAt(0))
	fmt.Println(err)
	// Output: analytics: invalid option FlushAt: must be at least 1, got 0
}

func ExampleClient_Enqueue() {
	api, endpoint, stop := localAPI()
	defer stop()
	client, err := analytics.New("YOUR_WRITE_KEY", analytics.WithEndpoint(endpoint))
	if err != nil {
		log.Fatal(err)
	}

	err = client.Enqueue(analytics.Track{
		UserId:     "user-42",
		Event:      "Order Completed",
		Properties: analytics.NewProperties().SetRevenue(39.95).SetCurrency("EUR"),
	})
	fmt.Println("track:", err)

	// Enqueue refuses what it cannot send, at once, naming the field.
	err = client.Enqueue(analytics.Track{UserId: "user-42"})
	fmt.Println("no event name:", err, errors.Is(err, analytics.ErrInvalidMessage))

	client.Close()
	fmt.Println("received:", len(api.Delivered()))
	// Output:
	// track: <nil>
	// no event name: analytics: invalid message: analytics.Track.Event: required true
	// received: 1
}

func ExampleClient_EnqueueContext() {
	api, endpoint, stop := localAPI()
	defer stop()
	client, err := analytics.New("YOUR_WRITE_KEY", analytics.WithEndpoint(endpoint),
		analytics.WithMaxQueueSize(100), analytics.WithFlushAt(50))
	if err != nil {
		log.Fatal(err)
	}

	// An import job that must not drop events records them faster than
	// the API takes them. When the queue is full, EnqueueContext waits for
	// room, woken when a batch ends, where Enqueue would return
	// ErrQueueFull; if ctx ends first, the error matches both ErrQueueFull
	// and ctx.Err().
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 1000 {
		ev := analytics.Track{UserId: "user-42", Event: "Row Imported",
			Properties: analytics.NewProperties().Set("row", i)}
		if err := client.EnqueueContext(ctx, ev); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println(client.Close())
	fmt.Println("received:", len(api.Delivered()))
	// Output:
	// <nil>
	// received: 1000
}

func ExampleWithCloseTimeout() {
	_, endpoint, stop := localAPI()
	defer stop()
	// Close waits at most 30 s by default; this process has 10 s of grace
	// once it is told to stop. What is not delivered by then is reported
	// to Callback.Failure with ErrShutdown, and Close returns that error.
	client, err := analytics.New("YOUR_WRITE_KEY", analytics.WithEndpoint(endpoint),
		analytics.WithCloseTimeout(8*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	client.Enqueue(analytics.Track{UserId: "user-42", Event: "Signed Up"})
	fmt.Println(client.Close())
	// As in segmentio/analytics-go v3, only the first Close says how it went.
	fmt.Println(client.Close())
	// Output:
	// <nil>
	// analytics: client is closed
}

func ExampleClient_Flush() {
	api, endpoint, stop := localAPI()
	defer stop()
	client, err := analytics.New("YOUR_WRITE_KEY", analytics.WithEndpoint(endpoint))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	client.Enqueue(analytics.Identify{UserId: "user-42", Traits: analytics.NewTraits().SetEmail("ada@example.com")})
	// Send now rather than at FlushAt or FlushInterval, and wait for the
	// outcome, at most 5 seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := client.Flush(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("received:", len(api.Delivered()), "delivered:", client.Stats().Delivered)
	// Output: received: 1 delivered: 1
}

func ExampleClient_Shutdown() {
	// The API is down for good: every attempt is answered 503.
	down := analyticstest.New().Default(analyticstest.Status(503))
	l, err := down.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	client, err := analytics.New("YOUR_WRITE_KEY", analytics.WithEndpoint(l.URL))
	if err != nil {
		log.Fatal(err)
	}
	client.Enqueue(analytics.Track{UserId: "user-42", Event: "Job Finished"})

	// Before the process exits: send what is queued, but give up after a
	// deadline. What is not delivered by then is reported as failed.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = client.Shutdown(ctx)
	fmt.Println(err)
	fmt.Println("failed:", client.Stats().Failed.Shutdown)
	// Output:
	// context deadline exceeded
	// failed: 1
}

func ExampleCallbackFunc() {
	// The tracking API refuses the first batch (400) and accepts the next.
	_, endpoint, stop := localAPI(analyticstest.Status(400))
	defer stop()

	// One function gets every outcome: err is nil for a delivered event.
	// Like any Callback, it is called from several goroutines at once.
	outcome := analytics.CallbackFunc(func(msg analytics.Message, err error) {
		if err != nil {
			fmt.Println(analytics.MessageID(msg), "failed; fatal status:", errors.Is(err, analytics.ErrFatalStatus))
			return
		}
		fmt.Println(analytics.MessageID(msg), "delivered")
	})
	client, err := analytics.New("YOUR_WRITE_KEY", analytics.WithEndpoint(endpoint), analytics.WithCallback(outcome))
	if err != nil {
		log.Fatal(err)
	}

	client.Enqueue(analytics.Track{MessageId: "order-1", UserId: "user-42", Event: "Order Completed"})
	client.Flush(context.Background()) // returns once order-1 has its outcome
	client.Enqueue(analytics.Track{MessageId: "order-2", UserId: "user-42", Event: "Order Completed"})
	client.Close()
	// Output:
	// order-1 failed; fatal status: true
	// order-2 delivered
}

func ExampleWithRetryCount() {
	_, endpoint, stop := localAPI()
	defer stop()
	// At most 3 retries on the backoff path (4 attempts), waits from 1s
	// doubling up to 30s, and no batch retried for more than 5 minutes.
	// Rate-limited retries (a valid Retry-After) do not count, but are
	// bounded by WithMaxRateLimitDuration.
	client, err := analytics.New("YOUR_WRITE_KEY",
		analytics.WithEndpoint(endpoint),
		analytics.WithRetryCount(3),
		analytics.WithBackoffBase(time.Second),
		analytics.WithBackoffCap(30*time.Second),
		analytics.WithMaxTotalBackoffDuration(5*time.Minute),
		analytics.WithMaxRateLimitDuration(10*time.Minute),
		analytics.WithRateLimitRetryAfterCap(time.Minute),
	)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(client.Close())
	// Output: <nil>
}

func ExampleOptionsFromEnv() {
	os.Setenv("ANALYTICS_FLUSH_AT", "50")
	os.Setenv("ANALYTICS_REQUEST_TIMEOUT", "2.5") // seconds
	defer os.Unsetenv("ANALYTICS_FLUSH_AT")
	defer os.Unsetenv("ANALYTICS_REQUEST_TIMEOUT")

	opts, err := analytics.OptionsFromEnv()
	if err != nil {
		log.Fatal(err) // names the malformed variable
	}
	client, err := analytics.New("YOUR_WRITE_KEY", opts...)
	if err != nil {
		log.Fatal(err) // names the option out of range
	}
	fmt.Println(len(opts), client.Close())

	os.Setenv("ANALYTICS_FLUSH_AT", "fifty")
	_, err = analytics.OptionsFromEnv()
	fmt.Println(err)
	// Output:
	// 2 <nil>
	// analytics: environment variable ANALYTICS_FLUSH_AT: "fifty" is not a whole number of events; write e.g. 100
}

// A client with a durable spool: a process that dies before delivering
// leaves its events on disk, and the next client on the directory sends
// them first, calling each back once with a Spooled message.
func ExampleWithSpool() {
	dir, err := os.MkdirTemp("", "analytics-spool-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// The first process: the API is down, and the process is cut short
	// before it can deliver (here, a Shutdown whose context has ended).
	_, down, stopDown := localAPI()
	stopDown() // nothing listens there now
	first, err := analytics.New("YOUR_WRITE_KEY", analytics.WithEndpoint(down), analytics.WithSpool(dir))
	if err != nil {
		log.Fatal(err)
	}
	if err := first.Enqueue(analytics.Track{MessageId: "order-1", UserId: "user-42", Event: "Order Completed"}); err != nil {
		log.Fatal(err)
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	_ = first.Shutdown(ended)
	fmt.Println("left in the spool:", first.Stats().Spool.Left)

	// The next process, on the same directory, with the API up.
	api, endpoint, stop := localAPI()
	defer stop()
	next, err := analytics.New("YOUR_WRITE_KEY",
		analytics.WithEndpoint(endpoint),
		analytics.WithSpool(dir), // one client per directory: New fails if another has it
		analytics.WithCallback(analytics.CallbackFunc(func(m analytics.Message, err error) {
			if s, ok := m.(analytics.Spooled); ok {
				fmt.Println("delivered", s.Type, s.MessageId, "recovered:", s.Recovered, "error:", err)
			}
		})),
	)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("recovered:", next.Stats().Spool.Recovered)
	if err := next.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("received:", api.Delivered()["order-1"])
	// Output:
	// left in the spool: 1
	// recovered: 1
	// delivered track order-1 recovered: true error: <nil>
	// received: 1
}

func ExampleNewFromEnv() {
	os.Setenv("ANALYTICS_WRITE_KEY", "YOUR_WRITE_KEY") // in production, the deployment sets it
	os.Setenv("ANALYTICS_FLUSH_AT", "50")
	defer os.Unsetenv("ANALYTICS_WRITE_KEY")
	defer os.Unsetenv("ANALYTICS_FLUSH_AT")

	// The code's options are the defaults; a variable that is set wins.
	client, err := analytics.NewFromEnv(analytics.WithFlushAt(100))
	if err != nil {
		log.Fatal(err) // every problem of the environment at once
	}
	fmt.Println(client.Close())

	os.Unsetenv("ANALYTICS_WRITE_KEY")
	os.Setenv("ANALYTICS_FLUSH_INTERVALL", "5s")
	defer os.Unsetenv("ANALYTICS_FLUSH_INTERVALL")
	_, err = analytics.NewFromEnv()
	fmt.Println(err)
	// Output:
	// <nil>
	// analytics: environment variable ANALYTICS_WRITE_KEY: empty or unset; set it to the write key of your source
	// analytics: environment variable ANALYTICS_FLUSH_INTERVALL: unknown name; did you mean ANALYTICS_FLUSH_INTERVAL?
}

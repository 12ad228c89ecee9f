package consumer_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/dualpath/analytics-go/consumer"
	"github.com/dualpath/analytics-go/queue"
	"github.com/dualpath/analytics-go/retry"
)

// count is the Outcomes of the example: it counts delivered events.
type count struct {
	mu        sync.Mutex
	delivered int
}

func (c *count) Ended(run []queue.Item[consumer.Event], err error) {
	if err == nil {
		c.mu.Lock()
		c.delivered += len(run)
		c.mu.Unlock()
	}
}

func (*count) Called(*queue.Item[consumer.Event], error) {}
func (*count) Done([]queue.Item[consumer.Event], error)  {}

// A Loop empties a queue into a tracking API: here, three events, sent
// as one batch when the Loop is closed.
func ExampleLoop() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer api.Close()
	client := consumer.NewHTTPClient(2)
	defer client.CloseIdleConnections()

	q := queue.New[consumer.Event](100, 1<<20)
	for i := range 3 {
		q.Push(fmt.Appendf(nil, `{"type":"track","event":"E","userId":"u","messageId":"m%d"}`, i), consumer.Event{}, 0)
	}
	up := consumer.New(consumer.Config{
		Endpoint:              api.URL,
		WriteKey:              "wk",
		UserAgent:             "example/1.0",
		Context:               []byte(`{"library":{"name":"example","version":"1.0"}}`),
		Client:                client,
		RequestTimeout:        10 * time.Second,
		MaxBodyBytes:          500_000,
		MaxConcurrentRequests: 2,
		Policy:                retry.DefaultPolicy(),
	})
	out := &count{}
	loop := consumer.NewLoop(consumer.LoopConfig{
		Queue:         q,
		Uploader:      up,
		Outcomes:      out,
		FlushAt:       250,
		FlushInterval: 5 * time.Second,
	})
	loop.Start()
	loop.Close() // cut what is queued, and end
	<-loop.Done()
	fmt.Println("delivered", out.delivered, "in", loop.Batches(), "batch")
	// Output: delivered 3 in 1 batch
}

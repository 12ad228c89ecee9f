package analytics

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/analyticstest"
)

// At the defaults, a burst of MaxQueueSize events of the shapes users send
// (a Context, 5 to 10 properties) is taken whole while the API has not
// answered yet: MaxQueueBytes is not the first bound it meets, with a
// callback (the client keeps every message) or without one.
func TestDefaultsTakeABurstOfMaxQueueSize(t *testing.T) {
	shapes := map[string]func(int) Message{}
	for _, s := range keepShapes {
		shapes[s.name] = s.make
	}
	for _, name := range userShapes {
		for _, callback := range []bool{true, false} {
			t.Run(name+map[bool]string{true: "/callback", false: "/no-callback"}[callback], func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { burstAtDefaults(t, shapes[name], callback) })
			})
		}
	}
}

func burstAtDefaults(t *testing.T, shape func(int) Message, callback bool) {
	api := analyticstest.New().Default(analyticstest.Answer{Delay: 24 * time.Hour})
	var opts []Option
	if !callback {
		opts = append(opts, WithCallback(nil))
	}
	e := newEnv(t, api, opts...) // the SDK's defaults, on an API that does not answer
	maxQueueSize := defaultConfig().maxQueueSize
	refused := 0
	for i := range maxQueueSize {
		if err := e.client.Enqueue(shape(i)); err != nil {
			require.ErrorIs(t, err, ErrQueueFull, "Enqueue %d", i)
			refused++
		}
	}
	st := e.client.Stats()
	assert.Zero(t, refused, "events of the burst refused (%d bytes held, MaxQueueBytes %d)", st.QueueHeldBytes, defaultConfig().maxQueueBytes)
	assert.Equal(t, int64(maxQueueSize), int64(st.QueueDepth)+st.InFlight, "events held: the whole burst")
	assert.ErrorIs(t, e.client.Enqueue(shape(maxQueueSize)), ErrQueueFull, "one more event, past MaxQueueSize")
	t.Logf("%d events held, counted %d bytes (%d per event) against MaxQueueBytes %d",
		maxQueueSize, st.QueueHeldBytes, st.QueueHeldBytes/maxQueueSize, defaultConfig().maxQueueBytes)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	assert.ErrorIs(t, e.client.Shutdown(ctx), context.DeadlineExceeded, "Shutdown of a client whose API never answered")
}

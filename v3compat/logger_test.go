package analytics

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/analyticstest"
)

func TestStdLogger(t *testing.T) {
	var buf bytes.Buffer
	l := StdLogger(log.New(&buf, "app ", 0))
	l.Logf("sent %d", 3)
	l.Errorf("failed: %s", "boom")
	assert.Equal(t, "app INFO: sent 3\napp ERROR: failed: boom\n", buf.String())
}

func TestLogHandlerLevels(t *testing.T) {
	tests := []struct {
		verbose bool
		want    []string
	}{
		{false, []string{"INFO info k=1", "ERROR warn", "ERROR error"}},
		{true, []string{"INFO debug", "INFO info k=1", "ERROR warn", "ERROR error"}},
	}
	for _, tt := range tests {
		l := &lines{}
		log := slog.New(&logHandler{logger: l, verbose: tt.verbose})
		log.Debug("debug")
		log.Info("info", "k", 1)
		log.Warn("warn")
		log.Error("error")
		assert.Equal(t, tt.want, l.all(), "verbose %v", tt.verbose)
	}
}

func TestLogHandlerFormat(t *testing.T) {
	l := &lines{}
	log := slog.New(&logHandler{logger: l}).With("client", "c1").WithGroup("batch").With("events", 3)
	log.LogAttrs(context.Background(), slog.LevelWarn, "analytics: upload attempt failed",
		slog.String("error", `HTTP 503 "busy"`), slog.String("empty", ""),
		slog.Group("wait", slog.Duration("for", 1500_000_000)), slog.Attr{})
	assert.Equal(t, []string{`ERROR analytics: upload attempt failed client=c1 batch.events=3 ` +
		`batch.error="HTTP 503 \"busy\"" batch.empty="" batch.wait.for=1.5s`}, l.all())
}

// The root client logs through Config.Logger: a failed attempt that will be
// retried goes to Errorf, and the write key is nowhere.
func TestClientLogsThroughLogger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := analyticstest.New().Script(analyticstest.Answer{Status: 503, Body: "busy " + testWriteKey})
		c, l, out := newTestClient(t, api, Config{Interval: time.Second})
		require.NoError(t, c.Enqueue(Track{UserId: "u", Event: "E"}))
		time.Sleep(time.Minute) // sent, answered 503, retried and delivered
		require.NoError(t, c.Close())
		ok, _ := out.counts()
		assert.Equal(t, 1, ok)
		got := l.all()
		require.Len(t, got, 1, "%q", got)
		assert.True(t, strings.HasPrefix(got[0], "ERROR analytics: upload attempt failed, will retry"), got[0])
		assert.Contains(t, got[0], "503")
		assert.NotContains(t, got[0], testWriteKey)
	})
}

// Verbose logs each queued message to Logf, with v3's text: "buffer
// (n/BatchSize) <message>", n the messages queued before it. Off, nothing
// is logged for it.
func TestVerboseLogsEachMessage(t *testing.T) {
	for _, verbose := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			api := analyticstest.New()
			c, l, _ := newTestClient(t, api, Config{BatchSize: 10, Verbose: verbose})
			m1 := Track{UserId: "u", Event: "One"}
			m2 := Identify{UserId: "u"}
			require.NoError(t, c.Enqueue(m1))
			require.NoError(t, c.Enqueue(&m2))
			got := l.all()
			require.NoError(t, c.Close())
			if !verbose {
				assert.Empty(t, got)
				return
			}
			assert.Equal(t, []string{
				fmt.Sprintf("INFO buffer (0/10) %v", m1),
				fmt.Sprintf("INFO buffer (1/10) %v", m2),
			}, got)
		})
	}
}

// The size Verbose shows is the one in effect: a BatchSize over 2,500 is
// taken as 2,500.
func TestVerboseShowsTheBatchSizeInEffect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, l, _ := newTestClient(t, analyticstest.New(), Config{BatchSize: 5_000, Verbose: true})
		m := Track{UserId: "u", Event: "One"}
		require.NoError(t, c.Enqueue(m))
		got := l.all()
		require.NoError(t, c.Close())
		assert.Equal(t, []string{fmt.Sprintf("INFO buffer (0/2500) %v", m)}, got)
	})
}

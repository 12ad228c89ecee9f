package analytics

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestEnvUnknownNames(t *testing.T) {
	tests := []struct{ name, suggestion string }{
		{"ANALYTICS_FLUSH_INTERVALL", "ANALYTICS_FLUSH_INTERVAL"},
		{"ANALYTICS_FLUSHAT", "ANALYTICS_FLUSH_AT"},
		{"ANALYTICS_FLUHS_AT", "ANALYTICS_FLUSH_AT"},
		{"analytics_flush_at", "ANALYTICS_FLUSH_AT"},
		{"Analytics_Gzip", "ANALYTICS_GZIP"},
		{"ANALYTICS_WRITEKEY", "ANALYTICS_WRITE_KEY"},
		{"ANALYTICS_MAX_RETRY_COUNT", "ANALYTICS_RETRY_COUNT"},
		{"ANALYTICS_MAX_BACKOFF_DURATION", "ANALYTICS_MAX_TOTAL_BACKOFF_DURATION"},
		{"ANALYTICS_BACKOFF_MAX", "ANALYTICS_BACKOFF_CAP"},
		{"ANALYTICS_REQEST_TIMEOUT", "ANALYTICS_REQUEST_TIMEOUT"},
		{"ANALYTICS_CLOSETIMEOUT", "ANALYTICS_CLOSE_TIMEOUT"},
		{"ANALYTICS_ENDPOINT_URL", "ANALYTICS_ENDPOINT"},
		{"ANALYTICS_QUEUE_SIZE", "ANALYTICS_MAX_QUEUE_SIZE"},
		{"ANALYTICS_HOST", ""},
		{"ANALYTICS_SHUTDOWN_TIMEOUT", ""},
		{"ANALYTICS_BACKOFF", ""}, // BACKOFF_BASE, BACKOFF_CAP, ...: no guess
		{"ANALYTICS_", ""},
	}
	for _, tt := range tests {
		want := "analytics: environment variable " + tt.name + ": unknown name (the doc of analytics.OptionsFromEnv lists the names it reads)"
		if tt.suggestion != "" {
			want = "analytics: environment variable " + tt.name + ": unknown name; did you mean " + tt.suggestion + "?"
		}
		lines := envErrorLines(t, tt.name+"=1")
		assert.Equal(t, []string{want}, lines, "%s", tt.name)
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"FLUSH_AT", "FLUSH_AT", 0},
		{"FLUSHAT", "FLUSH_AT", 1},
		{"FLUHS_AT", "FLUSH_AT", 1},
		{"FLUSH_INTERVALL", "FLUSH_INTERVAL", 1},
		{"GZIP", "HOST", 4},
		{"kitten", "sitting", 3},
		{"ca", "abc", 3}, // the optimal string alignment distance, not Damerau's 2
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, editDistance(tt.a, tt.b), "%q to %q", tt.a, tt.b)
	}
}

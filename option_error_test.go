package analytics

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOptionErrorNamesTheOption(t *testing.T) {
	tests := []struct {
		name   string
		key    string
		opts   []Option
		option string
		text   string
	}{
		{"write key", "", nil, "WriteKey", "analytics: invalid option WriteKey: must not be empty"},
		{"flush at", "k", []Option{WithFlushAt(0)}, "FlushAt", "analytics: invalid option FlushAt: must be at least 1, got 0"},
		{"endpoint", "k", []Option{WithEndpoint("ftp://x")}, "Endpoint", `analytics: invalid option Endpoint: must be an absolute http or https URL, got "ftp://x"`},
		{"http client", "k", []Option{WithHTTPClient(nil)}, "HTTPClient", "analytics: invalid option HTTPClient: must not be nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.key, tt.opts...)
			require.Error(t, err)
			assert.Nil(t, c)
			var oe *OptionError
			require.ErrorAs(t, err, &oe)
			assert.Equal(t, tt.option, oe.Option)
			assert.Equal(t, tt.text, err.Error())
		})
	}
}

func TestOptionErrorThroughNewFromEnv(t *testing.T) {
	_, err := newFromEnviron([]string{"ANALYTICS_WRITE_KEY=k", "ANALYTICS_FLUSH_AT=20000"}, nil)
	var oe *OptionError
	require.True(t, errors.As(err, &oe), "%v", err)
	assert.Equal(t, "FlushAt", oe.Option)
}

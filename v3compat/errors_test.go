package analytics

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// ConfigError reads as v3's.
func TestConfigErrorText(t *testing.T) {
	e := ConfigError{Reason: "testing", Field: "Answer", Value: 42}
	assert.Equal(t, "analytics.NewWithConfig: testing (analytics.Config.Answer: 42)", e.Error())
}

package consumer

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRedirectToARefusedPortIsNotWritten(t *testing.T) {
	target := "http://" + refusedAddr(t) + "/v1/batch"
	url := rawServer(t, func(c net.Conn, _ *http.Request) {
		fmt.Fprintf(c, "HTTP/1.1 307 Temporary Redirect\r\nLocation: %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", target)
	})
	up := realUploader(t, url, 5*time.Second, nil)
	err := deliverOnce(t, context.Background(), up)
	var te *TransportError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, PhaseNotConnected, te.Phase, "the last hop never connected")
	assert.False(t, te.Written(), "written")
	c := up.Counters()
	assert.Equal(t, int64(1), c.TransportErrors.NotWritten)
	assert.Zero(t, c.TransportErrors.Written)
}

package consumer

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failingBody returns its text, then err.
type failingBody struct {
	r   io.Reader
	err error
}

func (b *failingBody) Read(p []byte) (int, error) {
	if n, _ := b.r.Read(p); n > 0 {
		return n, nil
	}
	return 0, b.err
}

// TestHTTPErrorKeepsTheBodyReadError: an error response whose body breaks
// off keeps the read's error, as the body returned it, and the excerpt read
// before it.
func TestHTTPErrorKeepsTheBodyReadError(t *testing.T) {
	errRead := errors.New("connection reset while reading the body")
	u := New(Config{WriteKey: "k"})
	resp := &http.Response{
		StatusCode: http.StatusBadRequest,
		Header:     http.Header{},
		Body:       io.NopCloser(&failingBody{r: strings.NewReader("bad req"), err: errRead}),
	}
	_, err := u.readResponse(context.Background(), resp)
	var he *HTTPError
	require.ErrorAs(t, err, &he)
	assert.Same(t, errRead, he.BodyErr, "BodyErr")
	assert.Equal(t, "bad req", he.Body)
}

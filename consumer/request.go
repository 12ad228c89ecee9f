package consumer

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"time"
)

// newRequest builds the POST of one attempt: the body (id is the batch's
// messageId when it carries one, sentAt is now, gzipped when on), the headers (auth is the Authorization), and a trace that records in phase how far
// the send gets.
func (u *Uploader) newRequest(ctx context.Context, events [][]byte, id string, retryCount int, auth string, phase *progress) (*http.Request, error) {
	body := newBatchBody(events, u.env, id, time.Now())
	var reader func() io.Reader
	length := body.Len()
	if u.gzip {
		payload := compress(body)
		length = len(payload)
		reader = func() io.Reader { return bytes.NewReader(payload) }
	} else {
		reader = body.Reader
	}

	ctx = httptrace.WithClientTrace(ctx, u.trace(phase, length))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.url, nil)
	if err != nil {
		return nil, err
	}
	// GetBody lets net/http send the body again after a 307/308.
	req.Body, req.ContentLength = io.NopCloser(reader()), int64(length)
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(reader()), nil }
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", auth)
	req.Header.Set("User-Agent", u.userAgent)
	if u.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	if retryCount > 0 {
		req.Header.Set("X-Retry-Count", strconv.Itoa(retryCount))
	}
	return req, nil
}

// trace records in phase how far each send of a request gets (SPEC §5,
// transport errors), and counts the length bytes of its body each time one
// is written.
func (u *Uploader) trace(phase *progress, length int) *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		// Each send asks for a connection: the first, a followed 307/308,
		// or net/http's own resend of a request nothing was written of.
		// What counts is how far the last one got, so each starts over,
		// and a redirect whose dial is refused is "not connected".
		GetConn: func(string) {
			phase.restart(PhaseNotConnected)
			phase.reusedHTTP1.Store(false)
		},
		GotConn: func(info httptrace.GotConnInfo) {
			phase.restart(PhaseConnected)
			phase.reusedHTTP1.Store(info.Reused && !isHTTP2(info.Conn))
		},
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				phase.reach(PhaseWritten)
				u.stats.bytesSent.Add(int64(length))
			}
		},
		GotFirstResponseByte: func() { phase.reach(PhaseResponding) },
	}
}

// isHTTP2 reports whether c speaks HTTP/2 (negotiated over TLS). The race
// lostToClose answers is HTTP/1's: an HTTP/2 connection carries many
// requests at once and says it is closing (GOAWAY), and a stream reset on
// it is the server's answer, which is no reason to send again at once
// (SPEC §5, "Resend on a new connection").
func isHTTP2(c net.Conn) bool {
	tc, ok := c.(*tls.Conn)
	return ok && tc.ConnectionState().NegotiatedProtocol == "h2"
}

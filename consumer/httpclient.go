package consumer

import (
	"net/http"
	"time"

	"github.com/dualpath/analytics-go/retry"
)

// maxRedirects bounds the redirects followed for one attempt, by the SDK's
// own client and by a user's client without a redirect policy: following
// one more, after the requests in via (the first request and every
// redirect followed so far), passes it when len(via) > maxRedirects.
const maxRedirects = 10

// NewHTTPClient returns the SDK's default HTTP client: its own transport,
// with at most maxConns connections to the endpoint, all kept for reuse
// (an upload that starts while the previous one's connection is on its way
// back to the pool waits for it rather than dialing another), and the
// redirect rule of CheckRedirect. It sets no Timeout: each attempt carries
// its own deadline.
func NewHTTPClient(maxConns int) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = maxConns
	t.MaxConnsPerHost = maxConns
	// Below the idle timeout of common load balancers (60 s on AWS ALB,
	// 75 s in nginx), so the client closes an idle connection before the
	// server does and a batch rarely goes out on a dead one.
	t.IdleConnTimeout = 30 * time.Second
	return &http.Client{Transport: t, CheckRedirect: CheckRedirect}
}

// CheckRedirect is the SDK's redirect rule, for
// http.Client.CheckRedirect: a 307 or 308 is followed (the client resends
// the same method and body), up to 10 hops; a 301, 302 or 303 is not,
// since net/http would turn the POST into a bodiless GET; nor is any
// redirect from https to plain http, since net/http would send the write
// key along in cleartext. A redirect that is not followed reaches the SDK
// as a 3xx response and fails the batch with retry.ErrRedirect. The
// analytics package's CheckRedirect calls it.
func CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > maxRedirects || req.Response == nil || downgrade(req, via) ||
		!retry.MayFollowRedirect(req.Response.StatusCode) {
		return http.ErrUseLastResponse
	}
	return nil
}

// downgrade reports whether following req would leave https for plain
// http: net/http keeps the Authorization header on a redirect to the same
// host whatever the scheme.
func downgrade(req *http.Request, via []*http.Request) bool {
	return len(via) > 0 && via[0].URL.Scheme == "https" && req.URL.Scheme != "https"
}

// GuardRedirects returns a shallow copy of client (sharing its transport
// and connections) whose redirect policy first refuses a downgrade from
// https to http, whatever the client's policy, then applies client's own
// policy, or, when it has none, follows up to 10 redirects as the SDK's
// own client does.
func GuardRedirects(client *http.Client) *http.Client {
	guarded := *client
	policy := client.CheckRedirect
	guarded.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if downgrade(req, via) {
			return http.ErrUseLastResponse
		}
		if policy != nil {
			return policy(req, via)
		}
		if len(via) > maxRedirects {
			return http.ErrUseLastResponse
		}
		return nil
	}
	return &guarded
}

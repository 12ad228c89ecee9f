package consumer

import "net/http"

// maxRedirects bounds the 307/308 hops the default client follows.
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
	return &http.Client{Transport: t, CheckRedirect: CheckRedirect}
}

// CheckRedirect is the SDK's redirect rule, for http.Client.CheckRedirect:
// a 307 or 308 is followed (the client resends the same method and body),
// up to 10 hops; a 301, 302 or 303 is not, since net/http would turn the
// POST into a bodiless GET. A redirect that is not followed reaches the SDK
// as a 3xx response and fails the batch with ErrRedirect.
func CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > maxRedirects || req.Response == nil {
		return http.ErrUseLastResponse
	}
	switch req.Response.StatusCode {
	case http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return nil
	}
	return http.ErrUseLastResponse
}

package consumer

import (
	"cmp"
	"encoding/base64"
	"errors"
	"net/url"
	"slices"
	"strings"
)

// redacted replaces the write key, and any other secret, wherever it is
// found.
const redacted = "[REDACTED]"

// scrubber removes the write key from every text an attempt's error can
// carry that a server, a proxy or a redirect target chose: response bodies,
// Location headers, malformed header lines quoted by net/http, and URLs in
// transport errors; with OAuth, the access token an upload
// carried and the JWT a token request did too. Every error an attempt or
// a token request returns passes through error, once, where it leaves
// (attempt, tokenSource.post), before anything logs it or hands it to a
// caller: the places that build errors need not each remember to scrub.
type scrubber struct {
	secrets  []string // the secrets it was made of
	forms    []string // the secrets as they may appear, longest first
	replacer *strings.Replacer
}

// newScrubber returns the scrubber of secrets (the write key first): each
// raw, URL-escaped, and base64 as in a Basic Authorization header (padded
// or not).
func newScrubber(secrets ...string) *scrubber {
	var forms []string
	for _, k := range secrets {
		if k == "" {
			continue
		}
		forms = append(forms,
			base64.StdEncoding.EncodeToString([]byte(k+":")),
			base64.RawStdEncoding.EncodeToString([]byte(k+":")),
			url.QueryEscape(k), url.PathEscape(k), k)
	}
	// strings.Replacer tries the old strings in argument order at each
	// position: longest first, so a base64 form is replaced whole. Equal
	// forms (a key that needs no escaping is its own URL escapes) sort
	// side by side, and Compact keeps one of each.
	slices.SortFunc(forms, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	forms = slices.Compact(forms)
	var pairs []string
	for _, f := range forms {
		pairs = append(pairs, f, redacted)
	}
	return &scrubber{secrets: secrets, forms: forms, replacer: strings.NewReplacer(pairs...)}
}

// with returns a scrubber of s's secrets and secret too; s itself when
// secret is "".
func (s *scrubber) with(secret string) *scrubber {
	if secret == "" {
		return s
	}
	return newScrubber(append(slices.Clip(s.secrets), secret)...)
}

// text returns s without the key.
func (s *scrubber) text(t string) string { return s.replacer.Replace(t) }

// excerpt scrubs the start of a body that was cut at a length limit. A key
// the cut went through survives it only as a prefix at the very end; that
// prefix is removed too (an excerpt cut through the key).
func (s *scrubber) excerpt(t string, cut bool) string {
	t = s.text(t)
	if !cut {
		return t
	}
	for _, f := range s.forms {
		for n := min(len(f)-1, len(t)); n > 0; n-- {
			if strings.HasSuffix(t, f[:n]) {
				t = t[:len(t)-n]
				break
			}
		}
	}
	return t
}

// error returns err with the key removed from every text it can print:
// each string field and cause of an *HTTPError, a *TransportError and a
// *TokenError (and of the error a *TokenError holds), each keeping its
// type; any other error as cause does. An error without the key, or nil,
// comes back with the same chain, so errors.Is and errors.As see what they
// would without the SDK.
func (s *scrubber) error(err error) error {
	switch e := err.(type) {
	case *HTTPError:
		c := *e
		c.Body = s.text(c.Body)
		c.Location = s.text(c.Location)
		c.BodyErr = s.cause(c.BodyErr)
		return &c
	case *TransportError:
		c := *e
		c.Err = s.cause(e.Err)
		return &c
	case *TokenError:
		c := *e
		c.URL = s.text(c.URL)
		c.Err = s.error(e.Err)
		return &c
	}
	return s.cause(err)
}

// cause scrubs an error from the HTTP client. One whose text holds no form
// of the key, anywhere in its chain, or nil, is returned as is. A
// *url.Error (the usual shape) keeps its type, with the URL and the error
// inside scrubbed; any other error that holds the key is replaced by a
// scrubbedError that keeps its text without the key and whether it was a
// timeout, and drops the chain that held the key.
func (s *scrubber) cause(err error) error {
	if err == nil || !s.leaks(err) {
		return err
	}
	var ue *url.Error
	if errors.As(err, &ue) && ue == err {
		return &url.Error{Op: ue.Op, URL: s.text(ue.URL), Err: s.cause(ue.Err)}
	}
	se := &scrubbedError{text: s.text(err.Error())}
	var timeout interface{ Timeout() bool }
	if errors.As(err, &timeout) {
		se.timeout = timeout.Timeout()
	}
	return se
}

// leaks reports whether the text of err, or of any error it wraps, holds a
// form of the key.
func (s *scrubber) leaks(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	if slices.ContainsFunc(s.forms, func(f string) bool { return strings.Contains(msg, f) }) {
		return true
	}
	switch w := err.(type) {
	case interface{ Unwrap() error }:
		return s.leaks(w.Unwrap())
	case interface{ Unwrap() []error }:
		return slices.ContainsFunc(w.Unwrap(), s.leaks)
	}
	return false
}

// scrubbedError stands for an HTTP client error whose text held the write
// key: the same text with the key replaced, and nothing to unwrap.
type scrubbedError struct {
	text    string
	timeout bool
}

func (e *scrubbedError) Error() string { return e.text }

// Timeout reports whether the original error was a timeout.
func (e *scrubbedError) Timeout() bool { return e.timeout }

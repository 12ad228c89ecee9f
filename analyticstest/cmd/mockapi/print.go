package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/dualpath/analytics-go/analyticstest"
)

// printer writes one line per event received. OnRequest runs on several
// handler goroutines at once, so whole lines are written under a lock.
type printer struct {
	mu sync.Mutex
	w  io.Writer
}

func (p *printer) line(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _ = io.WriteString(p.w, s+"\n")
}

// request prints a line per event of r; a request without events (not a
// batch, unreadable, or closed before its body was read) gets one line.
// Each line ends with why the request was refused, if it was, and the
// line of an event rejected past the 2,500th of its batch says so.
func (p *printer) request(r analyticstest.Request) {
	tail := " status=" + status(r.Status)
	if n := r.Header.Get("X-Retry-Count"); n != "" {
		tail += " retry=" + value(n)
	}
	if r.Err != nil {
		tail += " error=" + strconv.Quote(r.Err.Error())
	}
	if len(r.Events) == 0 {
		p.line(r.Method + " " + r.Path + " events=0" + tail)
		return
	}
	taken := len(r.Events) - r.Rejected
	for i, e := range r.Events {
		if i >= taken {
			p.line(event(e) + tail + " rejected=" + strconv.Quote(fmt.Sprintf("event %d of %d: the API takes %d a batch", i+1, len(r.Events), taken)))
			continue
		}
		p.line(event(e) + tail)
	}
}

// event formats the fields that tell events apart at a glance, in the
// order of the Segment spec.
func event(e map[string]any) string {
	var b strings.Builder
	typ, _ := e["type"].(string)
	if typ == "" {
		typ = "?"
	}
	b.WriteString(value(typ))
	for _, k := range []string{"messageId", "userId", "anonymousId", "event", "name", "groupId", "previousId"} {
		if v, ok := e[k]; ok && v != nil {
			fmt.Fprintf(&b, " %s=%s", k, value(fmt.Sprint(v)))
		}
	}
	return b.String()
}

// value quotes s when it would not read as one word.
func value(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\r\n\"=") || !strconv.CanBackquote(s) {
		return strconv.Quote(s)
	}
	return s
}

func status(code int) string {
	if code == 0 {
		return "none" // no complete response: dropped, closed, partial, or cut short
	}
	return strconv.Itoa(code)
}

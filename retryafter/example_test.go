package retryafter_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/dualpath/analytics-go/retryafter"
)

func ExampleParse() {
	ref := time.Date(1994, 11, 6, 8, 49, 0, 0, time.UTC)
	for _, value := range []string{"120", "Sun, 06 Nov 1994 08:49:37 GMT", "1.5"} {
		d, err := retryafter.Parse(value, ref)
		if err != nil {
			// An invalid value means "no Retry-After": use the usual backoff.
			fmt.Println("no Retry-After:", err)
			continue
		}
		fmt.Println("wait", d)
	}
	// Output:
	// wait 2m0s
	// wait 37s
	// no Retry-After: retryafter: invalid Retry-After "1.5": not delta-seconds or an HTTP-date
}

func ExampleFromHeader() {
	h := http.Header{}
	h.Set("Date", "Sun, 06 Nov 1994 08:49:37 GMT")
	h.Set("Retry-After", "Sun, 06 Nov 1994 08:50:37 GMT")

	// The server's Date, not the local clock, is the reference.
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d, ok := retryafter.FromHeader(h, now)
	fmt.Println(d, ok)

	h.Del("Retry-After")
	d, ok = retryafter.FromHeader(h, now)
	fmt.Println(d, ok)
	// Output:
	// 1m0s true
	// 0s false
}

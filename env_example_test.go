package analytics_test

import (
	"fmt"
	"log"
	"os"

	analytics "github.com/dualpath/analytics-go"
)

func ExampleNewFromEnv() {
	os.Setenv("ANALYTICS_WRITE_KEY", "YOUR_WRITE_KEY") // in production, the deployment sets it
	os.Setenv("ANALYTICS_FLUSH_AT", "50")
	defer os.Unsetenv("ANALYTICS_WRITE_KEY")
	defer os.Unsetenv("ANALYTICS_FLUSH_AT")

	// The code's options are the defaults; a variable that is set wins.
	client, err := analytics.NewFromEnv(analytics.WithFlushAt(100))
	if err != nil {
		log.Fatal(err) // every problem of the environment at once
	}
	fmt.Println(client.Close())

	os.Unsetenv("ANALYTICS_WRITE_KEY")
	os.Setenv("ANALYTICS_FLUSH_INTERVALL", "5s")
	defer os.Unsetenv("ANALYTICS_FLUSH_INTERVALL")
	_, err = analytics.NewFromEnv()
	fmt.Println(err)
	// Output:
	// <nil>
	// analytics: environment variable ANALYTICS_WRITE_KEY: empty or unset; set it to the write key of your source
	// analytics: environment variable ANALYTICS_FLUSH_INTERVALL: unknown name; did you mean ANALYTICS_FLUSH_INTERVAL?
}

package distlock_test

import (
	"fmt"

	"github.com/distlock/distlock"
)

// TraceMetadata splits the metadata an engine stores for a traced grant
// into the caller's metadata and the trace context; JoinTraceMetadata
// joins them again (a layer that carries them apart, as a distlock
// server's JSON does).
func ExampleTraceMetadata() {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	stored := distlock.JoinTraceMetadata("deploy v1.2.3", tp)
	metadata, traceparent := distlock.TraceMetadata(stored)
	fmt.Println(metadata)
	fmt.Println(traceparent == tp)
	fmt.Println(distlock.TraceMetadata("no stamp here"))
	// Output:
	// deploy v1.2.3
	// true
	// no stamp here
}

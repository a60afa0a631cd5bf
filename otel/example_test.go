package distlockotel_test

import (
	"context"
	"fmt"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/memory"
	distlockotel "github.com/distlock/distlock/otel"
)

// A Client traced with OpenTelemetry: each Acquire is a span, each hold
// another, and the grant carries the acquire span's trace context.
func Example() {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(context.Background())

	obs, err := distlockotel.New(distlockotel.WithTracerProvider(tp))
	if err != nil {
		panic(err)
	}
	c := distlock.New(memory.New(), distlock.WithObserver(obs))
	defer c.Close()

	ctx := context.Background()
	l, err := c.Acquire(ctx, "report", distlock.WithMetadata("nightly"))
	if err != nil {
		panic(err)
	}
	info, _ := c.Inspect(ctx, "report")
	metadata, traceparent := distlock.TraceMetadata(info.Metadata)
	fmt.Println(metadata, traceparent != "")
	_ = l.Release(ctx)

	for _, s := range spans.GetSpans() {
		fmt.Println(s.Name)
	}
	// Output:
	// nightly true
	// distlock.acquire
	// distlock.hold
}

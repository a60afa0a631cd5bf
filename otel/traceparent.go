package distlockotel

import (
	"fmt"

	"go.opentelemetry.io/otel/trace"
)

// traceparent renders a span context as a W3C traceparent ("" when it is
// not valid): the stamp stored with a grant.
func traceparent(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	return fmt.Sprintf("00-%s-%s-%02x", sc.TraceID(), sc.SpanID(), byte(sc.TraceFlags()))
}

// parseTraceparent reads a stored stamp back as a remote span context.
func parseTraceparent(s string) (trace.SpanContext, bool) {
	if len(s) != 55 {
		return trace.SpanContext{}, false
	}
	tid, err := trace.TraceIDFromHex(s[3:35])
	if err != nil {
		return trace.SpanContext{}, false
	}
	sid, err := trace.SpanIDFromHex(s[36:52])
	if err != nil {
		return trace.SpanContext{}, false
	}
	var flags byte
	if _, err := fmt.Sscanf(s[53:], "%02x", &flags); err != nil {
		return trace.SpanContext{}, false
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(flags), Remote: true})
	return sc, sc.IsValid()
}

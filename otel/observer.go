// Package distlockotel records distlock's locks with OpenTelemetry: a span
// for each Acquire and TryAcquire, a span for each hold, renewal failures
// as events, and metrics named as the server's Prometheus series are. A
// holder's acquire span is stored with its grant (distlock.TraceMetadata),
// and a waiter's acquire span links to the holders it waited for, across
// processes. docs/OBSERVABILITY.md lists the names it defines.
//
// It is a module of its own, so that users who do not trace never download
// OpenTelemetry.
package distlockotel

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/distlock/distlock"
)

// ScopeName is the instrumentation scope of the tracer and meter.
const ScopeName = "github.com/distlock/distlock/otel"

// Observer is a distlock.EventObserver that records traces and metrics:
// give it to a Client with distlock.WithObserver. Safe for concurrent use;
// its methods never block.
type Observer struct {
	tracer trace.Tracer
	m      *instruments
}

var _ distlock.EventObserver = (*Observer)(nil)

// Option configures New.
type Option func(*config)

type config struct {
	tp trace.TracerProvider
	mp metric.MeterProvider
}

// WithTracerProvider sets the tracer provider (default: OpenTelemetry's
// global one, otel.GetTracerProvider, read once by New).
func WithTracerProvider(tp trace.TracerProvider) Option { return func(c *config) { c.tp = tp } }

// WithMeterProvider sets the meter provider (default: OpenTelemetry's
// global one, otel.GetMeterProvider, read once by New).
func WithMeterProvider(mp metric.MeterProvider) Option { return func(c *config) { c.mp = mp } }

// New returns an Observer recording with the given providers. It fails
// only when the meter refuses an instrument.
func New(opts ...Option) (*Observer, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	m, err := newInstruments(c.mp.Meter(ScopeName))
	if err != nil {
		return nil, err
	}
	return &Observer{tracer: c.tp.Tracer(ScopeName), m: m}, nil
}

// StartAcquire implements distlock.EventObserver: it starts the call's
// span (distlock.acquire) and stamps the grant with its trace context.
func (o *Observer) StartAcquire(ctx context.Context, ev distlock.Event) (context.Context, string) {
	ctx, span := o.tracer.Start(ctx, SpanAcquire, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(lockAttrs(ev)...), trace.WithAttributes(attribute.Bool(AttrAcquireWait, ev.Wait)))
	return ctx, traceparent(span.SpanContext())
}

// AcquireWaiting implements distlock.EventObserver: the acquire span gets
// an event, and a link to each holder's acquire span that the holder's
// grant was stamped with.
func (o *Observer) AcquireWaiting(ctx context.Context, ev distlock.Event) {
	span := trace.SpanFromContext(ctx)
	span.AddEvent(EventWaiting, trace.WithAttributes(attribute.Int(AttrHolders, len(ev.Holders))))
	for _, h := range ev.Holders {
		_, tp := distlock.TraceMetadata(h.Metadata)
		sc, ok := parseTraceparent(tp)
		if !ok {
			continue
		}
		span.AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{
			attribute.String(AttrLinkType, "holder"),
			attribute.String(AttrLockOwner, h.Owner),
			attribute.Int64(AttrLockToken, int64(h.Token)),
		}})
	}
}

// EndAcquire implements distlock.EventObserver: it ends the acquire span
// and, for a grant, starts the hold span (distlock.hold, its child).
func (o *Observer) EndAcquire(ctx context.Context, ev distlock.Event) context.Context {
	span := trace.SpanFromContext(ctx)
	span.SetAttributes(
		attribute.Float64(AttrAcquireWaited, ev.Waited.Seconds()),
		attribute.Bool(AttrAcquireContended, ev.Contended),
		attribute.Bool(AttrAcquireQueued, ev.Queued),
		attribute.Bool(AttrAcquireHead, ev.Head),
	)
	if ev.Err != nil {
		span.SetAttributes(attribute.String(AttrAcquireOutcome, distlock.FailureReason(ev.Err)))
		span.SetStatus(codes.Error, ev.Err.Error())
		span.End()
		return ctx
	}
	span.SetAttributes(attribute.String(AttrAcquireOutcome, "acquired"),
		attribute.String(AttrLockOwner, ev.Owner), attribute.Int64(AttrLockToken, int64(ev.Token)))
	span.End()
	ctx, _ = o.tracer.Start(ctx, SpanHold, trace.WithAttributes(lockAttrs(ev)...),
		trace.WithAttributes(attribute.String(AttrLockOwner, ev.Owner), attribute.Int64(AttrLockToken, int64(ev.Token))))
	return ctx
}

// LeaseRenewed implements distlock.EventObserver: a failed renewal is an
// event on the hold span (successful ones are counted, not recorded).
func (o *Observer) LeaseRenewed(ctx context.Context, ev distlock.Event) {
	if ev.Err == nil {
		return
	}
	trace.SpanFromContext(ctx).AddEvent(EventRenewalFailed, trace.WithAttributes(
		attribute.String(AttrErrorMessage, ev.Err.Error())))
}

// LeaseEnded implements distlock.EventObserver: it ends the hold span,
// with the loss cause and an error status when the lease was lost.
func (o *Observer) LeaseEnded(ctx context.Context, ev distlock.Event) {
	span := trace.SpanFromContext(ctx)
	span.SetAttributes(attribute.Float64(AttrLeaseHeld, ev.Held.Seconds()))
	if ev.Cause != 0 {
		span.SetAttributes(attribute.String(AttrLeaseEnd, "lost"), attribute.String(AttrLeaseLossCause, ev.Cause.Label()))
		span.SetStatus(codes.Error, "lease lost: "+ev.Cause.String())
	} else {
		span.SetAttributes(attribute.String(AttrLeaseEnd, "released"))
	}
	span.End()
}

// Acquired implements distlock.Observer (metrics).
func (o *Observer) Acquired(_ string, waited time.Duration, contended bool) {
	ctx := context.Background()
	o.m.acquired.Add(ctx, 1)
	if contended {
		o.m.contended.Add(ctx, 1)
	}
	o.m.wait.Record(ctx, waited.Seconds(), metric.WithAttributeSet(outcomeAcquired))
	o.m.holders.Add(ctx, 1)
}

// AcquireFailed implements distlock.Observer (metrics).
func (o *Observer) AcquireFailed(_ string, waited time.Duration, err error) {
	ctx := context.Background()
	o.m.failures.Add(ctx, 1, metric.WithAttributes(attribute.String(LabelReason, distlock.FailureReason(err))))
	if errors.Is(err, distlock.ErrLocked) {
		o.m.contended.Add(ctx, 1)
	}
	o.m.wait.Record(ctx, waited.Seconds(), metric.WithAttributeSet(outcomeFailed))
}

// Waiting implements distlock.Observer (metrics: the queue length).
func (o *Observer) Waiting(_ string, delta int) {
	o.m.waiters.Add(context.Background(), int64(delta))
}

// Renewed implements distlock.Observer (metrics).
func (o *Observer) Renewed(_ string, ok bool) {
	set := renewalOK
	if !ok {
		set = renewalFailed
	}
	o.m.renewals.Add(context.Background(), 1, metric.WithAttributeSet(set))
}

// Released implements distlock.Observer (metrics).
func (o *Observer) Released(_ string, held time.Duration) {
	ctx := context.Background()
	o.m.hold.Record(ctx, held.Seconds(), metric.WithAttributeSet(endReleased))
	o.m.holders.Add(ctx, -1)
}

// Lost implements distlock.Observer (metrics).
func (o *Observer) Lost(_ string, cause distlock.LossCause, held time.Duration) {
	ctx := context.Background()
	o.m.lost.Add(ctx, 1, metric.WithAttributes(attribute.String(LabelCause, cause.Label())))
	o.m.hold.Record(ctx, held.Seconds(), metric.WithAttributeSet(endLost))
	o.m.holders.Add(ctx, -1)
}

// lockAttrs are the attributes that name a lock and its engine.
func lockAttrs(ev distlock.Event) []attribute.KeyValue {
	kv := []attribute.KeyValue{
		attribute.String(AttrLockName, ev.Name),
		attribute.String(AttrLockKind, ev.Kind),
		attribute.String(AttrEngine, ev.Engine),
	}
	if ev.Owner != "" {
		kv = append(kv, attribute.String(AttrLockOwner, ev.Owner))
	}
	return kv
}

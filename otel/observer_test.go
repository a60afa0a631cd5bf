package distlockotel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
	distlockotel "github.com/distlock/distlock/otel"
)

// process is one traced process: its own tracer provider with an
// in-memory exporter, and its own Client.
type process struct {
	spans  *tracetest.InMemoryExporter
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	c      *distlock.Client
}

func newProcess(t *testing.T, eng engine.Engine) *process {
	t.Helper()
	p := &process{spans: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader()}
	p.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(p.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(p.reader))
	obs, err := distlockotel.New(distlockotel.WithTracerProvider(p.tp), distlockotel.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	p.c = distlock.New(eng, distlock.WithObserver(obs))
	t.Cleanup(func() {
		p.c.Close()
		_ = p.tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	return p
}

// span returns the one ended span named name, failing the test when there
// is not exactly one.
func (p *process) span(t *testing.T, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range p.spans.GetSpans() {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans named %s, want 1: %v", len(found), name, p.spans.GetSpans())
	}
	return found[0]
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

// TestContentionTrace, on the memory engine and on Redis (two engines on
// one redis-server, as two processes): the holder's acquire span is a
// child of its caller's span and its trace context is stored with the
// grant; the waiter's acquire span, in another trace, links to it, says
// it waited, queued and was contended; each hold span ends with its lease.
func TestContentionTrace(t *testing.T) {
	for _, backend := range []string{"memory", "redis"} {
		t.Run(backend, func(t *testing.T) {
			var e1, e2 engine.Engine
			if backend == "memory" {
				e := memory.New()
				e1, e2 = e, e
			} else {
				srv := redistest.Start(t)
				e1, e2 = redisEngine(t, srv), redisEngine(t, srv)
			}
			holder, waiter := newProcess(t, e1), newProcess(t, e2)
			checkContention(t, holder, waiter)
		})
	}
}

func redisEngine(t *testing.T, srv *redistest.Server) engine.Engine {
	t.Helper()
	rc := srv.Client()
	e, err := redisengine.New(rc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(); rc.Close() })
	return e
}

func checkContention(t *testing.T, holder, waiter *process) {
	ctx := context.Background()
	hctx, work := holder.tp.Tracer("test").Start(ctx, "holder work")
	l, err := holder.c.Acquire(hctx, "trace/x", distlock.WithMetadata("job 1"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := waiter.c.Inspect(ctx, "trace/x")
	if err != nil {
		t.Fatal(err)
	}
	if md, tp := distlock.TraceMetadata(info.Metadata); md != "job 1" || tp == "" {
		t.Fatalf("stored metadata %q: caller's %q, traceparent %q", info.Metadata, md, tp)
	}

	wctx, wwork := waiter.tp.Tracer("test").Start(ctx, "waiter work")
	done := make(chan error, 1)
	go func() {
		wl, err := waiter.c.Acquire(wctx, "trace/x", distlock.WithOwner("waiter-1"))
		if err == nil {
			err = wl.Release(ctx)
		}
		done <- err
	}()
	// Released once the waiter is in the queue (on both engines), which
	// lists it under its owner.
	for deadline := time.Now().Add(time.Minute); ; {
		info, err := holder.c.Inspect(ctx, "trace/x")
		if err != nil {
			t.Fatal(err)
		}
		if info.Waiters == 1 && len(info.Queue) == 1 && distlock.WaiterOwner(info.Queue[0].ID) == "waiter-1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the waiter is not listed in the queue: %+v", info)
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	work.End()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	wwork.End()

	hacq := holder.span(t, distlockotel.SpanAcquire)
	if hacq.Parent.SpanID() != work.SpanContext().SpanID() {
		t.Errorf("holder's acquire span's parent %v, want its caller's span %v", hacq.Parent.SpanID(), work.SpanContext().SpanID())
	}
	a := attrs(hacq)
	if a[distlockotel.AttrLockName].AsString() != "trace/x" || a[distlockotel.AttrLockKind].AsString() != "mutex" ||
		a[distlockotel.AttrLockToken].AsInt64() != int64(l.Token()) || a[distlockotel.AttrLockOwner].AsString() != l.Owner() ||
		a[distlockotel.AttrEngine].AsString() == "" || a[distlockotel.AttrAcquireOutcome].AsString() != "acquired" {
		t.Errorf("holder's acquire span attributes %v", hacq.Attributes)
	}
	hhold := holder.span(t, distlockotel.SpanHold)
	if hhold.Parent.SpanID() != hacq.SpanContext.SpanID() || attrs(hhold)[distlockotel.AttrLeaseEnd].AsString() != "released" {
		t.Errorf("holder's hold span: parent %v, attributes %v", hhold.Parent.SpanID(), hhold.Attributes)
	}

	wacq := waiter.span(t, distlockotel.SpanAcquire)
	if wacq.SpanContext.TraceID() == hacq.SpanContext.TraceID() {
		t.Fatal("the two processes' calls share a trace: the link proves nothing")
	}
	var linked bool
	for _, lk := range wacq.Links {
		if lk.SpanContext.TraceID() == hacq.SpanContext.TraceID() && lk.SpanContext.SpanID() == hacq.SpanContext.SpanID() {
			linked = true
		}
	}
	if !linked {
		t.Errorf("waiter's acquire span links %v, want the holder's acquire span %v", wacq.Links, hacq.SpanContext)
	}
	wa := attrs(wacq)
	if !wa[distlockotel.AttrAcquireContended].AsBool() || !wa[distlockotel.AttrAcquireQueued].AsBool() || wa[distlockotel.AttrAcquireWaited].AsFloat64() <= 0 {
		t.Errorf("waiter's acquire span attributes %v", wacq.Attributes)
	}
	var waited bool
	for _, e := range wacq.Events {
		waited = waited || e.Name == distlockotel.EventWaiting
	}
	if !waited {
		t.Errorf("waiter's acquire span has no %s event: %v", distlockotel.EventWaiting, wacq.Events)
	}
	if whold := waiter.span(t, distlockotel.SpanHold); whold.EndTime.IsZero() {
		t.Error("waiter's hold span did not end")
	}

	// Metrics, under the names the Prometheus series translate from.
	var rm metricdata.ResourceMetrics
	if err := waiter.reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			seen[m.Name] = true
		}
	}
	for _, name := range []string{distlockotel.MetricAcquisitions, distlockotel.MetricContended, distlockotel.MetricWait,
		distlockotel.MetricHold, distlockotel.MetricWaiters, distlockotel.MetricHolders} {
		if !seen[name] {
			t.Errorf("metric %s not recorded; recorded: %v", name, seen)
		}
	}
}

// TestLossOnHoldSpan: a lease force-released by an operator is lost; its
// hold span ends with the cause and an error status, and the failed
// renewal is an event on it; the loss is counted.
func TestLossOnHoldSpan(t *testing.T) {
	ctx := context.Background()
	p := newProcess(t, memory.New())
	l, err := p.c.Acquire(ctx, "lost", distlock.WithTTL(150*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.c.ForceRelease(ctx, "lost"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Done():
	case <-time.After(time.Minute):
		t.Fatal("the lease was not lost")
	}
	var lost *distlock.LostError
	if !errors.As(l.Err(), &lost) {
		t.Fatalf("lease ended with %v", l.Err())
	}
	hold := p.span(t, distlockotel.SpanHold)
	a := attrs(hold)
	if hold.Status.Code != codes.Error || a[distlockotel.AttrLeaseEnd].AsString() != "lost" || a[distlockotel.AttrLeaseLossCause].AsString() != lost.Cause.Label() {
		t.Errorf("hold span status %v, attributes %v", hold.Status, hold.Attributes)
	}
	var renewalFailed bool
	for _, e := range hold.Events {
		renewalFailed = renewalFailed || e.Name == distlockotel.EventRenewalFailed
	}
	if !renewalFailed {
		t.Errorf("hold span events %v, want %s", hold.Events, distlockotel.EventRenewalFailed)
	}
}

// TestNoLinkWithoutStamp: a waiter links nothing when the holder's grant
// carries no trace context (an untraced holder), and a failed TryAcquire's
// span says why with an error status.
func TestNoLinkWithoutStamp(t *testing.T) {
	ctx := context.Background()
	eng := memory.New()
	plain := distlock.New(eng)
	defer plain.Close()
	l, err := plain.Acquire(ctx, "plain")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	p := newProcess(t, eng)
	if _, err := p.c.TryAcquire(ctx, "plain"); !errors.Is(err, distlock.ErrLocked) {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := p.c.Acquire(tctx, "plain"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	for _, s := range p.spans.GetSpans() {
		if len(s.Links) > 0 {
			t.Errorf("span %s links %v", s.Name, s.Links)
		}
		if s.Name == distlockotel.SpanAcquire && s.Status.Code != codes.Error {
			t.Errorf("failed call's span status %v", s.Status)
		}
	}
}

// TestSharedKinds: a semaphore's permit and an RW lock's read side are
// traced like a mutex, with their kind; a waiting writer links to the
// reader holding the lock.
func TestSharedKinds(t *testing.T) {
	ctx := context.Background()
	eng := memory.New()
	p, w := newProcess(t, eng), newProcess(t, eng)
	sl, err := p.c.Semaphore("sem", 2).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := sl.Release(ctx); err != nil {
		t.Fatal(err)
	}
	rl, err := p.c.RWMutex("rw").RLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		wl, err := w.c.RWMutex("rw").Lock(ctx)
		if err == nil {
			err = wl.Release(ctx)
		}
		done <- err
	}()
	for deadline := time.Now().Add(time.Minute); ; {
		info, err := eng.Inspect(ctx, "rw")
		if err != nil {
			t.Fatal(err)
		}
		if info.Waiters == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer never queued")
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := rl.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	var readerSpan trace.SpanContext
	for _, s := range p.spans.GetSpans() {
		if s.Name == distlockotel.SpanAcquire {
			kinds[attrs(s)[distlockotel.AttrLockKind].AsString()]++
			if attrs(s)[distlockotel.AttrLockName].AsString() == "rw" {
				readerSpan = s.SpanContext
			}
		}
	}
	if kinds["semaphore"] != 1 || kinds["rwlock"] != 1 {
		t.Errorf("acquire spans by kind %v", kinds)
	}
	wacq := w.span(t, distlockotel.SpanAcquire)
	if len(wacq.Links) != 1 || wacq.Links[0].SpanContext.SpanID() != readerSpan.SpanID() {
		t.Errorf("writer's links %v, want the reader's acquire span %v", wacq.Links, readerSpan)
	}
}

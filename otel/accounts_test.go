package distlockotel_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/memory"
	distlockotel "github.com/distlock/distlock/otel"
)

// collect reads p's metrics: instrument name, then encoded attribute set,
// to a sum's value or a histogram's count.
func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string]map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			vals := map[string]float64{}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					vals[dp.Attributes.Encoded(attribute.DefaultEncoder())] = float64(dp.Value)
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					vals[dp.Attributes.Encoded(attribute.DefaultEncoder())] = float64(dp.Count)
				}
			}
			out[m.Name] = vals
		}
	}
	return out
}

// spansNamed returns the ended spans named name.
func spansNamed(exp *tracetest.InMemoryExporter, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// TestRefusedAcquireCounted: an acquire the engine refuses (a semaphore on
// a mutex's name) ends its span with outcome refused, and the metrics
// count it alike: distlock.acquire.failures{reason=refused} and
// distlock.acquire.wait{outcome=failed}. Before the fix the span said
// refused and the metrics counted nothing.
func TestRefusedAcquireCounted(t *testing.T) {
	ctx := context.Background()
	p := newProcess(t, memory.New())
	l, err := p.c.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if _, err := p.c.Semaphore("k", 2).TryAcquire(ctx); distlock.FailureReason(err) != "refused" {
		t.Fatalf("a semaphore on a mutex's name: %v", err)
	}
	var outcomes []string
	for _, s := range spansNamed(p.spans, distlockotel.SpanAcquire) {
		outcomes = append(outcomes, attrs(s)[distlockotel.AttrAcquireOutcome].AsString())
	}
	if len(outcomes) != 2 || outcomes[1] != "refused" {
		t.Fatalf("acquire outcomes %v, want acquired, refused", outcomes)
	}
	m := collect(t, p.reader)
	if v := m[distlockotel.MetricFailures]["reason=refused"]; v != 1 {
		t.Errorf("%s{reason=refused} = %v, want 1", distlockotel.MetricFailures, v)
	}
	if v := m[distlockotel.MetricWait]["outcome=failed"]; v != 1 {
		t.Errorf("%s{outcome=failed} count %v, want 1", distlockotel.MetricWait, v)
	}
}

// TestCloseWhileWaiting: a Client closed while one call waits and one
// lease is held: the waiting call's acquire span ends with outcome closed
// (status Error) and the failures count reason=closed, the hold span ends
// released, the waiters and holders counters are back to 0, and no
// goroutine is left once the Client and providers are shut. Before the
// fix the closed wait was labelled locked.
func TestCloseWhileWaiting(t *testing.T) {
	ctx := context.Background()
	base := runtime.NumGoroutine()
	eng := memory.New()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	obs, err := distlockotel.New(distlockotel.WithTracerProvider(tp), distlockotel.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	c := distlock.New(eng, distlock.WithObserver(obs))
	other := distlock.New(eng)
	hl, err := other.Acquire(ctx, "busy", distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(ctx, "mine"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Acquire(ctx, "busy")
		done <- err
	}()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(2 * time.Millisecond) {
		if info, _ := eng.Inspect(ctx, "busy"); info.Waiters == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the waiter never queued")
		}
	}
	c.Close()
	if err := <-done; !errors.Is(err, distlock.ErrClosed) {
		t.Fatalf("a waiting Acquire after Close: %v", err)
	}
	m := collect(t, reader)
	if m[distlockotel.MetricWaiters][""] != 0 || m[distlockotel.MetricHolders][""] != 0 {
		t.Errorf("after Close: waiters %v holders %v, want 0 and 0", m[distlockotel.MetricWaiters], m[distlockotel.MetricHolders])
	}
	if m[distlockotel.MetricFailures]["reason=closed"] != 1 {
		t.Errorf("failures %v, want reason=closed 1", m[distlockotel.MetricFailures])
	}
	closed := false
	for _, s := range spansNamed(spans, distlockotel.SpanAcquire) {
		if attrs(s)[distlockotel.AttrAcquireOutcome].AsString() == "closed" && s.Status.Code == codes.Error {
			closed = true
		}
	}
	if !closed {
		t.Errorf("no acquire span with outcome closed and status Error")
	}
	holds := spansNamed(spans, distlockotel.SpanHold)
	if len(holds) != 1 || attrs(holds[0])[distlockotel.AttrLeaseEnd].AsString() != "released" {
		t.Errorf("hold spans after Close: %v, want one, released", holds)
	}
	_ = hl.Release(ctx)
	other.Close()
	eng.Close()
	_ = tp.Shutdown(ctx)
	_ = mp.Shutdown(ctx)
	for deadline := time.Now().Add(time.Minute); runtime.NumGoroutine() > base; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
	}
}

// TestReleaseAfterForceReleaseSpan: a lease force-released and then
// released by its holder before a renewal could tell: Release says it was
// lost (TakenOver), and so do its hold span (end lost, cause taken_over,
// status Error) and the metrics (distlock.leases.lost{cause=taken_over},
// distlock.hold{end=lost}). Before the fix they said released.
func TestReleaseAfterForceReleaseSpan(t *testing.T) {
	ctx := context.Background()
	p := newProcess(t, memory.New())
	l, err := p.c.Acquire(ctx, "fr", distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.c.ForceRelease(ctx, "fr"); err != nil {
		t.Fatal(err)
	}
	var lost *distlock.LostError
	if err := l.Release(ctx); !errors.As(err, &lost) || lost.Cause != distlock.TakenOver {
		t.Fatalf("Release: %v, want a *LostError TakenOver", err)
	}
	hold := p.span(t, distlockotel.SpanHold)
	a := attrs(hold)
	if a[distlockotel.AttrLeaseEnd].AsString() != "lost" || a[distlockotel.AttrLeaseLossCause].AsString() != "taken_over" || hold.Status.Code != codes.Error {
		t.Errorf("hold span end %q cause %q status %v, want lost, taken_over, Error",
			a[distlockotel.AttrLeaseEnd].AsString(), a[distlockotel.AttrLeaseLossCause].AsString(), hold.Status.Code)
	}
	m := collect(t, p.reader)
	if m[distlockotel.MetricLost]["cause=taken_over"] != 1 || m[distlockotel.MetricHold]["end=lost"] != 1 || m[distlockotel.MetricHold]["end=released"] != 0 {
		t.Errorf("lost %v, hold %v; want one taken_over loss, no release", m[distlockotel.MetricLost], m[distlockotel.MetricHold])
	}
}

// TestAcquireAllSpans: a set taken in one step (memory) gets the spans the
// name-by-name path gives it: an acquire span per member, each the parent
// of its member's hold span, which ends released with the set's release.
// Before the fix the set had no span at all.
func TestAcquireAllSpans(t *testing.T) {
	ctx := context.Background()
	p := newProcess(t, memory.New())
	set, err := p.c.AcquireAll(ctx, []string{"b", "a"})
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Release(ctx); err != nil {
		t.Fatal(err)
	}
	acquires, holds := spansNamed(p.spans, distlockotel.SpanAcquire), spansNamed(p.spans, distlockotel.SpanHold)
	if len(acquires) != 2 || len(holds) != 2 {
		t.Fatalf("%d acquire spans, %d hold spans for a set of two, want 2 and 2", len(acquires), len(holds))
	}
	parents := map[string]string{}
	for _, s := range acquires {
		if o := attrs(s)[distlockotel.AttrAcquireOutcome].AsString(); o != "acquired" {
			t.Errorf("acquire span of %s: outcome %q", attrs(s)[distlockotel.AttrLockName].AsString(), o)
		}
		parents[s.SpanContext.SpanID().String()] = attrs(s)[distlockotel.AttrLockName].AsString()
	}
	for _, h := range holds {
		name := attrs(h)[distlockotel.AttrLockName].AsString()
		if parents[h.Parent.SpanID().String()] != name {
			t.Errorf("hold span of %s: not a child of its acquire span", name)
		}
		if e := attrs(h)[distlockotel.AttrLeaseEnd].AsString(); e != "released" {
			t.Errorf("hold span of %s: end %q, want released", name, e)
		}
	}
	m := collect(t, p.reader)
	if m[distlockotel.MetricHolders][""] != 0 || m[distlockotel.MetricAcquisitions][""] != 2 {
		t.Errorf("holders %v acquisitions %v, want 0 and 2", m[distlockotel.MetricHolders], m[distlockotel.MetricAcquisitions])
	}
}

package server_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/engine/quorum"
	"github.com/distlock/distlock/engine/remote"
	"github.com/distlock/distlock/server"
)

// metric reads one sample from the Prometheus text exposition.
func metric(t *testing.T, text, series string) float64 {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`)
	m := re.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no series %s in:\n%s", series, text)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func scrape(t *testing.T, s *testServer) string {
	t.Helper()
	r := call(t, "GET", s.url+"/metrics", "", nil)
	want(t, "metrics", r, 200, "")
	return string(r.body)
}

// TestServerMetrics: what clients do through the server shows in /metrics:
// acquisitions, contention, waits, hold times, renewals, losses, and the
// holders and waiters gauges.
func TestServerMetrics(t *testing.T) {
	s := start(t, nil)
	eng, err := remote.New(s.url)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	c := distlock.New(eng)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*patience)
	defer cancel()

	// A lease renewed by the watchdog (every second), a contender that
	// waits for it.
	l, err := c.Acquire(ctx, "m", distlock.WithTTL(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l2, err := c.Acquire(ctx, "m")
		if err == nil {
			err = l2.Release(ctx)
		}
		got <- err
	}()
	var text string
	waitFor(t, patience, "two renewals, and the gauges to show the holder and its waiter", func() bool {
		text = scrape(t, s)
		return metric(t, text, `distlock_renewals_total{result="ok"}`) >= 2 &&
			metric(t, text, "distlock_holders") == 1 && metric(t, text, "distlock_waiters") == 1
	})
	if err := l.Release(ctx); err != nil {
		// Lost at its own deadline: the watchdog did not run for 2s.
		// Lost before it: the server dropped a lease it had renewed.
		var lost *distlock.LostError
		if !errors.As(err, &lost) || lost.At.Before(l.Deadline()) {
			t.Fatal(err)
		}
		t.Skipf("machine too slow: the lease ran out at its deadline before its release (%v)", err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	// A lease lost: force-released behind its holder's back.
	l3, err := c.Acquire(ctx, "lost", distlock.WithTTL(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ForceRelease(ctx, "lost"); err != nil {
		t.Fatal(err)
	}
	<-l3.Done()

	waitFor(t, patience, "the gauges to settle", func() bool {
		text = scrape(t, s)
		return metric(t, text, "distlock_holders") == 0 && metric(t, text, "distlock_waiters") == 0
	})
	checkMetricsSeen(t, text)
}

// checkMetricsSeen checks the scrape of TestServerMetrics: three grants
// (one contended), two releases, one hold ended by a force-release and its
// holder's loss taken over (none expired), the renewals, and Go's runtime
// metrics.
func checkMetricsSeen(t *testing.T, text string) {
	t.Helper()
	checks := []struct {
		series string
		min    float64
	}{
		{"distlock_acquisitions_total", 3},
		{"distlock_acquire_contended_total", 1},
		{`distlock_acquire_failures_total{reason="locked"}`, 1}, // the contender's first attempt
		{`distlock_acquire_wait_seconds_count{outcome="acquired"}`, 3},
		{`distlock_hold_seconds_count{end="released"}`, 2},
		{`distlock_hold_seconds_count{end="forced"}`, 1},
		{`distlock_renewals_total{result="ok"}`, 2},
		{`distlock_leases_lost_total{cause="taken_over"}`, 1},
	}
	for _, c := range checks {
		if v := metric(t, text, c.series); v < c.min {
			t.Errorf("%s = %v, want at least %v", c.series, v, c.min)
		}
	}
	if metric(t, text, `distlock_leases_lost_total{cause="expired"}`) != 0 {
		t.Error("a loss by force-release counted as expired")
	}
	if !regexp.MustCompile(`(?m)^go_goroutines `).MatchString(text) {
		t.Error("no Go runtime metrics")
	}
}

// TestMetricsObserver: Metrics plugs into any Client as its Observer, and
// into a Redlock engine for per-node errors.
func TestMetricsObserver(t *testing.T) {
	reg := server.NewRegistry()
	m, err := server.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	nodes := []engine.Engine{memory.New(), memory.New(), failing{}}
	q, err := quorum.New(nodes, quorum.WithNodeErrors(m.NodeError))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	c := distlock.New(q, distlock.WithObserver(m))
	defer c.Close()
	ctx := context.Background()
	l, err := c.Acquire(ctx, "obs")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.TryAcquire(ctx, "obs", distlock.WithOwner("other")); !errors.Is(err, distlock.ErrLocked) {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	text := rec.Body.String()
	if metric(t, text, "distlock_acquisitions_total") != 1 || metric(t, text, `distlock_acquire_failures_total{reason="locked"}`) != 1 ||
		metric(t, text, `distlock_hold_seconds_count{end="released"}`) != 1 || metric(t, text, "distlock_holders") != 0 {
		t.Fatalf("client metrics:\n%s", text)
	}
	if metric(t, text, `distlock_node_errors_total{node="node 2"}`) < 1 {
		t.Fatalf("no per-node errors:\n%s", text)
	}

	// The server serves metrics made beforehand.
	s := start(t, q, server.WithMetrics(m))
	if v := metric(t, scrape(t, s), "distlock_acquisitions_total"); v != 1 {
		t.Fatalf("server serves other metrics: acquisitions %v", v)
	}
}

// TestRefusalMetrics: a request the engine refuses (another kind than the
// name's, a weight beyond its stored limit, a read-to-write upgrade) is the
// caller's mistake: it is
// counted with reason="refused", never as a backend failure, whether it
// was one attempt or a waiting one.
func TestRefusalMetrics(t *testing.T) {
	s := start(t, nil)
	acquire := func(name string, body map[string]any) reply {
		return call(t, "POST", s.url+"/v1/locks/"+name+"/acquire", "", body)
	}
	want(t, "mutex", acquire("m", map[string]any{"ttl_ms": 10000}), 200, "")
	want(t, "semaphore", acquire("s", map[string]any{"kind": "semaphore", "limit": 2, "ttl_ms": 10000}), 200, "")
	want(t, "reader", acquire("rw", map[string]any{"kind": "rwlock", "mode": "read", "owner": "r", "ttl_ms": 10000}), 200, "")
	for _, bad := range []struct {
		what, name string
		body       map[string]any
	}{
		{"a semaphore of a mutex", "m", map[string]any{"kind": "semaphore", "limit": 2}},
		{"a mutex of a semaphore, waiting", "s", map[string]any{"wait_ms": 5000}},
		{"a weight beyond the stored limit", "s", map[string]any{"kind": "semaphore", "limit": 3, "weight": 3}},
		{"an upgrade", "rw", map[string]any{"kind": "rwlock", "mode": "write", "owner": "r"}},
	} {
		r := acquire(bad.name, bad.body)
		if r.status < 400 || r.status >= 500 {
			t.Fatalf("%s: HTTP %d %s, want a refusal", bad.what, r.status, r.body)
		}
	}
	text := scrape(t, s)
	if v := metric(t, text, `distlock_acquire_failures_total{reason="refused"}`); v != 4 {
		t.Errorf(`reason="refused" = %v, want 4`, v)
	}
	if v := metric(t, text, `distlock_acquire_failures_total{reason="backend"}`); v != 0 {
		t.Errorf(`reason="backend" = %v, want 0: refusals counted as backend failures`, v)
	}
}

// TestForceReleaseEndsHolds: a force-release through the server ends the
// holds it ended at once in /metrics (the holders gauge, the hold-time
// histogram's end="forced"), for one holder (?owner=) and for every holder
// of a semaphore, instead of counting them live until their ttl runs out
// and then as expired. A lease's ttl is a minute: a gauge that waited for
// it would fail the test.
func TestForceReleaseEndsHolds(t *testing.T) {
	s := start(t, nil)
	mustAcquire(t, s, "m", map[string]any{"owner": "a", "ttl_ms": 60000})
	mustAcquire(t, s, "s", map[string]any{"kind": "semaphore", "limit": 3, "owner": "b", "ttl_ms": 60000})
	mustAcquire(t, s, "s", map[string]any{"kind": "semaphore", "limit": 3, "owner": "c", "ttl_ms": 60000})
	if text := scrape(t, s); metric(t, text, "distlock_holders") != 3 {
		t.Fatalf("holders = %v, want 3", metric(t, text, "distlock_holders"))
	}

	want(t, "force-release m's holder a", call(t, "DELETE", lockURL(s, "m", "")+"?owner=a", "", nil), 200, "")
	text := scrape(t, s)
	if h, f := metric(t, text, "distlock_holders"), metric(t, text, `distlock_hold_seconds_count{end="forced"}`); h != 2 || f != 1 {
		t.Fatalf("after one holder's force-release: holders %v, forced %v; want 2 and 1", h, f)
	}
	want(t, "force-release s", call(t, "DELETE", lockURL(s, "s", ""), "", nil), 200, "")
	text = scrape(t, s)
	if h, f := metric(t, text, "distlock_holders"), metric(t, text, `distlock_hold_seconds_count{end="forced"}`); h != 0 || f != 3 {
		t.Fatalf("after the semaphore's force-release: holders %v, forced %v; want 0 and 3", h, f)
	}
	if regexp.MustCompile(`(?m)^distlock_hold_seconds_count\{end="lost"\} [1-9]`).MatchString(text) {
		t.Fatal("a force-released hold counted as lost by its holder, which has not asked")
	}
}

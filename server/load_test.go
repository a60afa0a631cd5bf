package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/engine/remote"
	"github.com/distlock/distlock/server"
	"github.com/distlock/distlock/server/api"
)

// Load test shape: 200 concurrent clients on 20 lock names (10 per name)
// for 20 seconds, against a server on the embedded engine, on loopback.
// Each client holds its lock for loadHold (its "work") and starts cycles at
// random (Poisson) times at a paced rate, so that locks are contended
// (waits, hand-offs) while the machine is not saturated: the latencies then
// measure the server, not a run queue. The rate is lower under the race detector, which costs about
// five times the CPU.
const (
	loadClients  = 200
	loadNames    = 20
	loadDuration = 20 * time.Second
	loadHold     = 10 * time.Millisecond
	loadRate     = 500 // cycles per second, all clients together
	loadRateRace = 150
)

// loadSettings reads the shape, with overrides for manual runs:
// DISTLOCK_LOAD_DURATION, DISTLOCK_LOAD_RATE (0: as fast as possible),
// DISTLOCK_LOAD_HOLD and DISTLOCK_LOAD_PROCS (GOMAXPROCS; default 1, so that
// the other packages' tests, run in parallel by go test and some of them
// timing-sensitive, keep the other CPU).
func loadSettings() (duration time.Duration, rate float64, hold time.Duration, procs int) {
	duration, rate, hold, procs = loadDuration, loadRate, loadHold, 1
	if raceEnabled {
		rate = loadRateRace
	}
	if d, err := time.ParseDuration(os.Getenv("DISTLOCK_LOAD_DURATION")); err == nil && d > 0 {
		duration = d
	}
	if r, err := strconv.ParseFloat(os.Getenv("DISTLOCK_LOAD_RATE"), 64); err == nil && r >= 0 {
		rate = r
	}
	if d, err := time.ParseDuration(os.Getenv("DISTLOCK_LOAD_HOLD")); err == nil && d >= 0 {
		hold = d
	}
	if n, err := strconv.Atoi(os.Getenv("DISTLOCK_LOAD_PROCS")); err == nil && n > 0 {
		procs = n
	}
	return
}

// loadSample is one acquire+release cycle.
type loadSample struct {
	acquire, release time.Duration
}

// TestLoad runs 200 concurrent clients on 20 names for 20 seconds: half
// are Go clients (distlock.Client on engine/remote: they wait on release
// events), half plain HTTP clients (they wait inside the server with
// wait_ms). Each acquires its name, holds it, releases it, and starts
// again at its pace.
//
// What it asserts is a property, not a speed: every request is answered
// without error, a release answered before the lease's validity deadline
// found the lock still held by its owner, and no lock or waiter is left at
// the end. A starved machine may still let a lease run out (its holder or
// the server did not run for 5 s: a release answered at or after the
// deadline may have been run after it), answer a grant after its ttl (the
// Client refuses it), leave a release unanswered past the client's release
// timeout, or let a wait use up its 30 s budget:
// those are counted and logged, not failures. Latency percentiles are logged, and
// written as Markdown to $DISTLOCK_LOAD_REPORT when it is set; speed is the
// benchmarks' business (BenchmarkRemoteAcquireRelease).
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("the 20s load test does not run with -short")
	}
	duration, rate, hold, procs := loadSettings()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	s := start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), duration+60*time.Second)
	defer cancel()
	r := &loadRun{url: s.url, ctx: ctx, started: time.Now(), hold: hold}
	r.stop = r.started.Add(duration)
	if rate > 0 {
		r.interval = time.Duration(float64(loadClients) / rate * float64(time.Second))
	}
	var wg sync.WaitGroup
	for i := range loadClients {
		name := fmt.Sprintf("load-%02d", i%loadNames)
		kind := i % 2
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := r.goClient
			if kind == 1 {
				client = r.httpClient
			}
			mine := client(name, r.pacer())
			r.mu.Lock()
			r.samples[kind] = append(r.samples[kind], mine...)
			r.mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(r.started)
	if r.nerrs > 0 {
		t.Fatalf("%d errors under load; the first: %s", r.nerrs, strings.Join(r.errs, "\n"))
	}
	r.checkSettled(t, s)

	pacing := "as fast as possible"
	if rate > 0 {
		pacing = fmt.Sprintf("paced at %.0f cycles/s in total", rate)
	}
	report := loadReport(r.samples[0], r.samples[1], elapsed,
		fmt.Sprintf("%s, %v held per cycle, GOMAXPROCS=%d, race detector: %v", pacing, hold, procs, raceEnabled), r.waited, r.starvedTotal())
	t.Log("\n" + report)
	if path := os.Getenv("DISTLOCK_LOAD_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// loadRun is one run of TestLoad: its shape, and what its clients saw.
type loadRun struct {
	url           string
	ctx           context.Context
	started, stop time.Time
	interval      time.Duration // between a client's cycles, on average (0: at once)
	hold          time.Duration

	mu         sync.Mutex
	errs       []string
	nerrs      int
	waited     int             // HTTP acquires that had to wait
	expired    int             // leases that ran out before their release was answered
	unanswered int             // releases not answered within the release timeout
	gaveUp     int             // waits that used up their budget
	lateGrants int             // grants refused by the Client: answered after their ttl
	samples    [2][]loadSample // by kind: 0 Go client, 1 HTTP client
}

// fail records an error of a client (the first ten are kept).
func (r *loadRun) fail(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nerrs++
	if len(r.errs) < 10 {
		r.errs = append(r.errs, fmt.Sprintf(format, args...))
	}
}

// count adds one to a counter of the run: waited, or one of starvation's
// (a lease that ran out, a wait that timed out, a release not answered:
// the machine did not run the client or the server in time).
func (r *loadRun) count(n *int) {
	r.mu.Lock()
	*n++
	r.mu.Unlock()
}

// starvedTotal counts every cycle the machine's starvation spoiled.
func (r *loadRun) starvedTotal() int { return r.expired + r.gaveUp + r.unanswered + r.lateGrants }

// pacer returns one client's pace: it waits until the client's next cycle,
// started at random times interval apart on average (or at once when
// late), and reports false when the run is over.
func (r *loadRun) pacer() func() bool {
	next := r.started
	return func() bool {
		next = next.Add(time.Duration(rand.ExpFloat64() * float64(r.interval)))
		if !next.Before(r.stop) {
			return false
		}
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
		return time.Now().Before(r.stop)
	}
}

// goClient runs the cycles of a Go client (distlock.Client on
// engine/remote) on name at its pace, and returns its samples.
// goClientTTL is the ttl of the Go clients' leases.
const goClientTTL = 5 * time.Second

func (r *loadRun) goClient(name string, pace func() bool) []loadSample {
	var mine []loadSample
	eng, err := remote.New(r.url)
	if err != nil {
		r.fail("remote: %v", err)
		return nil
	}
	defer eng.Close()
	c := distlock.New(eng)
	defer c.Close()
	for pace() {
		wctx, wcancel := context.WithTimeout(r.ctx, 30*time.Second)
		t0 := time.Now()
		l, err := c.Acquire(wctx, name, distlock.WithTTL(goClientTTL))
		t1 := time.Now()
		wcancel()
		if errors.Is(err, context.DeadlineExceeded) && r.ctx.Err() == nil {
			r.count(&r.gaveUp)
			continue
		}
		if err != nil && enginetest.ValidityUsedUp(err) && t1.Sub(t0) >= goClientTTL {
			// The Client refused a grant whose reply came after its
			// ttl (its own clock, from when it sent the request): a
			// server not run in time, not a wrong answer.
			r.count(&r.lateGrants)
			continue
		}
		if err != nil {
			r.fail("go client acquire: %v", err)
			return mine
		}
		time.Sleep(r.hold)
		deadline := l.Deadline() // renewals only move it later
		t2 := time.Now()
		err = l.Release(r.ctx)
		t3 := time.Now()
		// Not held is the machine's when the answer came at or after the
		// deadline: the server may have run the release at any moment
		// until then.
		if errors.Is(err, distlock.ErrNotHeld) && !t3.Before(deadline) {
			r.count(&r.expired)
			continue
		}
		if errors.Is(err, context.Canceled) && t3.Sub(t2) >= distlock.DefaultReleaseTimeout {
			// Not answered within the client's release timeout (the
			// remote engine cancels the request a moment after it): a
			// server not run in time.
			r.count(&r.unanswered)
			continue
		}
		if err != nil {
			r.fail("go client release answered %v before the lease's deadline (sent %v before the answer): %v", deadline.Sub(t3), t3.Sub(t2), err)
			return mine
		}
		mine = append(mine, loadSample{t1.Sub(t0), t3.Sub(t2)})
	}
	return mine
}

// httpClient runs the cycles of a plain HTTP client (it waits inside the
// server with wait_ms) on name at its pace, and returns its samples.
func (r *loadRun) httpClient(name string, pace func() bool) []loadSample {
	var mine []loadSample
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer hc.CloseIdleConnections()
	const ttl = 5 * time.Second
	for pace() {
		t0 := time.Now()
		m, code, err := loadPost(r.ctx, hc, r.url+"/v1/locks/"+name+"/acquire", map[string]any{"ttl_ms": ttl.Milliseconds(), "wait_ms": 30000})
		t1 := time.Now()
		if code == api.CodeLocked {
			r.count(&r.gaveUp) // still locked after waiting 30 s
			continue
		}
		if err != nil {
			r.fail("http client acquire: %v", err)
			return mine
		}
		// The validity deadline, counted from the send time as a lease
		// counts it: the server granted the lock later.
		deadline := t0.Add(ttl - engine.Drift(ttl))
		if w, _ := m["waited_ms"].(float64); w > 0 {
			r.count(&r.waited)
		}
		time.Sleep(r.hold)
		t2 := time.Now()
		_, code, err = loadPost(r.ctx, hc, r.url+"/v1/locks/"+name+"/release", map[string]any{"owner": m["owner"]})
		t3 := time.Now()
		if code == api.CodeNotHeld && !t3.Before(deadline) {
			r.count(&r.expired)
			continue
		}
		if err != nil {
			r.fail("http client release answered %v before the deadline (sent %v before the answer): %v", deadline.Sub(t3), t3.Sub(t2), err)
			return mine
		}
		mine = append(mine, loadSample{t1.Sub(t0), t3.Sub(t2)})
	}
	return mine
}

// loadPost posts body as JSON to url and returns the answer's body, or its
// error code (an error answer) or error.
func loadPost(ctx context.Context, hc *http.Client, url string, body any) (m map[string]any, code string, err error) {
	data, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(data))
	if err != nil {
		return nil, "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", err
	}
	if resp.StatusCode != 200 {
		var e api.ErrorBody
		_ = json.Unmarshal(out, &e)
		return nil, e.Error.Code, fmt.Errorf("HTTP %d: %s", resp.StatusCode, out)
	}
	return m, "", json.Unmarshal(out, &m)
}

// checkSettled checks that the server is left clean after the run: no lock
// held, nobody waiting (a lease whose release failed is gone within its
// ttl), and that cycles completed; it logs the starvation seen.
func (r *loadRun) checkSettled(t *testing.T, s *testServer) {
	t.Helper()
	if r.starvedTotal() > 0 {
		t.Logf("the machine was starved: %d leases ran out before their release was answered, %d waits used up their 30 s budget, %d releases were not answered within the release timeout, %d grants were answered after their ttl", r.expired, r.gaveUp, r.unanswered, r.lateGrants)
	}
	waitFor(t, 60*time.Second, "the server to settle", func() bool {
		text := scrape(t, s)
		return metric(t, text, "distlock_waiters") == 0 && metric(t, text, "distlock_holders") == 0
	})
	if n, err := s.HeldLocks(context.Background()); err != nil || n != 0 {
		t.Fatalf("%d locks still held after the load (%v)", n, err)
	}
	if len(r.samples[0]) == 0 || len(r.samples[1]) == 0 {
		if r.starvedTotal() > 0 {
			t.Skipf("machine too slow: no cycles completed (%d by Go clients, %d by HTTP clients), every lease ran out or wait timed out", len(r.samples[0]), len(r.samples[1]))
		}
		t.Fatalf("no cycles completed: %d and %d", len(r.samples[0]), len(r.samples[1]))
	}
}

// loadReport renders the figures as Markdown.
func loadReport(goClients, httpClients []loadSample, elapsed time.Duration, how string, httpWaited, starved int) string {
	var b strings.Builder
	total := len(goClients) + len(httpClients)
	fmt.Fprintf(&b, "%d clients (%d Go clients on engine/remote, %d plain HTTP clients with wait_ms) on %d names for %v, embedded engine, loopback; %s.\n\n",
		loadClients, loadClients/2, loadClients/2, loadNames, elapsed.Round(100*time.Millisecond), how)
	fmt.Fprintf(&b, "%d acquire+release cycles, %.0f cycles/s, 0 errors, %d leases run out or waits timed out on a starved machine; %d of %d HTTP acquires had to wait.\n\n",
		total, float64(total)/elapsed.Seconds(), starved, httpWaited, len(httpClients))
	b.WriteString("| clients | operation | count | p50 | p90 | p99 | p99.9 | max |\n|---|---|---|---|---|---|---|---|\n")
	row := func(who, op string, ds []time.Duration) {
		slices.Sort(ds)
		q := func(p float64) string { return fmtLatency(ds[min(len(ds)-1, int(p*float64(len(ds))))]) }
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %s |\n", who, op, len(ds), q(.5), q(.9), q(.99), q(.999), fmtLatency(ds[len(ds)-1]))
	}
	for _, k := range []struct {
		who string
		ss  []loadSample
	}{{"Go (engine/remote)", goClients}, {"HTTP (wait_ms)", httpClients}} {
		var acq, rel []time.Duration
		for _, s := range k.ss {
			acq, rel = append(acq, s.acquire), append(rel, s.release)
		}
		row(k.who, "acquire (incl. waiting)", acq)
		row(k.who, "release", rel)
	}
	return b.String()
}

func fmtLatency(d time.Duration) string {
	if d < time.Millisecond {
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	}
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

// BenchmarkRemoteAcquireRelease: one Go client (engine/remote), one
// uncontended lock: the cost of a grant and a release through the server.
func BenchmarkRemoteAcquireRelease(b *testing.B) {
	s := startB(b)
	eng, err := remote.New(s)
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	c := distlock.New(eng)
	defer c.Close()
	ctx := context.Background()
	for b.Loop() {
		l, err := c.TryAcquire(ctx, "bench", distlock.WithAutoRenew(false))
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// startB serves a new embedded engine for a benchmark and returns its URL.
func startB(b *testing.B) string {
	b.Helper()
	mem := memory.New()
	b.Cleanup(func() { _ = mem.Close() })
	srv, err := server.New(mem, server.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

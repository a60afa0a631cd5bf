//go:build unix

package remote_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/remote"
)

// TestQueueOrderThroughServerRestart: fair waiters queue through server A
// (real processes on one Redis); A is killed and started again on the same
// port (the waiters name A alone), or killed while the waiters name B too.
// Each waiter's event stream opens again on the server left, and the
// waiter tries again through it. Then the holder releases: the waiters
// must be granted in their arrival order (the queue's order before the
// fault; grants ordered by their fencing tokens), none of them dropped
// from the queue and queued again (no arrival ticket taken after theirs).
//
// They were not (every run): the queue entry kept the wake-up channel of
// the engine the waiter entered through, the killed server's, so each
// release reserved the lock for the head and woke it where nobody
// listened; the reservation (engine.ReserveTTL) lapsed before the head's
// next heartbeat, the head was dropped and queued again at the back, and
// each hand-off waited for a heartbeat. The channel now follows the
// waiter: its attempt through another server's engine records that
// engine's channel (scripts/queue.lua, q_follow); heartbeats leave it.
func TestQueueOrderThroughServerRestart(t *testing.T) {
	for _, c := range []struct {
		name string
		both bool // the clients name B after A, and A is not started again
	}{
		{"restarted on the same port", false},
		{"killed, B named too", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			queueOrderThroughFault(t, c.both)
		})
	}
}

func queueOrderThroughFault(t *testing.T, both bool) {
	const n, name = 4, "turns"
	srvs, direct, rs := procServers(t, 2)
	a, b := srvs[0], srvs[1]
	urls := []string{a.URL()}
	if both {
		urls = append(urls, b.URL())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	holder := strangerClient(t, urls...)
	l, err := holder.Acquire(ctx, name, distlock.WithTTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	trails := make([]*requestTrail, n)
	grants := make(chan strangerGrant, n)
	for i := range trails {
		trails[i] = &requestTrail{}
		e, err := remote.New(strings.Join(urls, ","), remote.WithHTTPClient(&http.Client{Transport: trails[i]}))
		if err != nil {
			t.Fatal(err)
		}
		c := distlock.New(e)
		t.Cleanup(func() { _ = c.Close(); _ = e.Close() })
		who := fmt.Sprintf("w%d", i)
		strangerWait(t, ctx, c, name, 30*time.Second, grants, direct, i+1, who, distlock.WithFair(), distlock.WithOwner(who))
	}
	info, err := direct.Inspect(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	var arrival []string
	for _, w := range info.Queue {
		arrival = append(arrival, distlock.WaiterOwner(w.ID))
	}
	if len(arrival) != n {
		t.Fatalf("the queue before the fault: %v; want %d waiters", arrival, n)
	}
	tickets := func() string {
		v, err := rs.Client().HGet(ctx, "distlock:{"+name+"}:qs", "n").Result()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	issued := tickets()

	fault := time.Now()
	for _, tr := range trails {
		tr.from(fault)
	}
	a.kill()
	if !both {
		a.start()
	}
	enginetest.WaitFor(t, time.Minute, "every waiter to try again after its event stream opened again", func() bool {
		for _, tr := range trails {
			if !tr.retried() {
				return false
			}
		}
		return true
	})
	if got := tickets(); got != issued {
		// The fault outlasted the entries' heartbeat ttl (distlock.WaiterTTL):
		// the machine, not the queue, broke the order.
		t.Skipf("machine too slow: arrival tickets %s before the fault, %s after the waiters came back (%v): an entry lapsed while its server was down", issued, got, time.Since(fault))
	}

	released := time.Now()
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	var order []string
	last := l.Token()
	for range n {
		g := <-grants
		if g.err != nil {
			t.Fatalf("waiter %s: %v", g.who, g.err)
		}
		if g.l.Token() <= last {
			t.Fatalf("waiter %s's token %d is not above the previous grant's %d", g.who, g.l.Token(), last)
		}
		last = g.l.Token()
		order = append(order, g.who)
		t.Logf("%s granted %v after the previous release", g.who, time.Since(released).Round(time.Millisecond))
		if got := tickets(); got != issued {
			t.Errorf("after %v were granted the queue issued arrival tickets up to %s, %s before the release: a waiter was dropped from the queue and entered it again", order, got, issued)
		}
		released = time.Now()
		if err := g.l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(order, arrival) {
		t.Fatalf("granted in the order %v; the waiters arrived in the order %v", order, arrival)
	}
}

// TestQueueTurnWithStreamOnOtherServer: the first of two fair waiters
// names A and B and queues through A, where its event stream stays; A
// stops for a moment (SIGSTOP, far shorter than the stream's silence
// limit), long enough for a heartbeat of the first waiter to go through B
// instead, and continues. Its requests now go through B while its stream
// is on A. The holder releases: the first waiter must be served first. A
// heartbeat must not move the waiter's wake-ups to B's engine, where
// nobody listens for it (its reservation would lapse, and it would lose
// its turn to the second waiter).
func TestQueueTurnWithStreamOnOtherServer(t *testing.T) {
	const name = "split"
	srvs, direct, _ := procServers(t, 2)
	a, b := srvs[0], srvs[1]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	holder := strangerClient(t, b.URL())
	l, err := holder.Acquire(ctx, name, distlock.WithTTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	trail := &requestTrail{}
	e, err := remote.New(a.URL()+","+b.URL(), remote.WithHTTPClient(&http.Client{Transport: trail}))
	if err != nil {
		t.Fatal(err)
	}
	first := distlock.New(e)
	t.Cleanup(func() { _ = first.Close(); _ = e.Close() })
	second := strangerClient(t, b.URL())
	grants := make(chan strangerGrant, 2)
	strangerWait(t, ctx, first, name, 30*time.Second, grants, direct, 1, "first", distlock.WithFair())
	strangerWait(t, ctx, second, name, 30*time.Second, grants, direct, 2, "second", distlock.WithFair())

	trail.from(time.Now())
	cont := a.pause()
	enginetest.WaitFor(t, 20*time.Second, "a heartbeat of the first waiter through B", func() bool {
		return trail.beatsThrough(b.URL()) > 0
	})
	cont()
	if trail.reopened() {
		t.Logf("the first waiter's event stream was opened again meanwhile (not the case this test is about)")
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	g := <-grants
	if g.err != nil {
		t.Fatalf("the %s waiter: %v", g.who, g.err)
	}
	if err := g.l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if g.who != "first" {
		t.Fatalf("the %s waiter (token %d) was served before the first, which queued first and is alive", g.who, g.l.Token())
	}
	if g = <-grants; g.err != nil {
		t.Fatalf("the %s waiter: %v", g.who, g.err)
	}
	_ = g.l.Release(ctx)
}

// requestTrail is one waiter's HTTP transport, which records after a fault
// (from) when the waiter's event stream was opened again, whether an
// acquire was sent after that (the waiter trying again through the server
// that now has its stream), and through which servers its heartbeats
// (POST /v1/extend) went.
type requestTrail struct {
	mu       sync.Mutex
	since    time.Time      // the fault: zero before it
	streamed time.Time      // an event stream answered after since
	again    bool           // an acquire sent after streamed was answered
	beats    map[string]int // extend requests answered after since, by host
}

// from starts the trail at the fault's time.
func (tr *requestTrail) from(t time.Time) {
	tr.mu.Lock()
	tr.since = t
	tr.mu.Unlock()
}

// retried reports whether an acquire was answered after the stream was
// opened again.
func (tr *requestTrail) retried() bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.again
}

// reopened reports whether an event stream was opened after the fault.
func (tr *requestTrail) reopened() bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return !tr.streamed.IsZero()
}

// beatsThrough is the number of extend requests answered by the server at
// base URL u after the fault.
func (tr *requestTrail) beatsThrough(u string) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.beats[strings.TrimPrefix(u, "http://")]
}

// RoundTrip implements http.RoundTripper.
func (tr *requestTrail) RoundTrip(req *http.Request) (*http.Response, error) {
	sent := time.Now()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	switch {
	case tr.since.IsZero() || sent.Before(tr.since):
	case req.URL.Path == "/v1/extend":
		if tr.beats == nil {
			tr.beats = map[string]int{}
		}
		tr.beats[req.URL.Host]++
	case strings.HasSuffix(req.URL.Path, "/events") && resp.StatusCode == http.StatusOK:
		if tr.streamed.IsZero() {
			tr.streamed = time.Now()
		}
	case strings.HasSuffix(req.URL.Path, "/acquire") && !tr.streamed.IsZero() && sent.After(tr.streamed):
		tr.again = true
	}
	return resp, err
}

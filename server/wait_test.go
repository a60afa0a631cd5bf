package server_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/server"
	"github.com/distlock/distlock/server/api"
)

// TestWaitingAcquire: a waiting request is held open and answered on the
// release: the holder's ttl (60s) is longer than the waiter's budget (20s),
// so only the release can have ended the wait, and waited_ms is what the
// server waited (between the waiter's subscription and its answer). That
// the wait loop is woken at the instant of the release, by notification
// rather than by its next heartbeat, is TestFakeClockLoopWokenByRelease's
// (internal/waiting, on a fake clock).
func TestWaitingAcquire(t *testing.T) {
	s := start(t, nil)
	r := call(t, "POST", lockURL(s, "w", "acquire"), "", map[string]any{"owner": "holder", "ttl_ms": 60000})
	want(t, "holder", r, 200, "")
	holderToken := num(t, r, "token")
	got := make(chan reply, 1)
	sent := time.Now()
	go func() {
		got <- call(t, "POST", lockURL(s, "w", "acquire"), "", map[string]any{"wait_ms": 20000, "metadata": "waiter"})
	}()
	waitFor(t, patience, "the waiter to subscribe", func() bool { return waiters(t, s.eng, "w") == 1 })
	subscribed := time.Now()
	// The release's sending time, not its answer's: the waiter may be
	// granted and answered before this goroutine reads the release's reply.
	releaseSent := time.Now()
	want(t, "release", call(t, "POST", lockURL(s, "w", "release"), "", map[string]any{"owner": "holder"}), 200, "")
	r2 := <-got
	answered := time.Since(sent)
	want(t, "waiter", r2, 200, "")
	if num(t, r2, "token") <= holderToken {
		t.Fatalf("waiter's token %d not above %d", num(t, r2, "token"), holderToken)
	}
	w := time.Duration(r2.json(t)["waited_ms"].(float64)) * time.Millisecond
	if lo := releaseSent.Sub(subscribed).Truncate(time.Millisecond); w < lo || w > answered {
		t.Fatalf("waited_ms %v, want between %v (subscribed to the release sent) and %v (the whole call)", w, lo, answered)
	}
	if n := waiters(t, s.eng, "w"); n != 0 {
		t.Fatalf("%d subscriptions left after the grant", n)
	}
}

// TestWaitTimeout: the wait budget ends with locked and the time waited
// (the holder's 60s ttl outlasts it); a holder that expires without release
// is noticed at its expiry: the waiter is granted the lock within its
// budget, which is far longer than the holder's ttl, and not before the
// holder's ttl ran out. (That the wait loop wakes exactly at the expiry is
// TestFakeClockWaitUntilHolderExpires's, on a fake clock.)
func TestWaitTimeout(t *testing.T) {
	s := start(t, nil)
	want(t, "holder", call(t, "POST", lockURL(s, "t", "acquire"), "", map[string]any{"ttl_ms": 60000}), 200, "")
	startAt := time.Now()
	r := call(t, "POST", lockURL(s, "t", "acquire"), "", map[string]any{"wait_ms": 300})
	took := time.Since(startAt)
	want(t, "waited out", r, 409, api.CodeLocked)
	waited, _ := r.errField(t, "waited_ms").(float64)
	if w := time.Duration(waited) * time.Millisecond; w < 300*time.Millisecond || w > took {
		t.Fatalf("waited_ms %v, want at least the budget 300ms and at most the call's %v: %s", w, took, r.body)
	}
	if waiters(t, s.eng, "t") != 0 {
		t.Fatal("subscription left after the timeout")
	}

	const holderTTL = 300 * time.Millisecond
	holderSent := time.Now()
	want(t, "short holder", call(t, "POST", lockURL(s, "e", "acquire"), "", map[string]any{"ttl_ms": holderTTL.Milliseconds()}), 200, "")
	r = call(t, "POST", lockURL(s, "e", "acquire"), "", map[string]any{"wait_ms": 25000})
	want(t, "after expiry", r, 200, "")
	if d := time.Since(holderSent); d < holderTTL {
		t.Fatalf("granted %v after the holder's grant was sent, before its ttl %v ran out", d, holderTTL)
	}
}

// TestDisconnectingWaiter: a client that goes away while waiting leaves no
// subscription, no waiter slot and no grant behind.
func TestDisconnectingWaiter(t *testing.T) {
	s := start(t, nil, server.WithMaxWaiters(10, 1))
	want(t, "holder", call(t, "POST", lockURL(s, "d", "acquire"), "", map[string]any{"owner": "holder", "ttl_ms": 60000}), 200, "")

	conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	body := `{"owner":"ghost","wait_ms":30000}`
	fmt.Fprintf(conn, "POST /v1/locks/d/acquire HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	waitFor(t, patience, "the waiter to subscribe", func() bool { return waiters(t, s.eng, "d") == 1 })
	// The per-name limit is 1: the slot is taken.
	want(t, "second waiter", call(t, "POST", lockURL(s, "d", "acquire"), "", map[string]any{"wait_ms": 1000}), 429, api.CodeTooManyWaiters)
	conn.Close()
	waitFor(t, patience, "the subscription to go", func() bool { return waiters(t, s.eng, "d") == 0 })
	// The slot is free again: a new waiter is admitted (and times out).
	want(t, "new waiter", call(t, "POST", lockURL(s, "d", "acquire"), "", map[string]any{"wait_ms": 100}), 409, api.CodeLocked)
	// The ghost's wait is over (no waiter left above): nothing of it can
	// take the lock the release frees.
	want(t, "release", call(t, "POST", lockURL(s, "d", "release"), "", map[string]any{"owner": "holder"}), 200, "")
	r := call(t, "GET", lockURL(s, "d", ""), "", nil)
	if r.json(t)["held"] != false {
		t.Fatalf("the lock went to the client that left: %s", r.body)
	}
	waitFor(t, patience, "the waiters gauge to drop", func() bool {
		return strings.Contains(string(call(t, "GET", s.url+"/metrics", "", nil).body), "\ndistlock_waiters 0\n")
	})
}

// TestWaiterLimits: per name and in total, answered too_many_waiters
// (429, Retry-After) at once; event streams count too.
func TestWaiterLimits(t *testing.T) {
	s := start(t, nil, server.WithMaxWaiters(3, 2))
	for _, n := range []string{"p", "q"} {
		want(t, "holder "+n, call(t, "POST", lockURL(s, n, "acquire"), "", map[string]any{"ttl_ms": 60000}), 200, "")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 2 {
		go func() {
			req, _ := http.NewRequestWithContext(ctx, "POST", lockURL(s, "p", "acquire"), strings.NewReader(`{"wait_ms":30000}`))
			if resp, err := httpClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}
	waitFor(t, patience, "two waiters on p", func() bool { return waiters(t, s.eng, "p") == 2 })
	r := call(t, "POST", lockURL(s, "p", "acquire"), "", map[string]any{"wait_ms": 30000})
	want(t, "third waiter on p", r, 429, api.CodeTooManyWaiters)
	if r.header.Get("Retry-After") == "" || r.errField(t, "retry_ms") == nil {
		t.Fatalf("429 without Retry-After: %v %s", r.header, r.body)
	}
	// An attempt without waiting is not a waiter: it is answered locked.
	want(t, "try on p", call(t, "POST", lockURL(s, "p", "acquire"), "", nil), 409, api.CodeLocked)

	// An event stream takes the third (last) slot in total.
	req, _ := http.NewRequestWithContext(ctx, "GET", lockURL(s, "q", "events"), nil)
	resp, err := httpClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("events: %v %v", resp, err)
	}
	defer resp.Body.Close()
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	if line != "event: ready\n" {
		t.Fatalf("events stream began with %q", line)
	}
	want(t, "waiter on q over the total", call(t, "POST", lockURL(s, "q", "acquire"), "", map[string]any{"wait_ms": 30000}), 429, api.CodeTooManyWaiters)
	want(t, "events over the total", call(t, "GET", lockURL(s, "q", "events"), "", nil), 429, api.CodeTooManyWaiters)
	cancel()
}

// TestLockEvents: the stream says ready once subscribed, then release on
// every release; it leaves no subscription when closed.
func TestLockEvents(t *testing.T) {
	s := start(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", lockURL(s, "ev", "events"), nil)
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %v", resp.StatusCode, resp.Header)
	}
	rd := bufio.NewReader(resp.Body)
	next := func() string {
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(line, "event: ") {
				return strings.TrimSpace(strings.TrimPrefix(line, "event: "))
			}
		}
	}
	if ev := next(); ev != api.EventReady {
		t.Fatalf("first event %q", ev)
	}
	if subscribers(t, s.eng, "ev") != 1 {
		t.Fatal("ready before the engine subscription")
	}
	for range 3 {
		r := call(t, "POST", lockURL(s, "ev", "acquire"), "", nil)
		owner := r.json(t)["owner"]
		want(t, "release", call(t, "POST", lockURL(s, "ev", "release"), "", map[string]any{"owner": owner}), 200, "")
		if ev := next(); ev != api.EventRelease {
			t.Fatalf("event %q, want release", ev)
		}
	}
	cancel()
	waitFor(t, patience, "the subscription to go", func() bool { return subscribers(t, s.eng, "ev") == 0 })
}

package redis_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// recorder collects every state an Observe channel carries.
type recorder struct {
	mu     sync.Mutex
	states []distlock.Leader
	cond   chan struct{} // closed and replaced on each state
}

func record(t *testing.T, ctx context.Context, c *distlock.Client, name string) *recorder {
	t.Helper()
	ch, err := c.Observe(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{cond: make(chan struct{})}
	go func() {
		for st := range ch {
			r.mu.Lock()
			r.states = append(r.states, st)
			close(r.cond)
			r.cond = make(chan struct{})
			r.mu.Unlock()
		}
	}()
	return r
}

// waitFor waits until the latest state satisfies ok.
func (r *recorder) waitFor(t *testing.T, what string, ok func(distlock.Leader) bool) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		r.mu.Lock()
		done := len(r.states) > 0 && ok(r.states[len(r.states)-1])
		cond := r.cond
		r.mu.Unlock()
		if done {
			return
		}
		select {
		case <-cond:
		case <-deadline:
			t.Fatalf("%s: not observed within 20s; states %+v", what, r.all())
		}
	}
}

func (r *recorder) all() []distlock.Leader {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]distlock.Leader(nil), r.states...)
}

// checkOrder fails when the states' terms ever go down, or a term comes
// back after another one.
func checkOrder(t *testing.T, who string, states []distlock.Leader) {
	t.Helper()
	var highest uint64
	for i, st := range states {
		if st.Elected() && st.Term < highest {
			t.Fatalf("%s: state %d has term %d after term %d: %+v", who, i, st.Term, highest, states)
		}
		highest = max(highest, st.Term)
	}
}

// TestObserversFollowNotices: four observers on their own Clients follow
// 12 leaders (each resigning to the next campaigner) and their proclaims;
// each observer sees every term and value, in order, never a term below
// one it reported.
func TestObserversFollowNotices(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	obs := make([]*recorder, 4)
	for i := range obs {
		obs[i] = record(t, ctx, newClient(t, srv), "notices")
	}
	campaigners := []*distlock.Client{newClient(t, srv), newClient(t, srv), newClient(t, srv)}
	var prev uint64
	for round := range 12 {
		v := fmt.Sprintf("leader-%d", round)
		l, err := campaigners[round%3].Campaign(ctx, "notices", v)
		if err != nil {
			t.Fatal(err)
		}
		if l.Term() <= prev {
			t.Fatalf("term %d after %d", l.Term(), prev)
		}
		prev = l.Term()
		for i, r := range obs {
			r.waitFor(t, fmt.Sprintf("observer %d, %s", i, v), func(st distlock.Leader) bool { return st.Term == l.Term() && st.Value == v })
		}
		if err := l.Proclaim(ctx, v+"-again"); err != nil {
			t.Fatal(err)
		}
		for i, r := range obs {
			r.waitFor(t, fmt.Sprintf("observer %d, %s proclaimed", i, v), func(st distlock.Leader) bool { return st.Term == l.Term() && st.Value == v+"-again" })
		}
		if err := l.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		for i, r := range obs {
			r.waitFor(t, fmt.Sprintf("observer %d, no leader after %s", i, v), func(st distlock.Leader) bool { return !st.Elected() })
		}
	}
	for i, r := range obs {
		checkOrder(t, fmt.Sprintf("observer %d", i), r.all())
	}
}

// TestObserverIgnoresStaleNotices: notices that are out of order (a
// former leader's, a term that ended already) or duplicated never move an
// observer back: it reads the lock instead, and reports nothing new.
func TestObserverIgnoresStaleNotices(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e := listEngine(t, srv.Client())
	r := record(t, ctx, distlock.New(e), "stale")
	c := newClient(t, srv)
	a, err := c.Campaign(ctx, "stale", "a")
	if err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "a", func(st distlock.Leader) bool { return st.Term == a.Term() })
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "no leader", func(st distlock.Leader) bool { return !st.Elected() })
	ch := redisengine.Channel(e, "stale")
	pub := srv.Client()
	defer pub.Close()
	// A's grant, reordered after the end of its term.
	if err := pub.Publish(ctx, ch, fmt.Sprintf("L %d 60000 a", a.Term())).Err(); err != nil {
		t.Fatal(err)
	}
	b, err := c.Campaign(ctx, "stale", "b")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Resign(ctx)
	r.waitFor(t, "b", func(st distlock.Leader) bool { return st.Term == b.Term() && st.Value == "b" })
	// A's grant and the end of its term again, and b's grant duplicated.
	for _, m := range []string{fmt.Sprintf("L %d 60000 a", a.Term()), fmt.Sprintf("E %d", a.Term()), fmt.Sprintf("L %d 60000 b", b.Term())} {
		if err := pub.Publish(ctx, ch, m).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Proclaim(ctx, "b2"); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "b2", func(st distlock.Leader) bool { return st.Term == b.Term() && st.Value == "b2" })
	states := r.all()
	checkOrder(t, "observer", states)
	aEnded, bSeen := false, false
	for i, st := range states {
		switch {
		case st.Term == a.Term() && aEnded:
			t.Fatalf("state %d: a again after its term ended: %+v", i, states)
		case st.Term == b.Term():
			bSeen = true
		case !st.Elected() && bSeen:
			t.Fatalf("state %d: no leader while b leads: %+v", i, states)
		}
		if st.Term != a.Term() && i > 0 && states[i-1].Term == a.Term() {
			aEnded = true
		}
	}
}

// TestNoticeDistrustedAfterReconnect: a subscription whose connection
// broke may have lost messages, so the notice it holds from before is not
// trusted (the observer reads the lock); a notice carries the grant's
// term and value.
func TestNoticeDistrustedAfterReconnect(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e := listEngine(t, srv.Client())
	sub, err := e.Subscribe(ctx, "lost")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	notices := sub.(engine.Noticer)
	l, err := newClient(t, srv).Campaign(ctx, "lost", "v")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Resign(ctx)
	<-sub.C()
	n, ok := notices.Notice()
	if !ok || !n.Held || n.Token != l.Term() || n.Metadata != "v" || n.TTL <= 0 {
		t.Fatalf("notice of the grant: %+v %v, want term %d, value v", n, ok, l.Term())
	}
	if err := l.Proclaim(ctx, "w"); err != nil {
		t.Fatal(err)
	}
	<-sub.C() // the proclaim's notice waits in the subscription
	admin := srv.Client()
	defer admin.Close()
	if err := admin.ClientKillByFilter(ctx, "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sub.C():
	case <-ctx.Done():
		t.Fatal("no wake-up after the reconnect")
	}
	if n, ok := notices.Notice(); ok {
		t.Fatalf("after a reconnect the notice %+v is trusted; want a read", n)
	}
}

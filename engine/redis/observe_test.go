package redis_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/redistest"
)

// TestObserverAcrossRestart: an election's observer whose subscription
// broke (the server restarted and lost the leader, so nothing was
// published) reads again after reconnecting and sees the final state, "no
// leader"; then a new leader arrives by notification, well before the lost
// leader's ttl would have run out.
func TestObserverAcrossRestart(t *testing.T) {
	srv := redistest.Start(t)
	leader, observer := newClient(t, srv), newClient(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := leader.Campaign(ctx, "restart", "a", distlock.WithTTL(time.Minute), distlock.WithAutoRenew(false)); err != nil {
		t.Fatal(err)
	}
	changes, err := observer.Observe(ctx, "restart")
	if err != nil {
		t.Fatal(err)
	}
	next := func(what string) distlock.Leader {
		t.Helper()
		select {
		case st := <-changes:
			return st
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: not observed within 10s", what)
		}
		return distlock.Leader{}
	}
	if st := next("a"); st.Value != "a" {
		t.Fatalf("first state %+v", st)
	}
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if st := next("no leader after the restart"); st.Elected() {
		t.Fatalf("after the restart: %+v, want no leader", st)
	}
	other := newClient(t, srv)
	l, err := other.Campaign(ctx, "restart", "b")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Resign(ctx)
	if st := next("b"); st.Value != "b" || st.Term != l.Term() {
		t.Fatalf("after the new campaign: %+v, want b in term %d", st, l.Term())
	}
}

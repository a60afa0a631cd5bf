package zookeeper_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
)

// TestLeaderCutOffNotTwoLeaders is Curator's CURATOR-696 (two leaders in
// LeaderLatch after a connection loss) as a test of distlock's election:
// the leader's connection is cut (its session, 2 min, does not expire
// meanwhile) while another campaigner waits. The other is elected only
// after the cut-off leader was told its leadership is lost (Done closed,
// Err a *LostError signalled before the election), with a higher term; and
// once the connection comes back on the same session, the old leader stays
// deposed: the election reports the new leader, and the old one's
// Leadership stays lost.
func TestLeaderCutOffNotTwoLeaders(t *testing.T) {
	t.Parallel()
	ens := shared(t, 1)
	p := startProxy(t, ens.Servers()[0])
	first := distlock.New(dial(t, []string{p.Addr()}))
	t.Cleanup(func() { _ = first.Close() })
	second := distlock.New(dial(t, ens.Servers()))
	t.Cleanup(func() { _ = second.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	name := "cut-off-leader"
	ttl := distlock.WithTTL(2 * time.Second)
	la, err := first.Campaign(ctx, name, "first", ttl)
	if err != nil {
		t.Fatal(err)
	}
	type elected struct {
		ld  *distlock.Leadership
		err error
		at  time.Time
	}
	got := make(chan elected, 1)
	go func() {
		ld, err := second.Campaign(ctx, name, "second", ttl)
		got <- elected{ld, err, time.Now()}
	}()
	waitUntil(t, 20*time.Second, "the second campaigner to queue", func() bool {
		info, err := second.Inspect(ctx, name)
		return err == nil && info.Waiters == 1
	})
	p.Freeze()
	e := <-got // bounded by ctx
	if e.err != nil {
		t.Fatal(e.err)
	}
	lb := e.ld
	defer lb.Resign(ctx)
	select {
	case <-la.Done():
	default:
		t.Fatalf("two leaders: the second elected while the cut-off leader was not told (its deadline %v from now)", time.Until(la.Lease().Deadline()))
	}
	var lost *distlock.LostError
	if !errors.As(la.Err(), &lost) || !lost.At.Before(e.at) {
		t.Fatalf("the cut-off leader's loss %v (at %v) not before the election at %v", la.Err(), lost, e.at)
	}
	if lb.Term() <= la.Term() {
		t.Fatalf("the new term %d not above the deposed one's %d", lb.Term(), la.Term())
	}
	// The connection comes back on the same session: the old leader must
	// not lead again (CURATOR-696's second leader was the old one,
	// re-elected on reconnection beside the new).
	p.Thaw()
	var seen distlock.Leader
	waitUntil(t, 30*time.Second, "the old leader's client to read the election again", func() bool {
		seen, err = first.Leader(ctx, name)
		return err == nil
	})
	if seen.Value != "second" || seen.Term != lb.Term() {
		t.Fatalf("after the reconnection the old leader's client sees %+v, want the second's term %d", seen, lb.Term())
	}
	if !errors.As(la.Err(), &lost) {
		t.Fatalf("the deposed leadership's Err after the reconnection: %v, want still lost", la.Err())
	}
	if err := la.Proclaim(ctx, "first-again"); err == nil {
		t.Fatal("the deposed leader proclaimed a value after the reconnection")
	}
	select {
	case <-lb.Done():
		t.Fatalf("the new leader lost its leadership: %v", lb.Err())
	default:
	}
}

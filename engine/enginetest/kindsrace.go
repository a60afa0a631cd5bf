package enginetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
)

// kindsRace: the conformance case of KindsRace, on two Clients of their
// own engines.
func (s *suite) kindsRace(t *testing.T) {
	s.sharer(t)
	_, sems := s.sharedKinds(t)
	KindsRace(t, s.client(t), s.client(t), KindsRaceOptions{Rounds: 10, Semaphores: sems, Votes: s.h.Votes})
}

// KindsRaceOptions are KindsRace's: Rounds of each pair of kinds;
// Semaphores, the engine keeps semaphores above 1; Votes, the engine
// decides by a vote among nodes (Harness.Votes), where a round may be a
// split vote that refuses both calls (a node that answered neither in
// time): such rounds are tried again on a fresh name, up to Rounds more.
type KindsRaceOptions struct {
	Rounds     int
	Semaphores bool
	Votes      bool
}

// KindsRace: two kinds asked at once on a fresh name, from Clients a and
// b, round after round (o.Rounds of each pair): a mutex and a reader, a
// writer and a semaphore's permit, an election and a reader, and with sems
// (semaphores above 1 kept) a semaphore's SetLimit and a reader. Exactly
// one call succeeds; the other is refused as the wrong kind (an
// *ArgumentError: not contention, not a backend error), and once the
// winner leaves, the name keeps the winner's kind (a mutex's: none),
// whatever the engine's parts (a quorum's nodes, an ensemble's members)
// took first. First written as the quorum's and ZooKeeper's stranger
// tests (SAFETY findings 20, 21).
func KindsRace(t *testing.T, a, b *distlock.Client, o KindsRaceOptions) {
	t.Helper()
	sems := o.Semaphores
	ctx := ctxTimeout(t, 2*time.Minute)
	type op struct {
		kind engine.Kind
		try  func(c *distlock.Client, name string) (*distlock.Lease, error)
	}
	limit := 1
	if sems {
		limit = 2
	}
	mutex := op{engine.Mutex, func(c *distlock.Client, name string) (*distlock.Lease, error) { return c.TryAcquire(ctx, name) }}
	reader := op{engine.RWLock, func(c *distlock.Client, name string) (*distlock.Lease, error) { return c.RWMutex(name).TryRLock(ctx) }}
	writer := op{engine.RWLock, func(c *distlock.Client, name string) (*distlock.Lease, error) { return c.RWMutex(name).TryLock(ctx) }}
	permit := op{engine.Semaphore, func(c *distlock.Client, name string) (*distlock.Lease, error) {
		return c.Semaphore(name, limit).TryAcquire(ctx)
	}}
	setLimit := op{engine.Semaphore, func(c *distlock.Client, name string) (*distlock.Lease, error) {
		return nil, c.Semaphore(name, 2).SetLimit(ctx, 2)
	}}
	// An election is a mutex's kind with a value: a Campaign waits, so it
	// is given a short budget; a refused kind ends it at once.
	elect := op{engine.Mutex, func(c *distlock.Client, name string) (*distlock.Lease, error) {
		cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
		defer ccancel()
		ld, err := c.Campaign(cctx, name, "v")
		if err != nil {
			return nil, err
		}
		return ld.Lease(), nil
	}}
	type pair struct {
		name string
		x, y op
	}
	pairs := []pair{{"mutex-reader", mutex, reader}, {"writer-permit", writer, permit}, {"election-reader", elect, reader}}
	if sems {
		pairs = append(pairs, pair{"setlimit-reader", setLimit, reader})
	}
	base := lockName(t)
	for _, p := range pairs {
		splits := 0
		for round := 0; round < o.Rounds; round++ {
			name := fmt.Sprintf("%s-%s-%d-%d", base, p.name, round, splits)
			start := make(chan struct{})
			type answer struct {
				l   *distlock.Lease
				err error
			}
			xa, ya := make(chan answer, 1), make(chan answer, 1)
			go func() { <-start; l, err := p.x.try(a, name); xa <- answer{l, err} }()
			go func() { <-start; l, err := p.y.try(b, name); ya <- answer{l, err} }()
			close(start)
			x, y := <-xa, <-ya
			var xe, ye *distlock.ArgumentError
			if o.Votes && x.err != nil && y.err != nil && (!errors.As(x.err, &xe) || !errors.As(y.err, &ye)) && splits < o.Rounds {
				t.Logf("%s round %d: a split vote (%v; %v): again", p.name, round, x.err, y.err)
				splits++
				round--
				continue
			}
			if (x.err == nil) == (y.err == nil) {
				t.Fatalf("%s round %d: %v and %v: want exactly one to succeed", p.name, round, x.err, y.err)
			}
			win, lose, kind := x, y, p.x.kind
			if x.err != nil {
				win, lose, kind = y, x, p.y.kind
			}
			var ae *distlock.ArgumentError
			if !errors.As(lose.err, &ae) {
				t.Fatalf("%s round %d: the loser: %v, want an *ArgumentError", p.name, round, lose.err)
			}
			if win.l != nil {
				if err := win.l.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
			info, err := a.Inspect(ctx, name)
			if err != nil || info.Held || info.Kind != kind {
				t.Fatalf("%s round %d: after the %v left: %+v, %v", p.name, round, kind, info, err)
			}
		}
	}
}

package distlock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
)

// The tests of this file race a user's Extend with the watchdog's renewal
// of the same lease (issue x23): the request sent first must never reach the
// lock service after the one sent last, or the service keeps the older ttl
// while the lease computes its deadline from the newer one. An engine
// wrapper holds one Extend call "in the network" until the test lets it
// through; in a synctest bubble the times are exact.

// raceTTL is the ttl the leases of these tests are acquired with.
const raceTTL = 3 * time.Second

// heldEngine is the memory engine with one Extend call held: the first call
// carrying a request with the armed ttl waits, once it has arrived, until
// the test lets it through; the engine then applies it.
type heldEngine struct {
	*memory.Engine
	mu      sync.Mutex
	holdTTL time.Duration // the ttl of the call to hold; zero: none
	arrived chan struct{} // closed when the held call arrived
	through chan struct{} // closed by letThrough to let it reach the engine
	let     bool          // through is closed
	ttls    []time.Duration
}

// hold arms the engine to hold the next Extend call with a request of ttl.
func (e *heldEngine) hold(ttl time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.holdTTL = ttl
	e.arrived = make(chan struct{})
	e.through = make(chan struct{})
	e.let = false
}

// letThrough lets the held call (if armed) reach the engine; later calls
// do nothing.
func (e *heldEngine) letThrough() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.through != nil && !e.let {
		e.let = true
		close(e.through)
	}
}

func (e *heldEngine) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	e.mu.Lock()
	held := false
	for _, r := range rs {
		e.ttls = append(e.ttls, r.TTL)
		held = held || (e.holdTTL != 0 && r.TTL == e.holdTTL)
	}
	if held {
		e.holdTTL = 0
	}
	arrived, through := e.arrived, e.through
	e.mu.Unlock()
	if held {
		close(arrived)
		<-through // still in the network: the lock service applies it when it arrives
	}
	return e.Engine.Extend(ctx, rs)
}

// sentTTLs returns the ttls of the extension requests the engine got so far.
func (e *heldEngine) sentTTLs() []time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]time.Duration(nil), e.ttls...)
}

// raceLease starts a Client on a heldEngine and acquires name with raceTTL
// and auto-renewal; the Client and engine are closed when fn returns.
func raceLease(t *testing.T, name string, fn func(eng *heldEngine, c *Client, l *Lease)) {
	eng := &heldEngine{Engine: memory.New()}
	c := New(eng)
	defer func() {
		eng.letThrough() // a failed test may leave a call held
		_ = c.Close()
		_ = eng.Close()
	}()
	l, err := c.Acquire(t.Context(), name, WithTTL(raceTTL))
	if err != nil {
		t.Fatal(err)
	}
	fn(eng, c, l)
}

// wantWithinAuthority fails t unless l is held and its deadline is no later
// than the engine's expiry of the lock: the lease never believes it holds
// the lock past the point where the lock service may grant it to another.
func wantWithinAuthority(t *testing.T, c *Client, l *Lease) {
	t.Helper()
	if err := l.Err(); err != nil {
		t.Fatalf("lease lost: %v", err)
	}
	info, err := c.eng.Inspect(t.Context(), l.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !info.Held || info.Owner != l.Owner() {
		t.Fatalf("the engine does not have the lease's owner holding %q: %+v", l.Name(), info)
	}
	now := time.Now()
	if expiry := now.Add(info.TTL); l.Deadline().After(expiry) {
		t.Fatalf("the lease's deadline is %v from now, the engine expires the lock %v from now: "+
			"another owner can be granted it while this lease is held", l.Deadline().Sub(now), info.TTL)
	}
}

// TestExtendWhileRenewalInFlight: the watchdog's renewal (old ttl) is in
// flight when the holder extends the lease to ten times the ttl. Extend
// waits for the renewal's answer, so the extension reaches the engine
// last, and the engine enforces the ttl the lease computes its deadline
// from. The watchdog then renews with the new ttl.
func TestExtendWhileRenewalInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		raceLease(t, "extend-long", func(eng *heldEngine, c *Client, l *Lease) {
			eng.hold(raceTTL)
			<-eng.arrived // the watchdog's renewal, at ttl/3
			time.Sleep(100 * time.Millisecond)
			long := 10 * raceTTL
			extended := make(chan error, 1)
			go func() { extended <- l.Extend(t.Context(), long) }()
			synctest.Wait() // Extend waits, or (unserialized) has been answered
			eng.letThrough()
			if err := <-extended; err != nil {
				t.Fatalf("Extend: %v", err)
			}
			synctest.Wait()
			wantWithinAuthority(t, c, l)
			if got := l.TTL(); got != long {
				t.Fatalf("TTL after Extend: %v, want %v", got, long)
			}
			time.Sleep(time.Until(l.Deadline()) - long/2) // past the next renewal
			wantWithinAuthority(t, c, l)
			ttls := eng.sentTTLs()
			if got := ttls[len(ttls)-1]; got != long {
				t.Fatalf("the watchdog renewed with ttl %v after Extend, want %v (sent: %v)", got, long, ttls)
			}
		})
	})
}

// TestRenewalWhileExtendInFlight: the reverse. The holder's Extend to a
// shorter ttl is in flight when the watchdog's renewal falls due. The
// watchdog leaves the lease out until Extend is answered, so no renewal
// with the old, longer ttl is confirmed while the engine applies the
// shorter one; it renews with the shorter ttl after.
func TestRenewalWhileExtendInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		raceLease(t, "extend-short", func(eng *heldEngine, c *Client, l *Lease) {
			short := 2 * time.Second
			eng.hold(short)
			extended := make(chan error, 1)
			go func() { extended <- l.Extend(t.Context(), short) }()
			<-eng.arrived
			time.Sleep(raceTTL/3 + 100*time.Millisecond) // the watchdog's tick passes
			synctest.Wait()
			eng.letThrough()
			if err := <-extended; err != nil {
				t.Fatalf("Extend: %v", err)
			}
			synctest.Wait() // the watchdog, woken, renews the overdue lease
			wantWithinAuthority(t, c, l)
			ttls := eng.sentTTLs()
			if got := ttls[len(ttls)-1]; got != short || len(ttls) < 2 {
				t.Fatalf("extensions sent %v: want the watchdog's renewal with %v after Extend", ttls, short)
			}
		})
	})
}

// TestExtendWaitingGivesUp: an Extend waiting for the watchdog's renewal
// ends with its context's error and changes nothing; the lease is held.
func TestExtendWaitingGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		raceLease(t, "extend-cancel", func(eng *heldEngine, c *Client, l *Lease) {
			eng.hold(raceTTL)
			<-eng.arrived
			ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
			defer cancel()
			if err := l.Extend(ctx, 10*raceTTL); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Extend waiting past its context: %v, want context.DeadlineExceeded", err)
			}
			eng.letThrough()
			synctest.Wait()
			if got := l.TTL(); got != raceTTL {
				t.Fatalf("TTL after a given-up Extend: %v, want %v", got, raceTTL)
			}
			for _, ttl := range eng.sentTTLs() {
				if ttl != raceTTL {
					t.Fatalf("a given-up Extend sent a request (ttls %v)", eng.sentTTLs())
				}
			}
			wantWithinAuthority(t, c, l)
		})
	})
}

// TestLateAnswerOfOlderExtension: the deadline comes from the latest sent
// extension that was confirmed, not the latest answered: an older one's
// answer, arriving after, moves neither the deadline nor the ttl.
func TestLateAnswerOfOlderExtension(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stalledLease(t, "older", func(_ *Client, l *Lease) {
			older := time.Now()
			time.Sleep(10 * time.Millisecond)
			newer := time.Now()
			l.apply(engine.ExtendResult{Status: engine.Extended}, newer, leaseTTL, nil)
			want := l.Deadline()
			l.apply(engine.ExtendResult{Status: engine.Extended}, older, 10*leaseTTL, nil)
			if got := l.Deadline(); !got.Equal(want) || l.TTL() != leaseTTL {
				t.Fatalf("after an older extension's late answer: deadline moved by %v, ttl %v; want unchanged (%v)",
					got.Sub(want), l.TTL(), leaseTTL)
			}
		})
	})
}

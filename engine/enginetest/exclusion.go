package enginetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
)

const (
	exclusionClients    = 2
	exclusionGoroutines = 32
	exclusionRounds     = 8
)

// increments runs clients x goroutines x rounds read-modify-write cycles on
// reg, each under lock (or, for the control, with no lock at all), and
// returns the number of updates written (a cycle's Set that succeeded).
// A cycle that failed on a backend error (no answer within the Client's
// failure budget: a starved machine, not a broken lock) is counted
// apart; when more than half of them failed so, the test is skipped as
// run on a machine too slow to judge, with the first such error. Any other
// failure fails the test.
func (s *suite) increments(t *testing.T, reg Register, name string, locked bool) int64 {
	clients := make([]*distlock.Client, exclusionClients)
	for i := range clients {
		clients[i] = s.client(t)
	}
	// 512 grants among 64 goroutines: a budget for a starved machine with
	// the rest of the suite running beside (etcd took over a minute).
	ctx := ctxTimeout(t, 5*time.Minute)
	var (
		wg                  sync.WaitGroup
		mu                  sync.Mutex
		written, unanswered int64
		first, firstBackend error
	)
	cycle := func(c *distlock.Client) error {
		body := func(ctx context.Context) error {
			v, err := reg.Get(ctx)
			if err != nil {
				return err
			}
			if err := reg.Set(ctx, v+1); err != nil {
				return err
			}
			mu.Lock()
			written++
			mu.Unlock()
			return nil
		}
		if !locked {
			return body(ctx)
		}
		return c.Do(ctx, name, body, distlock.WithTTL(5*time.Second))
	}
	for _, c := range clients {
		for range exclusionGoroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range exclusionRounds {
					err := cycle(c)
					mu.Lock()
					switch {
					case err == nil:
					case errors.Is(err, distlock.ErrBackend):
						unanswered++
						if firstBackend == nil {
							firstBackend = err
						}
					case first == nil:
						first = err
					}
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if first != nil {
		t.Fatalf("cycle failed: %v", first)
	}
	const all = exclusionClients * exclusionGoroutines * exclusionRounds
	if unanswered > all/2 {
		t.Skipf("machine too slow: %d of %d cycles got no answer from the backend in time (first: %v)", unanswered, all, firstBackend)
	}
	if unanswered > 0 {
		t.Logf("%d of %d cycles got no answer from the backend in time (first: %v); the check counts the %d updates written", unanswered, all, firstBackend, written)
	}
	return written
}

func (s *suite) mutualExclusion(t *testing.T) {
	name := lockName(t)
	reg := s.register(t, name+"-counter")
	n := s.increments(t, reg, name, true)
	got, err := reg.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got != n {
		t.Fatalf("counter = %d after %d updates written under the lock: updates were lost, so two holders overlapped", got, n)
	}
}

// unlockedControl shows the exclusion test has teeth: the same cycles with
// no lock lose updates.
func (s *suite) unlockedControl(t *testing.T) {
	name := lockName(t)
	reg := s.register(t, name+"-counter")
	n := s.increments(t, reg, name, false)
	got, err := reg.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got >= n {
		t.Fatalf("without the lock the counter is %d after %d cycles: the register does not detect overlaps", got, n)
	}
	t.Logf("control: %d of %d updates survived without the lock", got, n)
}

// tokensIncrease checks that fencing tokens strictly increase across
// release, expiry and re-acquisition by other clients: 200 grants, or as
// many as tokensBudget allows (the count is how much the test wants to
// see, not a speed; below tokensMin it skips as a machine too slow).
func (s *suite) tokensIncrease(t *testing.T) {
	const tokensBudget, tokensMin = 30 * time.Second, 100
	a, b := s.client(t), s.client(t)
	name := lockName(t)
	ctx := ctxTimeout(t, tokensBudget+30*time.Second) // releases and waits for expiry
	budget := ctxTimeout(t, tokensBudget)             // asking for grants
	var last uint64
	starved, grants := 0, 0
	for i := range 200 {
		c := a
		if i%2 == 1 {
			c = b
		}
		expire := i%50 == 49
		opts := []distlock.Option{distlock.WithTTL(time.Second)}
		if expire {
			opts = []distlock.Option{distlock.WithTTL(distlock.MinTTL), distlock.WithAutoRenew(false)}
		}
		asked := time.Now()
		l, err := c.Acquire(budget, name, opts...)
		if err != nil && budget.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
			break
		}
		if err != nil {
			if expire && errors.Is(err, distlock.ErrBackend) && !time.Now().Before(asked.Add(distlock.MinTTL-engine.Drift(distlock.MinTTL))) {
				// The grant of the short ttl answered after its
				// validity (a slow machine): the Client refused it and
				// dropped the hold; no token was handed out.
				starved++
				continue
			}
			t.Fatalf("grant %d: %v", i, err)
		}
		if l.Token() <= last {
			t.Fatalf("grant %d: token %d not above previous %d", i, l.Token(), last)
		}
		last = l.Token()
		grants++
		if expire {
			<-l.Done() // let it expire; the next Acquire waits for the key too
			continue
		}
		if err := l.Release(ctx); err != nil {
			if errors.Is(err, distlock.ErrNotHeld) && !time.Now().Before(l.Deadline()) ||
				errors.Is(err, distlock.ErrBackend) && errors.Is(err, context.DeadlineExceeded) {
				// Answered after the lease's deadline (a machine that
				// ran the renewals or the release late), or not answered
				// within the release timeout: the lock expires by its
				// ttl, which is no token's concern (the next grant's
				// token is still checked).
				starved++
				continue
			}
			t.Fatalf("release %d: %v", i, err)
		}
	}
	if starved > 0 {
		t.Logf("%d releases answered after their lease's deadline, or grants of the short ttl after their validity (a slow machine)", starved)
	}
	if grants < tokensMin && budget.Err() != nil {
		t.Skipf("machine too slow: %d grants in %v (at least %d to judge), every one's token above the one before", grants, tokensBudget, tokensMin)
	}
}

func (s *suite) tryAcquireLocked(t *testing.T) {
	c := s.client(t)
	name := lockName(t)
	ctx := ctxTimeout(t, 30*time.Second)
	asked := time.Now()
	l, err := c.TryAcquire(ctx, name, distlock.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	_, err = s.client(t).TryAcquire(ctx, name)
	elapsed := time.Since(asked)
	var le *distlock.LockedError
	if !errors.As(err, &le) || !errors.Is(err, distlock.ErrLocked) {
		t.Fatalf("TryAcquire on a held lock: %v, want *LockedError", err)
	}
	if errors.Is(err, distlock.ErrBackend) {
		t.Fatalf("contention reported as backend error: %v", err)
	}
	if least := ttlLeft(s, t, 10*time.Second, elapsed); le.TTL < least || le.TTL > 10*time.Second {
		t.Fatalf("LockedError.TTL = %v, want between %v and 10s (%v after the grant was asked)", le.TTL, least, elapsed)
	}
}

func (s *suite) releaseIdempotent(t *testing.T) {
	c := s.client(t)
	name := lockName(t)
	ctx := ctxTimeout(t, 30*time.Second)
	l, err := c.Acquire(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("Done not closed after Release")
	}
	if err := l.Release(ctx); !errors.Is(err, distlock.ErrReleased) || !errors.Is(err, distlock.ErrNotHeld) {
		t.Fatalf("second Release: %v, want ErrReleased", err)
	}
	if err := l.Extend(ctx, time.Second); !errors.Is(err, distlock.ErrReleased) {
		t.Fatalf("Extend after Release: %v, want ErrReleased", err)
	}
	if !errors.Is(l.Err(), distlock.ErrReleased) || !errors.Is(context.Cause(l.Context()), distlock.ErrReleased) {
		t.Fatalf("Err = %v, cause = %v", l.Err(), context.Cause(l.Context()))
	}
	// The lock is free and a new holder is not disturbed by the old handle.
	l2, err := c.TryAcquire(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Release(ctx)
	info, err := c.Inspect(ctx, name)
	if err != nil || !info.Held || info.Owner != l2.Owner() {
		t.Fatalf("old handle's release disturbed the new holder: %+v %v", info, err)
	}
}

func (s *suite) reentrancy(t *testing.T) {
	c := s.client(t)
	name := lockName(t)
	ctx := ctxTimeout(t, 30*time.Second)
	owner := distlock.WithOwner("worker-7")
	l1, err := c.Acquire(ctx, name, owner)
	if err != nil {
		t.Fatal(err)
	}
	l2, err := c.TryAcquire(ctx, name, owner)
	if err != nil {
		t.Fatalf("re-entry: %v", err)
	}
	if l1.Token() != l2.Token() {
		t.Fatalf("re-entry minted a new token: %d then %d", l1.Token(), l2.Token())
	}
	if info, _ := c.Inspect(ctx, name); info.Count != 2 || info.Owner != "worker-7" {
		t.Fatalf("after re-entry: %+v, want count 2", info)
	}
	if _, err := s.client(t).TryAcquire(ctx, name, distlock.WithOwner("worker-8")); !errors.Is(err, distlock.ErrLocked) {
		t.Fatalf("other owner: %v, want ErrLocked", err)
	}
	if err := l2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if info, _ := c.Inspect(ctx, name); !info.Held || info.Count != 1 {
		t.Fatalf("after one release: %+v, want held with count 1", info)
	}
	if err := l1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if info, _ := c.Inspect(ctx, name); info.Held {
		t.Fatalf("after both releases: %+v, want free", info)
	}
}

func (s *suite) attach(t *testing.T) {
	a, b := s.client(t), s.client(t)
	name := lockName(t)
	ctx := ctxTimeout(t, 30*time.Second)
	l, err := a.Acquire(ctx, name, distlock.WithAutoRenew(false), distlock.WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Attach(ctx, name, "someone-else"); !errors.Is(err, distlock.ErrNotHeld) {
		t.Fatalf("attach with a foreign owner: %v, want ErrNotHeld", err)
	}
	// (No watchdog on the attached lease: a renewal with the old ttl in
	// flight when the Extend below is sent may land after it.)
	r, err := b.Attach(ctx, name, l.Owner(), distlock.WithTTL(5*time.Second), distlock.WithAutoRenew(false))
	if err != nil {
		t.Fatalf("attach: %v", err)
	}
	if r.Token() != l.Token() {
		t.Fatalf("attached token %d, want %d", r.Token(), l.Token())
	}
	extended := time.Now()
	if err := r.Extend(ctx, 8*time.Second); err != nil {
		t.Fatal(err)
	}
	if info, _ := b.Inspect(ctx, name); info.TTL < ttlLeft(s, t, 8*time.Second, time.Since(extended)) {
		t.Fatalf("extend through attached lease did not apply: ttl %v %v after an extension to 8s", info.TTL, time.Since(extended))
	}
	if err := r.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if info, _ := a.Inspect(ctx, name); info.Held {
		t.Fatalf("release through attached lease left the lock held: %+v", info)
	}
	if err := l.Release(ctx); !errors.Is(err, distlock.ErrNotHeld) {
		t.Fatalf("original release after attached release: %v, want ErrNotHeld", err)
	}
}

func (s *suite) inspect(t *testing.T) {
	c := s.client(t)
	name := lockName(t)
	ctx := ctxTimeout(t, 30*time.Second)
	info, err := c.Inspect(ctx, name)
	if err != nil || info.Held || info.Waiters != 0 {
		t.Fatalf("fresh name: %+v %v", info, err)
	}
	asked := time.Now()
	l, err := c.Acquire(ctx, name, distlock.WithMetadata("host-a pid 42"), distlock.WithTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _, _ = s.client(t).Acquire(wctx, name) }()
	WaitFor(t, 20*time.Second, "a waiter to show", func() bool {
		info, err = c.Inspect(ctx, name)
		return err == nil && info.Waiters > 0
	})
	least := ttlLeft(s, t, 5*time.Second, time.Since(asked))
	if !info.Held || info.Owner != l.Owner() || info.Metadata != "host-a pid 42" ||
		info.Token != l.Token() || info.HighWater < l.Token() || info.Count != 1 ||
		info.TTL < least || info.TTL > 5*time.Second || info.Name != name {
		t.Fatalf("Inspect = %+v, lease owner %s token %d", info, l.Owner(), l.Token())
	}
	if len(info.Holders) != 1 || info.Holders[0].Owner != l.Owner() || info.Holders[0].Token != l.Token() ||
		info.Holders[0].Count != 1 || info.Holders[0].Metadata != "host-a pid 42" || info.Holders[0].TTL != info.TTL ||
		info.Holders[0].Weight != 1 {
		t.Fatalf("Inspect's holders = %+v, want the one lease", info.Holders)
	}
	cancel()
	WaitFor(t, 20*time.Second, "the waiter to leave", func() bool {
		info, err = c.Inspect(ctx, name)
		return err == nil && info.Waiters == 0
	})
}

// ttlLeft is the least time left that an engine may report of a ttl set
// elapsed ago (measured from before the call that set it): the ttl less
// that time, the clock-drift allowance and the engine's ttl granularity.
func ttlLeft(s *suite, t *testing.T, ttl, elapsed time.Duration) time.Duration {
	return ttl - elapsed - engine.Drift(ttl) - engine.CapabilitiesOf(s.h.New(t)).TTLGranularity
}

package distlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/engine/quorum"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// setEngine is an engine a set test runs on.
type setEngine struct {
	name string
	eng  engine.Engine
}

// setEngines returns the engines the set tests run on: memory and Redis
// (one script per set), both with the one-step grant hidden (the ordered
// path of the server, etcd and PostgreSQL; no queue), and a Redlock quorum
// of three redis-servers (ordered too).
func setEngines(t *testing.T) []setEngine {
	t.Helper()
	srv := redistest.Start(t)
	r, err := redisengine.New(srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	m := memory.New()
	nodes := make([]engine.Engine, 3)
	for i, s := range redistest.StartN(t, 3) {
		if nodes[i], err = redisengine.New(s.Client()); err != nil {
			t.Fatal(err)
		}
	}
	// A node's answer may take long on a loaded machine: these tests judge
	// sets, not the quorum's per-node timeout (min(ttl/100, 50ms) by default).
	q, err := quorum.New(nodes, quorum.WithNodeTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	return []setEngine{{"memory", m}, {"redis", r}, {"memory-ordered", plainEngine{m}}, {"redis-ordered", plainEngine{r}}, {"quorum", q}}
}

// plainEngine hides every optional interface of its engine (the one-step
// grant, the waiter queue): a Client drives it name by name.
type plainEngine struct{ engine.Engine }

// failingEngine is plainEngine whose Acquire of one name fails.
type failingEngine struct {
	engine.Engine
	fail string
}

var errInjected = errors.New("injected failure")

func (f failingEngine) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	if r.Name == f.fail {
		return engine.Grant{}, errInjected
	}
	return f.Engine.Acquire(ctx, r)
}

func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// assertFree checks that nobody holds any of names and nobody queues for
// them (enginetest.SetFree).
func assertFree(t *testing.T, c *distlock.Client, names ...string) {
	t.Helper()
	if err := enginetest.SetFree(context.Background(), c, names...); err != nil {
		t.Error(err)
	}
}

func TestAcquireAllBadInput(t *testing.T) {
	ctx := testCtx(t, 10*time.Second)
	c := distlock.New(memory.New())
	defer c.Close()
	many := make([]string, distlock.MaxSetSize+1)
	for i := range many {
		many[i] = fmt.Sprint("n", i)
	}
	cases := map[string]struct {
		names []string
		opts  []distlock.Option
	}{
		"empty":     {nil, nil},
		"duplicate": {[]string{"a", "b", "a"}, nil},
		"too many":  {many, nil},
		"bad name":  {[]string{"a", ""}, nil},
		"owner":     {[]string{"a", "b"}, []distlock.Option{distlock.WithOwner("me")}},
		"ttl":       {[]string{"a", "b"}, []distlock.Option{distlock.WithTTL(time.Millisecond)}},
	}
	for what, tc := range cases {
		for _, try := range []bool{false, true} {
			var err error
			if try {
				_, err = c.TryAcquireAll(ctx, tc.names, tc.opts...)
			} else {
				_, err = c.AcquireAll(ctx, tc.names, tc.opts...)
			}
			var ae *distlock.ArgumentError
			if !errors.As(err, &ae) || !errors.Is(err, distlock.ErrInvalidArgument) {
				t.Errorf("%s (try %v): %v; want an *ArgumentError", what, try, err)
			}
		}
	}
	if err := c.DoAll(ctx, []string{"a"}, nil); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Errorf("DoAll with nil fn: %v", err)
	}
	assertFree(t, c, append(many, "a", "b")...)
}

// TestAcquireAll: a set is granted whole with one token per name, a set
// that overlaps it is refused whole (naming the held name), and Release
// frees every member; tokens of each name increase over set and single
// grants alike.
func TestAcquireAll(t *testing.T) {
	for _, se := range setEngines(t) {
		t.Run(se.name, func(t *testing.T) {
			ctx := testCtx(t, 20*time.Second)
			c1, c2 := distlock.New(se.eng), distlock.New(se.eng)
			defer c1.Close()
			defer c2.Close()
			p := se.name + "/basic/"
			a, b, x := p+"a", p+"b", p+"x"
			s, err := c1.AcquireAll(ctx, []string{b, a})
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Names(); len(got) != 2 || got[0] != a || got[1] != b {
				t.Fatalf("Names: %v", got)
			}
			for _, n := range []string{a, b} {
				info, err := c1.Inspect(ctx, n)
				if err != nil || !info.Held || info.Owner != s.Owner(n) || info.Token != s.Token(n) || s.Token(n) == 0 {
					t.Fatalf("%q: %+v, %v; want held with the set's owner and token %d", n, info, err, s.Token(n))
				}
			}
			_, err = c2.TryAcquireAll(ctx, []string{x, b})
			var le *distlock.LockedError
			if !errors.As(err, &le) || le.Name != b {
				t.Fatalf("overlapping set: %v; want a *LockedError for %q", err, b)
			}
			assertFree(t, c2, x)
			if s.Err() != nil {
				t.Fatal(s.Err())
			}
			if err := s.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if !errors.Is(s.Err(), distlock.ErrReleased) || s.Release(ctx) != distlock.ErrReleased {
				t.Fatalf("after Release: Err %v", s.Err())
			}
			select {
			case <-s.Done():
			default:
				t.Fatal("Done open after Release")
			}
			assertFree(t, c1, a, b)

			// Tokens: every grant of a name, single or in a set, above the last.
			last := map[string]uint64{}
			check := func(name string, tok uint64) {
				if tok <= last[name] {
					t.Fatalf("token of %q went from %d to %d", name, last[name], tok)
				}
				last[name] = tok
			}
			for i := range 6 {
				set := []string{a, b, x}[:2+i%2]
				s, err := c1.AcquireAll(ctx, set)
				if err != nil {
					t.Fatal(err)
				}
				for _, n := range set {
					check(n, s.Token(n))
				}
				_ = s.Release(ctx)
				l, err := c2.Acquire(ctx, a)
				if err != nil {
					t.Fatal(err)
				}
				check(a, l.Token())
				_ = l.Release(ctx)
			}
		})
	}
}

// TestAcquireAllLoss: a member taken away ends the set: Done, Context and
// Err, naming the member.
func TestAcquireAllLoss(t *testing.T) {
	for _, se := range setEngines(t)[:2] {
		t.Run(se.name, func(t *testing.T) {
			ctx := testCtx(t, 20*time.Second)
			c := distlock.New(se.eng)
			defer c.Close()
			p := se.name + "/loss/"
			s, err := c.AcquireAll(ctx, []string{p + "a", p + "b", p + "c"}, distlock.WithTTL(300*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Release(ctx)
			if _, err := c.ForceRelease(ctx, p+"b"); err != nil {
				t.Fatal(err)
			}
			select {
			case <-s.Context().Done():
			case <-ctx.Done():
				t.Fatal("the set was not lost")
			}
			var lost *distlock.LostError
			if !errors.As(s.Err(), &lost) || lost.Name != p+"b" || !errors.Is(context.Cause(s.Context()), distlock.ErrLeaseLost) {
				t.Fatalf("Err %v; want a *LostError naming %q", s.Err(), p+"b")
			}
		})
	}
}

// TestAcquireAllGivesUpClean: a set that times out waiting, or fails on a
// name in the middle, holds nothing and queues nowhere afterwards.
func TestAcquireAllGivesUpClean(t *testing.T) {
	for _, se := range setEngines(t) {
		t.Run(se.name, func(t *testing.T) {
			ctx := testCtx(t, 20*time.Second)
			holder, c := distlock.New(se.eng), distlock.New(se.eng)
			defer holder.Close()
			defer c.Close()
			p := se.name + "/clean/"
			names := []string{p + "a", p + "b", p + "c", p + "d"}
			l, err := holder.Acquire(ctx, p+"c")
			if err != nil {
				t.Fatal(err)
			}
			wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			_, err = c.AcquireAll(wctx, names)
			cancel()
			var we *distlock.WaitError
			if !errors.As(err, &we) || we.Name != p+"c" || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("AcquireAll: %v; want a *WaitError on %q", err, p+"c")
			}
			assertFree(t, c, p+"a", p+"b", p+"d")
			if info, _ := c.Inspect(ctx, p+"c"); info.Owner != l.Owner() || info.Waiters != 0 {
				t.Fatalf("%q: %+v", p+"c", info)
			}
			_ = l.Release(ctx)

			// A failure on the third name, after the first two were taken.
			base := se.eng
			if pe, ok := base.(plainEngine); ok {
				base = pe.Engine
			}
			f := distlock.New(failingEngine{base, p + "c"}, distlock.WithBackendFailureBudget(200*time.Millisecond))
			defer f.Close()
			for _, try := range []bool{false, true} {
				if try {
					_, err = f.TryAcquireAll(ctx, names)
				} else {
					_, err = f.AcquireAll(ctx, names)
				}
				if !errors.Is(err, distlock.ErrBackend) || !errors.Is(err, errInjected) {
					t.Fatalf("try %v: %v; want the injected backend error", try, err)
				}
				assertFree(t, c, names...)
			}
		})
	}
}

// TestAcquireAllFenceExhaustedMidScript: on Redis, a name whose fence is
// exhausted after others were granted in the same script undoes them.
func TestAcquireAllFenceExhaustedMidScript(t *testing.T) {
	srv := redistest.Start(t)
	r, err := redisengine.New(srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := testCtx(t, 10*time.Second)
	if err := srv.Client().Set(ctx, "distlock:{c}:fence", engine.MaxToken, 0).Err(); err != nil {
		t.Fatal(err)
	}
	c := distlock.New(r)
	defer c.Close()
	_, err = c.TryAcquireAll(ctx, []string{"a", "b", "c"})
	if !errors.Is(err, engine.ErrFenceExhausted) {
		t.Fatalf("TryAcquireAll: %v; want ErrFenceExhausted", err)
	}
	assertFree(t, c, "a", "b", "c")
}

// TestAcquireAllRenewsInOneBatch: the members of a set are renewed in the
// same Extend calls. On the fake clock (testing/synctest), so the leases'
// short ttl survives a busy machine: the Client's renewals fall due when
// the clock says, however late the process runs. Granted one by one, the
// members are granted at different times (each grant takes step of fake
// time), and still renewed together; a Client that renewed each lease on
// its own schedule would send partial Extend calls and fail the test (seen
// failing with schedule.earliest returning the member's own schedule).
func TestAcquireAllRenewsInOneBatch(t *testing.T) {
	for _, ordered := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			ce := &countingEngine{Engine: memory.New()}
			var eng engine.Engine = ce
			if ordered {
				ce.step = 15 * time.Millisecond
				eng = plainEngine{ce}
			}
			c := distlock.New(eng)
			defer c.Close()
			ctx := testCtx(t, 10*time.Second)
			names := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
			if ordered { // granted one by one, at different times
				for _, n := range names {
					l, err := c.Acquire(ctx, "warm-"+n)
					if err != nil {
						t.Fatal(err)
					}
					_ = l.Release(ctx)
				}
			}
			// Granted one by one, the members' grants spread over 8 steps
			// (120ms), more than the early-renewal window (ttl/6, 100ms):
			// only the set's shared schedule renews them together.
			s, err := c.AcquireAll(ctx, names, distlock.WithTTL(600*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			for ce.calls.Load() < 3 && ctx.Err() == nil {
				time.Sleep(5 * time.Millisecond) // the fake clock: until three renewals
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			if err := s.Release(ctx); err != nil {
				t.Fatal(err)
			}
			c.Close()
			if n := ce.partial.Load(); n != 0 {
				t.Errorf("ordered %v: %d of %d Extend calls renewed part of the set", ordered, n, ce.calls.Load())
			}
			if !ordered && (ce.batches.Load() != 1 || ce.singles.Load() != 0) {
				t.Errorf("Release: %d batches and %d single releases; want one batch", ce.batches.Load(), ce.singles.Load())
			}
			assertFree(t, distlock.New(ce.Engine), names...)
		})
	}
}

// countingEngine counts Extend calls, and those that renewed only part of
// the set of one-letter names.
type countingEngine struct {
	engine.Engine
	calls, partial   atomic.Int64
	batches, singles atomic.Int64  // ReleaseMulti and Release calls
	step             time.Duration // the time each Acquire takes
}

func (c *countingEngine) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	time.Sleep(c.step)
	return c.Engine.Acquire(ctx, r)
}

func (c *countingEngine) ReleaseMulti(ctx context.Context, rs []engine.ReleaseRequest) ([]engine.ReleaseResult, error) {
	c.batches.Add(1)
	return c.Engine.(engine.MultiReleaser).ReleaseMulti(ctx, rs)
}

func (c *countingEngine) Release(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	c.singles.Add(1)
	return c.Engine.Release(ctx, r)
}

func (c *countingEngine) AcquireMulti(ctx context.Context, rs []engine.AcquireRequest) (engine.MultiGrant, error) {
	return c.Engine.(engine.MultiAcquirer).AcquireMulti(ctx, rs)
}

func (c *countingEngine) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	n := 0
	for _, r := range rs {
		if len(r.Name) == 1 {
			n++
		}
	}
	if n > 0 {
		c.calls.Add(1)
		if n != 8 {
			c.partial.Add(1)
		}
	}
	return c.Engine.Extend(ctx, rs)
}

// TestAcquireAllNoDeadlock: Clients whose sets form cycles in opposite
// orders all finish their rounds, with mutual exclusion on every name.
func TestAcquireAllNoDeadlock(t *testing.T) {
	const clients, rounds = 6, 15
	for _, se := range setEngines(t) {
		t.Run(se.name, func(t *testing.T) {
			cs := make([]*distlock.Client, clients)
			for i := range cs {
				cs[i] = distlock.New(se.eng)
				defer cs[i].Close()
			}
			enginetest.SetCycles(t, testCtx(t, 30*time.Second), cs, se.name+"/cycle/", rounds)
		})
	}
}

// TestSequentialDeadlocks is the negative control of TestAcquireAllNoDeadlock:
// on the same sets, taking the names one by one in the caller's order
// deadlocks once every client holds its first name; every client times out.
func TestSequentialDeadlocks(t *testing.T) {
	const clients = 6
	eng := memory.New()
	ctx := testCtx(t, 10*time.Second)
	sets := enginetest.CycleSets("seq/", clients)
	var holding sync.WaitGroup
	holding.Add(clients)
	var tried sync.WaitGroup
	tried.Add(clients)
	var timedOut atomic.Int64
	var wg sync.WaitGroup
	for i := range clients {
		c := distlock.New(eng)
		defer c.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			first, err := c.Acquire(ctx, sets[i][0])
			holding.Done()
			if err != nil {
				t.Error(err)
				tried.Done()
				return
			}
			holding.Wait()
			wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			defer cancel()
			if second, err := c.Acquire(wctx, sets[i][1]); err == nil {
				_ = second.Release(ctx)
			} else if errors.Is(err, context.DeadlineExceeded) {
				timedOut.Add(1)
			}
			// Each keeps its first name until every one has tried its
			// second: a timeout does not let the next one through.
			tried.Done()
			tried.Wait()
			_ = first.Release(ctx)
		}()
	}
	wg.Wait()
	if n := timedOut.Load(); n != clients {
		t.Fatalf("%d of %d sequential clients timed out; want all (a deadlock)", n, clients)
	}
}

// TestAcquireAllNotStarved: a set waits in each name's queue, so
// single-name acquirers that keep its names busy do not starve it.
func TestAcquireAllNotStarved(t *testing.T) {
	for _, se := range setEngines(t)[:2] {
		t.Run(se.name, func(t *testing.T) {
			ctx := testCtx(t, 30*time.Second)
			p := se.name + "/starve/"
			a, b := p+"a", p+"b"
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var grants atomic.Int64
			for i := range 4 {
				c := distlock.New(se.eng)
				defer c.Close()
				name := []string{a, b}[i%2]
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						if err := c.Do(ctx, name, func(context.Context) error {
							grants.Add(1)
							time.Sleep(2 * time.Millisecond)
							return nil
						}); err != nil && ctx.Err() == nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			for grants.Load() < 20 && ctx.Err() == nil {
				time.Sleep(time.Millisecond) // polls a condition: the singles are busy
			}
			c := distlock.New(se.eng)
			defer c.Close()
			wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			err := c.DoAll(wctx, []string{a, b}, func(context.Context) error { return nil })
			close(stop)
			wg.Wait()
			if err != nil {
				t.Fatalf("the set starved: %v", err)
			}
		})
	}
}

package quorum_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/quorum"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// newQuorum composes one new Redis engine per server (as a separate process
// would have) into a quorum.
func newQuorum(t testing.TB, srvs []*redistest.Server, opts ...quorum.Option) *quorum.Engine {
	t.Helper()
	return wrappedQuorum(t, srvs, nil, opts...)
}

// testNodeTimeout is the per-node timeout of the quorums the tests make
// (newQuorum, wrappedQuorum, memQuorum) unless a test sets its own. The
// tests check semantics on a machine that may be busy, where a healthy node
// can take far longer than the default (ttl/100, 10 to 50ms) to answer: a
// healthy quorum never waits for its per-node timeout, so a long one costs
// nothing, while a short one would test the machine's speed. A test about a
// timeout sets a short one and asserts what it does (a node left out, an
// error), not how long anything took; a benchmark of the defaults passes
// WithNodeTimeout(0).
const testNodeTimeout = 10 * time.Second

// withTestTimeout puts the tests' per-node timeout before opts (which may
// set another).
func withTestTimeout(opts []quorum.Option) []quorum.Option {
	return append([]quorum.Option{quorum.WithNodeTimeout(testNodeTimeout)}, opts...)
}

// wrappedQuorum is newQuorum with node i's engine replaced by wrap(i, it)
// (wrap may be nil).
func wrappedQuorum(t testing.TB, srvs []*redistest.Server, wrap func(i int, e engine.Engine) engine.Engine, opts ...quorum.Option) *quorum.Engine {
	t.Helper()
	return nodesQuorum(t, srvs, nil, wrap, opts...)
}

// nodesQuorum is wrappedQuorum with every node's engine built with
// nodeOpts.
func nodesQuorum(t testing.TB, srvs []*redistest.Server, nodeOpts []redisengine.Option, wrap func(i int, e engine.Engine) engine.Engine, opts ...quorum.Option) *quorum.Engine {
	t.Helper()
	opts = withTestTimeout(opts)
	engines := make([]engine.Engine, len(srvs))
	for i, s := range srvs {
		e, err := redisengine.New(s.Client(), nodeOpts...)
		if err != nil {
			t.Fatal(err)
		}
		engines[i] = e
		if wrap != nil {
			engines[i] = wrap(i, e)
		}
	}
	q, err := quorum.New(engines, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	return q
}

func newClient(t testing.TB, srvs []*redistest.Server, opts ...quorum.Option) *distlock.Client {
	c := distlock.New(newQuorum(t, srvs, opts...))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func lockKey(name string) string { return redisengine.DefaultPrefix + "{" + name + "}" }

func TestConformance(t *testing.T) {
	srvs := redistest.StartN(t, 5)
	counter := redistest.Start(t) // the protected resource lives elsewhere
	h := enginetest.Harness{
		New: func(t *testing.T) engine.Engine {
			return newQuorum(t, srvs)
		},
		Delete: func(t *testing.T, name string) {
			for _, s := range srvs {
				if err := s.Del(context.Background(), lockKey(name)); err != nil {
					t.Fatal(err)
				}
			}
		},
		Register: func(t *testing.T, name string) enginetest.Register {
			return redistest.NewRegister(counter.Client(), name)
		},
		Votes:           true,
		UncheckedTokens: true,
		MajorityValues:  true,
	}
	enginetest.Run(t, h)
	enginetest.Check(t, stalledQuorums(h, srvs))
	// No semaphore above limit 1 on a quorum: no weights to miscount.
	enginetest.CheckMutants(t, h, "cross-kind grant", "tokens backwards", "writer shares", "release frees all", "inspect blind")
}

// TestConformanceOneNode: a quorum of one node (calls made inline, no
// stragglers) behaves as every engine must.
func TestConformanceOneNode(t *testing.T) {
	srvs := redistest.StartN(t, 1)
	counter := redistest.Start(t)
	enginetest.Run(t, enginetest.Harness{
		New: func(t *testing.T) engine.Engine {
			return newQuorum(t, srvs)
		},
		Delete: func(t *testing.T, name string) {
			if err := srvs[0].Del(context.Background(), lockKey(name)); err != nil {
				t.Fatal(err)
			}
		},
		Register: func(t *testing.T, name string) enginetest.Register {
			return redistest.NewRegister(counter.Client(), name)
		},
		UncheckedTokens: true,
		MajorityValues:  true,
	})
}

// TestTokensIncreaseUnderContention: 2 clients x 16 goroutines, 1,000
// grants on 5 nodes (or as many as 90 s allow; fewer than 200 skips as a
// machine too slow): never two holders at once, and tokens recorded under
// the lock strictly increase.
func TestTokensIncreaseUnderContention(t *testing.T) {
	const budget = 90 * time.Second
	srvs := redistest.StartN(t, 5)
	clients := []*distlock.Client{newClient(t, srvs), newClient(t, srvs)}
	// ctx outlives the budget by the releases' time; done ends the waits
	// still out once the total is reached or the budget runs out.
	ctx, cancel := context.WithTimeout(context.Background(), budget+30*time.Second)
	defer cancel()
	done, finish := context.WithTimeout(ctx, budget)
	defer finish()
	const total, minContended = 1000, 200
	var (
		mu      sync.Mutex
		grants  int
		last    uint64
		holders int
		late    int // leases whose deadline passed before their release
		fail    error
		wg      sync.WaitGroup
	)
	record := func(err error) {
		mu.Lock()
		if fail == nil {
			fail = err
		}
		mu.Unlock()
	}
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[g%2]
			for {
				mu.Lock()
				stop := grants >= total || fail != nil
				mu.Unlock()
				if stop {
					return
				}
				l, err := c.Acquire(done, "contended", distlock.WithTTL(2*time.Second))
				if err != nil {
					if done.Err() != nil {
						return // the total was reached, or the time budget ran out, while this one waited
					}
					record(err)
					return
				}
				mu.Lock()
				holders++
				if holders != 1 && fail == nil {
					fail = errors.New("two holders at once")
				}
				if l.Token() <= last && fail == nil {
					fail = errors.New("token " + strconv.FormatUint(l.Token(), 10) + " not above " + strconv.FormatUint(last, 10))
				}
				last = l.Token()
				grants++
				if grants >= total {
					finish()
				}
				holders--
				mu.Unlock()
				if err := l.Release(ctx); err != nil {
					// A lease whose deadline (as the Client recorded it)
					// passed before its release: a machine too slow for
					// the 2s ttl (every node and goroutine on two busy
					// cores), not a token out of order.
					if errors.Is(err, distlock.ErrNotHeld) && !time.Now().Before(l.Deadline()) {
						mu.Lock()
						late++
						mu.Unlock()
						continue
					}
					record(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if fail != nil {
		t.Fatalf("after %d grants: %v", grants, fail)
	}
	// The total is how much contention the test wants, not a speed: a
	// machine that made fewer grants in the time budget checked every one
	// it made, and is judged too slow only below minContended.
	if grants < total && grants < minContended {
		t.Skipf("machine too slow: %d grants in %v (wanted %d, at least %d to judge)", grants, budget, total, minContended)
	}
	t.Logf("%d grants (%d released after their deadline had passed)", grants, late)
}

package redis_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// serverMicros returns the server's clock in µs (TIME).
func serverMicros(t *testing.T, c goredis.UniversalClient) int64 {
	t.Helper()
	tm, err := c.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return tm.UnixMicro()
}

func semReq(name, owner string, ttl time.Duration, limit, weight int) engine.AcquireRequest {
	return engine.AcquireRequest{
		Name: name, Owner: owner, TTL: ttl, Attempt: owner, OneOff: true,
		Kind: engine.Semaphore, Limit: limit, Weight: weight,
	}
}

// outlived skips the test when the server's clock has passed deadline (µs,
// what's: whose ttl ends then): an answer that finds the holder gone is then
// right, and the machine was too slow to ask while it held. An answer given
// before the deadline is judged (the caller fails).
func outlived(t *testing.T, c goredis.UniversalClient, deadline int64, what string) {
	t.Helper()
	if now := serverMicros(t, c); now >= deadline {
		t.Skipf("machine too slow: the server's clock passed %s deadline (%d µs) by %v before the check was answered",
			what, deadline, time.Duration(now-deadline)*time.Microsecond)
	}
}

// TestSharedCrashedHolderExpires: a holder that stops renewing (crashed)
// frees exactly its own permits once its ttl has passed in the server's
// time, measured from the server's clock at its grant; the other holder
// keeps its own. With nobody touching the name afterwards, Redis expires
// the holders' keys on its own: nothing is left but the lock's kind and
// limit (with the fence ttl) and the high-water.
func TestSharedCrashedHolderExpires(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	e := listEngine(t, c)
	ctx := listCtx(t)
	name := "crashed-holder"
	keys := redisengine.SharedKeys(e, name)
	const ttl = 300 * time.Millisecond

	before := serverMicros(t, c)
	if g, err := e.Acquire(ctx, semReq(name, "dead", ttl, 3, 2)); err != nil || !g.Acquired {
		t.Fatalf("dead: %+v, %v", g, err)
	}
	after := serverMicros(t, c)
	if g, err := e.Acquire(ctx, semReq(name, "live", time.Minute, 3, 1)); err != nil || !g.Acquired {
		t.Fatalf("live: %+v, %v", g, err)
	}
	// The deadline is the server's clock at the grant plus the ttl.
	deadline, err := c.ZScore(ctx, keys[2], "dead").Result()
	if err != nil {
		t.Fatal(err)
	}
	if d := int64(deadline); d < before+ttl.Microseconds() || d > after+ttl.Microseconds() {
		t.Fatalf("deadline %d µs, want the server's clock at the grant (%d..%d) + %v", d, before, after, ttl)
	}
	g, err := e.Acquire(ctx, semReq(name, "next", time.Minute, 3, 2))
	if err != nil || g.Acquired || g.Holder != "dead" || g.HolderTTL <= 0 || g.HolderTTL > ttl {
		if g.Acquired {
			outlived(t, c, int64(deadline), "the dead holder's")
		}
		t.Fatalf("next while dead holds: %+v, %v; want refused, the dead holder's time left", g, err)
	}
	for {
		asked := serverMicros(t, c)
		g, err = e.Acquire(ctx, semReq(name, "next", time.Minute, 3, 2))
		if err != nil {
			t.Fatal(err)
		}
		now := serverMicros(t, c)
		if g.Acquired {
			if now < int64(deadline) {
				t.Fatalf("granted at %d µs, before the dead holder's deadline %d", now, int64(deadline))
			}
			break
		}
		if asked > int64(deadline) {
			t.Fatalf("refused after the dead holder's deadline (asked at %d µs, deadline %d): %+v", asked, int64(deadline), g)
		}
		time.Sleep(10 * time.Millisecond)
	}
	info, err := e.Inspect(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Holders) != 2 || info.Holders[0].Owner != "live" || info.Holders[0].Weight != 1 ||
		info.Holders[1].Owner != "next" || info.Holders[1].Weight != 2 || info.Limit != 3 || info.Kind != engine.Semaphore {
		t.Fatalf("after the dead holder's expiry: %+v", info)
	}
	if g, err := e.Acquire(ctx, semReq(name, "more", time.Minute, 3, 1)); err != nil || g.Acquired {
		t.Fatalf("a fourth permit: %+v, %v", g, err)
	}

	// A lone crashed holder, and nobody touches the name: its entries stay
	// until the next script on the name drops them, and every key of the
	// name has an expiry (nothing outlives the fence ttl).
	lone := "crashed-alone"
	keys = redisengine.SharedKeys(e, lone)
	w := semReq(lone, "waiter", time.Minute, 2, 1)
	w.Waiter, w.WaiterTTL = "w", ttl
	loneFrom := serverMicros(t, c)
	if g, err := e.Acquire(ctx, semReq(lone, "dead", ttl, 2, 2)); err != nil || !g.Acquired {
		t.Fatalf("lone: %+v, %v", g, err)
	}
	if g, err := e.Acquire(ctx, w); err != nil || !g.Queued || !g.Head {
		if g.Acquired {
			outlived(t, c, loneFrom+ttl.Microseconds(), "the lone dead holder's")
		}
		t.Fatalf("lone's waiter: %+v, %v", g, err)
	}
	for _, k := range keys[1:] {
		if pttl := c.PTTL(ctx, k).Val(); pttl <= 0 || pttl > redisengine.DefaultFenceTTL {
			t.Fatalf("%s: pttl %v", k, pttl)
		}
	}
	// The queue keys expire at the waiter's heartbeat deadline (set after
	// the holder's, so the holder's deadline has passed too by then).
	for end := time.Now().Add(ttl + 2*time.Second); ; time.Sleep(5 * time.Millisecond) {
		n := c.Exists(ctx, keys[3], keys[4], keys[5]).Val()
		if n == 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("%d queue keys left 2s after the waiter's heartbeat deadline", n)
		}
	}
	if g, err := e.Acquire(ctx, semReq(lone, "next", time.Minute, 2, 2)); err != nil || !g.Acquired {
		t.Fatalf("after the lone holder's deadline: %+v, %v", g, err)
	}
	if n := c.HLen(ctx, keys[1]).Val(); n != 5 { // k, l, u, x and one holder
		t.Fatalf("the lock's hash has %d fields, want 5: %v", n, c.HGetAll(ctx, keys[1]).Val())
	}
}

// TestSharedKeysOneSlot: on Cluster every key of a shared lock (and the
// mutex key and high-water it reads) hashes to one slot, for names with
// braces too, and every script runs there (no CROSSSLOT).
func TestSharedKeysOneSlot(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	c := cl.Client()
	e := listEngine(t, c)
	ctx := listCtx(t)
	for _, name := range []string{"slot", "a{b}c", "x}y", "{z", "ünï"} {
		keys := redisengine.SharedKeys(e, name)
		if len(keys) != 7 || keys[0] != redisengine.DefaultPrefix+"{"+name+"}" || keys[6] != keys[0]+":fence" {
			t.Fatalf("%q: keys %q", name, keys)
		}
		slot := c.ClusterKeySlot(ctx, keys[0]).Val()
		for _, k := range keys[1:] {
			if s := c.ClusterKeySlot(ctx, k).Val(); s != slot {
				t.Fatalf("%q: %s in slot %d, %s in %d", name, keys[0], slot, k, s)
			}
		}
		// Every script, with holders and a waiter, so that every key exists.
		if g, err := e.Acquire(ctx, semReq(name, "a", time.Minute, 2, 2)); err != nil || !g.Acquired {
			t.Fatalf("%q: %+v, %v", name, g, err)
		}
		r := semReq(name, "b", time.Minute, 2, 1)
		r.Waiter, r.WaiterTTL = "w", time.Minute
		if g, err := e.Acquire(ctx, r); err != nil || !g.Queued {
			t.Fatalf("%q waiter: %+v, %v", name, g, err)
		}
		if n := c.Exists(ctx, keys[1:]...).Val(); n != 6 {
			t.Fatalf("%q: %d of the 6 keys exist", name, n)
		}
		res, err := e.Extend(ctx, []engine.ExtendRequest{{Name: name, Owner: "a", TTL: time.Minute, Kind: engine.Semaphore},
			{Name: name, Owner: "w", TTL: time.Minute, Kind: engine.Semaphore, Waiter: true}})
		if err != nil || res[0].Status != engine.Extended || res[1].Status != engine.Extended {
			t.Fatalf("%q extend: %+v, %v", name, res, err)
		}
		if _, err := e.SetLimit(ctx, name, 3); err != nil {
			t.Fatal(err)
		}
		if _, err := e.RaiseFence(ctx, engine.RaiseRequest{Name: name, Owner: "a", Token: uint64(time.Now().Add(time.Hour).UnixMicro()), Kind: engine.Semaphore}); err != nil {
			t.Fatal(err)
		}
		if err := e.Leave(ctx, engine.LeaveRequest{Name: name, Waiter: "w", Kind: engine.Semaphore}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Inspect(ctx, name); err != nil {
			t.Fatal(err)
		}
		if res, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "a", Kind: engine.Semaphore}); err != nil || res.Status != engine.Released {
			t.Fatalf("%q release: %+v, %v", name, res, err)
		}
	}
}

// TestSharedExtendOneRoundTrip: shared holders and waiters are renewed in
// the same pipeline as mutex leases, and after the server lost its script
// cache too.
func TestSharedExtendOneRoundTrip(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	rt := &roundTrips{}
	c.AddHook(rt)
	e := listEngine(t, c)
	ctx := listCtx(t)
	if g, err := e.Acquire(ctx, engine.AcquireRequest{Name: "m", Owner: "o", TTL: time.Minute, Attempt: "o", OneOff: true}); err != nil || !g.Acquired {
		t.Fatal(g, err)
	}
	if g, err := e.Acquire(ctx, semReq("s", "h", time.Minute, 1, 1)); err != nil || !g.Acquired {
		t.Fatal(g, err)
	}
	w := semReq("s", "x", time.Minute, 1, 1)
	w.Waiter, w.WaiterTTL = "wx", time.Minute
	if g, err := e.Acquire(ctx, w); err != nil || !g.Queued || !g.Head {
		t.Fatal(g, err)
	}
	rs := []engine.ExtendRequest{
		{Name: "m", Owner: "o", TTL: time.Minute},
		{Name: "s", Owner: "h", TTL: 2 * time.Minute, Kind: engine.Semaphore},
		{Name: "s", Owner: "wx", TTL: time.Minute, Kind: engine.Semaphore, Waiter: true},
		{Name: "s", Owner: "nobody", TTL: time.Minute, Kind: engine.Semaphore},
		{Name: "s", Owner: "nobody", TTL: time.Minute, Kind: engine.Semaphore, Waiter: true},
	}
	// The first Extend loads the scripts (NOSCRIPT); then one pipeline, and
	// after a SCRIPT FLUSH the scripts are loaded again.
	for i, flush := range []bool{false, false, true} {
		if flush {
			if err := c.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		rt.pipelines.Store(0)
		rt.single.Store(0)
		res, err := e.Extend(ctx, rs)
		if err != nil {
			t.Fatal(err)
		}
		want := []engine.ExtendStatus{engine.Extended, engine.Extended, engine.Extended, engine.Missing, engine.Missing}
		for i := range want {
			if res[i].Status != want[i] || res[i].Err != nil {
				t.Fatalf("flush %v: %d: %+v, want %v", flush, i, res[i], want[i])
			}
		}
		if res[1].Token == 0 || res[2].Wake {
			t.Fatalf("flush %v: holder token %d, waiter woken %v (the permit is held)", flush, res[1].Token, res[2].Wake)
		}
		if n := rt.pipelines.Load(); i == 1 && (n != 1 || rt.single.Load() != 0) {
			t.Fatalf("%d pipelines and %d commands for one Extend", n, rt.single.Load())
		}
	}
	info, err := e.Inspect(ctx, "s")
	if err != nil || len(info.Holders) != 1 || info.Holders[0].TTL < time.Minute+50*time.Second {
		t.Fatalf("the holder's ttl was not renewed: %+v, %v", info, err)
	}
	// The permit freed, the waiter's heartbeat says it may try.
	if res, err := e.Release(ctx, engine.ReleaseRequest{Name: "s", Owner: "h", Kind: engine.Semaphore}); err != nil || res.Status != engine.Released {
		t.Fatal(res, err)
	}
	res, err := e.Extend(ctx, rs[2:3])
	if err != nil || res[0].Status != engine.Extended || !res[0].Wake {
		t.Fatalf("heartbeat of the head of a free lock: %+v, %v", res, err)
	}
}

// TestSharedRefusalsAsMemory: the refusals of bad input are the memory
// engine's, word for word: the Client turns them into its typed errors.
func TestSharedRefusalsAsMemory(t *testing.T) {
	srv := redistest.Start(t)
	ctx := listCtx(t)
	rw := func(name, owner string, weight int) engine.AcquireRequest {
		r := semReq(name, owner, time.Minute, engine.RWPermits, weight)
		r.Kind = engine.RWLock
		return r
	}
	type step struct {
		what string
		do   func(e engine.Engine) error
	}
	acq := func(r engine.AcquireRequest) func(engine.Engine) error {
		return func(e engine.Engine) error {
			_, err := e.Acquire(ctx, r)
			return err
		}
	}
	mutex := func(name, waiter string) func(engine.Engine) error {
		return func(e engine.Engine) error {
			r := engine.AcquireRequest{Name: name, Owner: "o", TTL: time.Minute, Attempt: "o", OneOff: true}
			if waiter != "" {
				r.Waiting, r.Waiter, r.WaiterTTL = true, waiter, time.Minute
			}
			_, err := e.Acquire(ctx, r)
			return err
		}
	}
	steps := []step{
		{"grant", acq(semReq("sem", "a", time.Minute, 3, 2))},
		{"another limit (served under the stored one)", acq(semReq("sem", "b", time.Minute, 5, 1))},
		{"a weight above the stored limit, under the declared one", acq(semReq("sem", "c", time.Minute, 5, 4))},
		{"weight 0", acq(semReq("w0", "a", time.Minute, 3, 0))},
		{"another kind", acq(rw("sem", "b", 1))},
		{"another weight", acq(func() engine.AcquireRequest { r := semReq("sem", "a", time.Minute, 3, 1); r.Attempt = "2"; return r }())},
		{"read", acq(rw("rw", "r", 1))},
		{"upgrade", acq(rw("rw", "r", engine.RWPermits))},
		{"a semaphore's limit on an rwlock", func(e engine.Engine) error {
			_, err := e.(engine.Sharer).SetLimit(ctx, "rw", 2)
			return err
		}},
		{"mutex", mutex("m", "")},
		{"a mutex of a semaphore's name", mutex("sem", "")},
		{"a mutex of a read-locked name", mutex("rw", "")},
		{"a mutex waiter of a read-locked name", mutex("rw", "w")},
		{"shared on a mutex", acq(rw("m", "r", 1))},
		{"a limit on a mutex", func(e engine.Engine) error {
			_, err := e.(engine.Sharer).SetLimit(ctx, "m", 2)
			return err
		}},
		{"weight above the stored limit", func(e engine.Engine) error {
			if _, err := e.(engine.Sharer).SetLimit(ctx, "small", 1); err != nil {
				return err
			}
			_, err := e.Acquire(ctx, semReq("small", "a", time.Minute, 1, 2))
			return err
		}},
	}
	mem := memory.New()
	defer mem.Close()
	red := listEngine(t, srv.Client())
	for _, s := range steps {
		want, got := s.do(mem), s.do(red)
		if errors.Is(want, engine.ErrUpgrade) != errors.Is(got, engine.ErrUpgrade) || (want == nil) != (got == nil) ||
			want != nil && want.Error() != got.Error() {
			t.Errorf("%s: redis %v, memory %v", s.what, got, want)
		}
		var ae *engine.ArgumentError
		if errors.As(want, &ae) && !errors.As(got, &ae) {
			t.Errorf("%s: redis %T, want an *engine.ArgumentError", s.what, got)
		}
	}
}

// TestSharedReentryAndRelease: re-entry by another attempt counts up while
// a replayed attempt does not; releases count down, then say NotHeld; the
// lock keeps its kind, limit and high-water.
func TestSharedReentryAndRelease(t *testing.T) {
	srv := redistest.Start(t)
	e := listEngine(t, srv.Client())
	ctx := listCtx(t)
	r := semReq("re", "me", time.Minute, 2, 1)
	r.OneOff = false
	for i, attempt := range []string{"1", "1", "2", "3"} {
		r.Attempt = attempt
		g, err := e.Acquire(ctx, r)
		want := []int{1, 1, 2, 3}[i]
		if err != nil || !g.Acquired || g.Count != want {
			t.Fatalf("attempt %s: %+v, %v; want %d holds", attempt, g, err, want)
		}
	}
	for want := 2; want >= 0; want-- {
		res, err := e.Release(ctx, engine.ReleaseRequest{Name: "re", Owner: "me", Kind: engine.Semaphore})
		if err != nil || res.Status != engine.Released || res.Remaining != want {
			t.Fatalf("release: %+v, %v; want %d left", res, err, want)
		}
	}
	if res, err := e.Release(ctx, engine.ReleaseRequest{Name: "re", Owner: "me", Kind: engine.Semaphore}); err != nil || res.Status != engine.NotHeld {
		t.Fatalf("release of nothing: %+v, %v", res, err)
	}
	info, err := e.Inspect(ctx, "re")
	if err != nil || info.Held || info.Limit != 2 || info.HighWater == 0 || info.Kind != engine.Semaphore {
		t.Fatalf("after the last release: %+v, %v", info, err)
	}
}

// TestSharedStress: 32 Clients of their own on one Redis Cluster take a
// semaphore (limit 5, weights 1 to 3) and a reader-writer lock (one in
// four a writer) for two seconds: never more than 5 permits held, never a
// writer with anyone else, every token new, and everyone served.
func TestSharedStress(t *testing.T) {
	if testing.Short() {
		t.Skip("stress")
	}
	cl := redistest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const clients, limit = 32, 5
	var held, peak, readers, writers, bad atomic.Int64
	var mu sync.Mutex
	tokens := map[uint64]bool{}
	newToken := func(tok uint64) {
		mu.Lock()
		defer mu.Unlock()
		if tokens[tok] {
			bad.Add(1)
			t.Errorf("token %d granted twice", tok)
		}
		tokens[tok] = true
	}
	stop := time.Now().Add(2 * time.Second)
	var wg sync.WaitGroup
	served := make([]atomic.Int64, clients)
	for i := range clients {
		c := distlock.New(listEngine(t, cl.Client()))
		t.Cleanup(func() { _ = c.Close() })
		wg.Go(func() {
			sem, rw := c.Semaphore("stress-sem", limit), c.RWMutex("stress-rw")
			for time.Now().Before(stop) || served[i].Load() == 0 { // until served once at least
				weight := 1 + i%3
				l, err := sem.Acquire(ctx, distlock.WithWeight(weight))
				if err != nil {
					t.Error(err)
					return
				}
				newToken(l.Token())
				n := held.Add(int64(weight))
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				time.Sleep(time.Millisecond)
				held.Add(-int64(weight))
				if err := l.Release(ctx); err != nil {
					t.Error(err)
				}
				if i%4 == 0 {
					l, err = rw.Lock(ctx)
				} else {
					l, err = rw.RLock(ctx)
				}
				if err != nil {
					t.Error(err)
					return
				}
				newToken(l.Token())
				if i%4 == 0 {
					if w := writers.Add(1); w != 1 || readers.Load() != 0 {
						bad.Add(1)
						t.Errorf("a writer with %d writers and %d readers", w, readers.Load())
					}
					time.Sleep(time.Millisecond)
					writers.Add(-1)
				} else {
					readers.Add(1)
					if writers.Load() != 0 {
						bad.Add(1)
						t.Error("a reader with a writer")
					}
					time.Sleep(time.Millisecond)
					readers.Add(-1)
				}
				if err := l.Release(ctx); err != nil {
					t.Error(err)
				}
				served[i].Add(1)
			}
		})
	}
	wg.Wait()
	if p := peak.Load(); p > limit {
		t.Fatalf("%d permits held at once, limit %d", p, limit)
	}
	for i := range served {
		if served[i].Load() == 0 {
			t.Errorf("client %d was never served", i)
		}
	}
	t.Logf("peak %d permits; %d grants", peak.Load(), len(tokens))
}

package redis_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/engine"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// holdHook is a go-redis hook that holds script round trips on demand and
// records the size of every pipeline.
type holdHook struct {
	mu       sync.Mutex
	single   *hold        // the next single script command waits on it
	pipeline *hold        // the next pipeline waits on it
	sizes    []int        // of every pipeline
	singles  atomic.Int64 // script commands sent alone
}

func (h *holdHook) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sizes = nil
	h.singles.Store(0)
}

// hold is one held round trip: held is closed when it waits, and it goes
// on when the test closes open.
type hold struct{ held, open chan struct{} }

func (h *holdHook) holdSingle() *hold {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.single = &hold{make(chan struct{}), make(chan struct{})}
	return h.single
}

func (h *holdHook) holdPipeline() *hold {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pipeline = &hold{make(chan struct{}), make(chan struct{})}
	return h.pipeline
}

func (h *holdHook) pipelineSizes() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int(nil), h.sizes...)
}

func (h *holdHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h *holdHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if isScriptCmd(cmd) {
			h.singles.Add(1)
			h.mu.Lock()
			g := h.single
			h.single = nil
			h.mu.Unlock()
			if g != nil {
				close(g.held)
				<-g.open
			}
		}
		return next(ctx, cmd)
	}
}

func (h *holdHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		h.mu.Lock()
		h.sizes = append(h.sizes, len(cmds))
		g := h.pipeline
		h.pipeline = nil
		h.mu.Unlock()
		if g != nil {
			close(g.held)
			<-g.open
		}
		return next(ctx, cmds)
	}
}

func isScriptCmd(cmd goredis.Cmder) bool {
	return cmd.Name() == "evalsha" || cmd.Name() == "eval"
}

// waitFor polls cond until it holds, for at most 20s (a limit for a starved
// machine, not a speed).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// pipelineEngine starts a server and returns its hooked client and an
// engine on it; the scripts are cached on the server already.
func pipelineEngine(t *testing.T, opts ...redisengine.Option) (*goredis.Client, *redisengine.Engine, *holdHook, *roundTrips) {
	t.Helper()
	srv := redistest.Start(t)
	rc := srv.Client()
	h, rt := &holdHook{}, &roundTrips{}
	rc.AddHook(h)
	rc.AddHook(rt)
	eng := listEngine(t, rc, opts...)
	ctx := listCtx(t)
	if _, err := eng.Acquire(ctx, engine.AcquireRequest{Name: "warm-up", Owner: "w", TTL: time.Second, Attempt: "w"}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Release(ctx, engine.ReleaseRequest{Name: "warm-up", Owner: "w"}); err != nil {
		t.Fatal(err)
	}
	return rc, eng, h, rt
}

// blockSlot takes the engine's only slot (WithMaxInflight(1)) with an
// acquire of "blocker" held in the hook; the returned function lets it go
// and waits for its reply.
func blockSlot(t *testing.T, eng *redisengine.Engine, h *holdHook) (release func()) {
	t.Helper()
	g := h.holdSingle()
	done := make(chan error, 1)
	go func() {
		_, err := eng.Acquire(context.Background(), engine.AcquireRequest{Name: "blocker", Owner: "b", TTL: time.Minute, Attempt: "b"})
		done <- err
	}()
	<-g.held
	return func() {
		close(g.open)
		if err := <-done; err != nil {
			t.Errorf("blocker: %v", err)
		}
	}
}

// TestPipelineRepliesToTheirCallers: commands queued behind a busy slot go
// in one pipeline, and every caller gets its own reply: a WRONGTYPE reply
// fails only its caller, grants carry their own lock's token, two owners
// of one name get one grant and one "held by the other", and releases in
// the same pipeline answer Released, NotHeld and NotOwner to the right
// callers.
func TestPipelineRepliesToTheirCallers(t *testing.T) {
	rc, eng, h, _ := pipelineEngine(t, redisengine.WithMaxInflight(1))
	ctx := listCtx(t)
	if err := rc.RPush(ctx, "distlock:{bad}", "not a lock").Err(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"held", "kept"} {
		if g, err := eng.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "h", TTL: time.Minute, Attempt: "h"}); err != nil || !g.Acquired {
			t.Fatal(g, err)
		}
	}

	type op struct {
		name string
		run  func() error
	}
	grants := make([]engine.Grant, 5)
	var shared sync.Map // owner -> Grant
	acquireShared := func(owner string) error {
		g, err := eng.Acquire(ctx, engine.AcquireRequest{Name: "shared", Owner: owner, TTL: time.Minute, Attempt: owner})
		shared.Store(owner, g)
		return err
	}
	release := func(name, owner string, want engine.ReleaseStatus) error {
		r, err := eng.Release(ctx, engine.ReleaseRequest{Name: name, Owner: owner})
		if err == nil && r.Status != want {
			err = fmt.Errorf("release %s by %s: %+v, want status %v", name, owner, r, want)
		}
		return err
	}
	ops := []op{
		{"bad", func() error {
			_, err := eng.Acquire(ctx, engine.AcquireRequest{Name: "bad", Owner: "x", TTL: time.Minute, Attempt: "x"})
			if err == nil || !goredis.HasErrorPrefix(err, "WRONGTYPE") {
				return fmt.Errorf("acquire of a list: %v, want WRONGTYPE", err)
			}
			return nil
		}},
		{"shared by s-0", func() error { return acquireShared("s-0") }},
		{"shared by s-1", func() error { return acquireShared("s-1") }},
		{"release kept by intruder", func() error { return release("kept", "intruder", engine.NotOwner) }},
		{"release free", func() error { return release("free", "f", engine.NotHeld) }},
		{"release held", func() error { return release("held", "h", engine.Released) }},
	}
	for i := range grants {
		name := fmt.Sprintf("good-%d", i)
		ops = append(ops, op{name, func() error {
			g, err := eng.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "o-" + name, TTL: time.Minute, Attempt: "o-" + name})
			grants[i] = g
			if err == nil && (!g.Acquired || g.Count != 1) {
				err = fmt.Errorf("acquire %s: %+v", name, g)
			}
			return err
		}})
	}

	let := blockSlot(t, eng, h)
	errs := make([]error, len(ops))
	var wg sync.WaitGroup
	for i, o := range ops {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = o.run() }()
	}
	waitFor(t, "every command queued", func() bool { return redisengine.Queued(eng) == len(ops) })
	let()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("%s: %v", ops[i].name, err)
		}
	}
	if sizes := h.pipelineSizes(); len(sizes) == 0 || sizes[len(sizes)-1] != len(ops) {
		t.Fatalf("pipelines %v, want the last of %d commands", sizes, len(ops))
	}

	for i, g := range grants {
		name := fmt.Sprintf("good-%d", i)
		info, err := eng.Inspect(ctx, name)
		if err != nil || info.Owner != "o-"+name || info.Token != g.Token {
			t.Errorf("%s: holder %q token %d (%v), its caller got token %d", name, info.Owner, info.Token, err, g.Token)
		}
	}
	g0, _ := shared.Load("s-0")
	g1, _ := shared.Load("s-1")
	a, b := g0.(engine.Grant), g1.(engine.Grant)
	if a.Acquired == b.Acquired {
		t.Fatalf("two owners of one name: %+v and %+v, want exactly one grant", a, b)
	}
	winner, loser := "s-0", b
	if b.Acquired {
		winner, loser = "s-1", a
	}
	if loser.Holder != winner || loser.HolderTTL <= 0 {
		t.Fatalf("refused caller sees holder %q ttl %v, want %q", loser.Holder, loser.HolderTTL, winner)
	}
}

// TestPipelineCancelledCaller: a queued caller whose context ends returns
// its context's error at once, whether its command is still queued (then
// it is never sent) or already in a pipeline in flight; the other callers
// of its batch get their replies.
func TestPipelineCancelledCaller(t *testing.T) {
	acquire := func(eng *redisengine.Engine, ctx context.Context, name string) error {
		g, err := eng.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "o", TTL: time.Minute, Attempt: "o"})
		if err == nil && !g.Acquired {
			err = fmt.Errorf("%s not acquired: %+v", name, g)
		}
		return err
	}
	others := func(eng *redisengine.Engine, wg *sync.WaitGroup, errs []error) {
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = acquire(eng, context.Background(), fmt.Sprintf("other-%d", i))
			}()
		}
	}

	t.Run("queued", func(t *testing.T) {
		_, eng, h, _ := pipelineEngine(t, redisengine.WithMaxInflight(1))
		let := blockSlot(t, eng, h)
		ctx, cancel := context.WithCancel(context.Background())
		gone := make(chan error, 1)
		go func() { gone <- acquire(eng, ctx, "cancelled") }()
		waitFor(t, "the first command queued", func() bool { return redisengine.Queued(eng) == 1 })
		var wg sync.WaitGroup
		errs := make([]error, 3)
		others(eng, &wg, errs)
		waitFor(t, "every command queued", func() bool { return redisengine.Queued(eng) == 4 })
		cancel()
		if err := <-gone; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled caller: %v, want context.Canceled", err)
		}
		if n := redisengine.Queued(eng); n != 3 {
			t.Fatalf("%d queued after the cancel, want 3", n)
		}
		let()
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		if sizes := h.pipelineSizes(); sizes[len(sizes)-1] != 3 {
			t.Fatalf("pipelines %v: the cancelled command was sent", sizes)
		}
		if info, err := eng.Inspect(context.Background(), "cancelled"); err != nil || info.Held {
			t.Fatalf("the cancelled command was applied: %+v %v", info, err)
		}
	})

	t.Run("in flight", func(t *testing.T) {
		_, eng, h, _ := pipelineEngine(t, redisengine.WithMaxInflight(1))
		let := blockSlot(t, eng, h)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		gone := make(chan error, 1)
		go func() { gone <- acquire(eng, ctx, "late") }()
		waitFor(t, "the first command queued", func() bool { return redisengine.Queued(eng) == 1 })
		var wg sync.WaitGroup
		errs := make([]error, 3)
		others(eng, &wg, errs)
		waitFor(t, "every command queued", func() bool { return redisengine.Queued(eng) == 4 })
		p := h.holdPipeline()
		go let()
		<-p.held // the batch of four is on its way, held before it is written
		cancel() // the first caller's context ends while its batch is held
		select {
		case err := <-gone:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("caller whose context ended: %v, want context.Canceled", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a caller whose context ended still waits for its batch")
		}
		close(p.open)
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
	})
}

// TestPipelineConcurrentAcquireRelease: 64 goroutines acquire and release
// their own name and contend for 4 shared ones. Every reply is right (own
// names granted once and released; never two holders of a shared name) and
// the commands take far fewer round trips than there are commands.
func TestPipelineConcurrentAcquireRelease(t *testing.T) {
	_, eng, h, _ := pipelineEngine(t)
	ctx := listCtx(t)
	const workers, rounds, sharedNames = 64, 40, 4
	var inside [sharedNames]atomic.Int32
	var calls, sharedGrants atomic.Int64
	h.reset()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("w-%d", w)
			own := "own-" + owner
			for i := range rounds {
				calls.Add(2)
				g, err := eng.Acquire(ctx, engine.AcquireRequest{Name: own, Owner: owner, TTL: time.Minute, Attempt: owner})
				if err != nil || !g.Acquired || g.Count != 1 || g.Token == 0 {
					errs <- fmt.Errorf("%s: acquire %s: %+v %v", owner, own, g, err)
					return
				}
				if r, err := eng.Release(ctx, engine.ReleaseRequest{Name: own, Owner: owner}); err != nil || r.Status != engine.Released || r.Remaining != 0 {
					errs <- fmt.Errorf("%s: release %s: %+v %v", owner, own, r, err)
					return
				}
				k := (w + i) % sharedNames
				name := fmt.Sprintf("shared-%d", k)
				calls.Add(1)
				g, err = eng.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: owner, TTL: time.Minute, Attempt: owner})
				if err != nil {
					errs <- err
					return
				}
				if !g.Acquired {
					if g.Holder == "" || g.Holder == owner {
						errs <- fmt.Errorf("%s: refused %s with holder %q", owner, name, g.Holder)
						return
					}
					continue
				}
				sharedGrants.Add(1)
				if n := inside[k].Add(1); n != 1 {
					errs <- fmt.Errorf("%s: %d holders of %s", owner, n, name)
					return
				}
				inside[k].Add(-1)
				calls.Add(1)
				if r, err := eng.Release(ctx, engine.ReleaseRequest{Name: name, Owner: owner}); err != nil || r.Status != engine.Released || r.Remaining != 0 {
					errs <- fmt.Errorf("%s: release %s: %+v %v", owner, name, r, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	n, single := calls.Load(), h.singles.Load()
	sizes := h.pipelineSizes()
	pipes, piped := int64(len(sizes)), int64(0)
	for _, s := range sizes {
		piped += int64(s)
	}
	t.Logf("%d calls (%d shared grants): %d single commands + %d pipelines of %d commands", n, sharedGrants.Load(), single, pipes, piped)
	if single+piped != n {
		t.Fatalf("%d commands sent for %d calls", single+piped, n)
	}
	if trips := single + pipes; trips*3 > n {
		t.Fatalf("%d round trips for %d calls: not batched", trips, n)
	}
	for k := range sharedNames {
		if info, err := eng.Inspect(ctx, fmt.Sprintf("shared-%d", k)); err != nil || info.Held {
			t.Fatalf("shared-%d still held: %+v %v", k, info, err)
		}
	}
}

// appliedHook records every script command that got a reply other than
// NOSCRIPT (applied, whatever it answered), by its keys and arguments, and
// counts the NOSCRIPT replies inside pipelines.
type appliedHook struct {
	mu           sync.Mutex
	applied      map[string]int
	twice        []string
	pipeNoScript atomic.Int64
}

// record notes cmd, whose reply was err (a single command's error is set on
// it only after the hooks).
func (a *appliedHook) record(cmd goredis.Cmder, err error) {
	if !isScriptCmd(cmd) || err != nil && goredis.HasErrorPrefix(err, "NOSCRIPT") {
		return
	}
	args := cmd.Args()
	key := fmt.Sprint(args[2:]...) // keys and arguments, without the script
	a.mu.Lock()
	defer a.mu.Unlock()
	a.applied[key]++
	if a.applied[key] == 2 {
		a.twice = append(a.twice, key)
	}
}

func (a *appliedHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (a *appliedHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		err := next(ctx, cmd)
		a.record(cmd, err)
		return err
	}
}

func (a *appliedHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			if isScriptCmd(c) && goredis.HasErrorPrefix(c.Err(), "NOSCRIPT") {
				a.pipeNoScript.Add(1)
			}
			a.record(c, c.Err())
		}
		return err
	}
}

// TestPipelineScriptFlush: SCRIPT FLUSH during concurrent re-entrant
// acquires and releases (every call with its own attempt or release id).
// No error surfaces, every hold is counted once, and no command is applied
// twice: a pipeline that mixes acquire and release scripts re-sends only
// its commands that failed with NOSCRIPT.
func TestPipelineScriptFlush(t *testing.T) {
	srv := redistest.Start(t)
	rc := srv.Client()
	ah := &appliedHook{applied: make(map[string]int)}
	rc.AddHook(ah)
	eng := listEngine(t, rc, redisengine.WithMaxInflight(2))
	admin := srv.Client()
	ctx := listCtx(t)
	ops, flushes := flushUnderLoad(t, eng, func() error { return admin.ScriptFlush(ctx).Err() },
		func(flushes int) bool { return ah.pipeNoScript.Load() >= 20 && flushes >= 20 })
	ah.check(t, ops, flushes)
}

// TestPipelineScriptFlushCluster: the same on a three-master Cluster, with
// SCRIPT FLUSH on every master: a pipeline is split by node there, and the
// scripts are loaded again on every master. Every hold is counted once.
func TestPipelineScriptFlushCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	cc := cl.Client()
	ah := &appliedHook{applied: make(map[string]int)}
	cc.AddHook(ah)
	eng := listEngine(t, cc, redisengine.WithMaxInflight(2))
	ctx := listCtx(t)
	ops, flushes := flushUnderLoad(t, eng, func() error {
		for _, n := range cl.Nodes {
			if err := n.Client().ScriptFlush(ctx).Err(); err != nil {
				return err
			}
		}
		return nil
	}, func(flushes int) bool { return ah.pipeNoScript.Load() >= 20 && flushes >= 20 })
	ah.check(t, ops, flushes)
}

// check reports what a flushUnderLoad run did and fails the test when no
// pipeline met a flushed cache (the run proved nothing) or a command was
// applied twice.
func (ah *appliedHook) check(t *testing.T, ops int64, flushes int) {
	t.Helper()
	t.Logf("%d calls, %d SCRIPT FLUSH rounds, %d NOSCRIPT replies in pipelines", ops, flushes, ah.pipeNoScript.Load())
	if ah.pipeNoScript.Load() == 0 {
		t.Fatal("no pipeline met a flushed script cache: the test proves nothing")
	}
	ah.mu.Lock()
	defer ah.mu.Unlock()
	if len(ah.twice) > 0 {
		t.Fatalf("%d commands applied twice, e.g. %s", len(ah.twice), ah.twice[0])
	}
}

// flushUnderLoad runs 32 workers that each take a re-entrant lock twice and
// release it twice, every call with its own attempt or release id, while
// flush empties the script cache every 5 ms, until enough says so (or 10
// s). A hold counted twice or lost, or any error, fails the test.
func flushUnderLoad(t *testing.T, eng *redisengine.Engine, flush func() error, enough func(flushes int) bool) (ops int64, flushes int) {
	t.Helper()
	ctx := listCtx(t)
	const workers = 32
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	var done atomic.Int64
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("w-%d", w)
			name := "reentrant-" + owner
			for i := 0; !stop.Load(); i++ {
				for hold := 1; hold <= 2; hold++ {
					g, err := eng.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: owner, TTL: time.Minute,
						Attempt: fmt.Sprintf("%s/%d/%d", owner, i, hold)})
					if err != nil || !g.Acquired || g.Count != hold {
						errs <- fmt.Errorf("%s: hold %d: %+v %v", owner, hold, g, err)
						return
					}
				}
				for left := 1; left >= 0; left-- {
					r, err := eng.ReleaseOnce(ctx, engine.ReleaseRequest{Name: name, Owner: owner}, fmt.Sprintf("%s/%d/%d", owner, i, left))
					if err != nil || r.Status != engine.Released || r.Remaining != left {
						errs <- fmt.Errorf("%s: release to %d: %+v %v", owner, left, r, err)
						return
					}
				}
				done.Add(4)
			}
		}()
	}
	for end := time.Now().Add(10 * time.Second); ; flushes++ {
		time.Sleep(5 * time.Millisecond)
		if err := flush(); err != nil {
			t.Fatal(err)
		}
		if enough(flushes) || time.Now().After(end) || len(errs) > 0 {
			break
		}
	}
	time.Sleep(10 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	return done.Load(), flushes
}

// TestPipelineLoneCaller: one goroutine at a time never waits for or makes a
// pipeline: each call is one plain EVALSHA, with no more allocations than
// with batching off.
func TestPipelineLoneCaller(t *testing.T) {
	_, eng, _, rt := pipelineEngine(t)
	_, direct, _, _ := pipelineEngine(t, redisengine.WithMaxInflight(0))
	ctx := listCtx(t)
	op := func(e *redisengine.Engine) func() {
		return func() {
			if _, err := e.Acquire(ctx, engine.AcquireRequest{Name: "lone", Owner: "o", TTL: time.Minute, Attempt: "o"}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Release(ctx, engine.ReleaseRequest{Name: "lone", Owner: "o"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	rt.single.Store(0)
	rt.pipelines.Store(0)
	batched := testing.AllocsPerRun(200, op(eng))
	plain := testing.AllocsPerRun(200, op(direct))
	if s, p := rt.single.Load(), rt.pipelines.Load(); p != 0 || s != 2*201 {
		t.Fatalf("%d single commands and %d pipelines for 201 acquire+release", s, p)
	}
	t.Logf("allocations per acquire+release: %.1f batched, %.1f direct", batched, plain)
	if batched > plain+0.5 {
		t.Fatalf("a lone caller allocates %.1f with batching, %.1f without", batched, plain)
	}
}

// TestPipelineClose: Close fails the calls still queued with
// engine.ErrClosed, and waits for a pipeline in flight.
func TestPipelineClose(t *testing.T) {
	t.Run("queued", func(t *testing.T) {
		_, eng, h, _ := pipelineEngine(t, redisengine.WithMaxInflight(1))
		let := blockSlot(t, eng, h)
		errs := make(chan error, 3)
		for i := range 3 {
			go func() {
				_, err := eng.Acquire(context.Background(), engine.AcquireRequest{Name: fmt.Sprint("q-", i), Owner: "o", TTL: time.Minute, Attempt: "o"})
				errs <- err
			}()
		}
		waitFor(t, "every command queued", func() bool { return redisengine.Queued(eng) == 3 })
		if err := eng.Close(); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if err := <-errs; !errors.Is(err, engine.ErrClosed) {
				t.Fatalf("queued call at Close: %v, want engine.ErrClosed", err)
			}
		}
		let()
	})

	t.Run("in flight", func(t *testing.T) {
		_, eng, h, _ := pipelineEngine(t, redisengine.WithMaxInflight(1))
		let := blockSlot(t, eng, h)
		errs := make(chan error, 3)
		for i := range 3 {
			go func() {
				_, err := eng.Acquire(context.Background(), engine.AcquireRequest{Name: fmt.Sprint("f-", i), Owner: "o", TTL: time.Minute, Attempt: "o"})
				errs <- err
			}()
		}
		waitFor(t, "every command queued", func() bool { return redisengine.Queued(eng) == 3 })
		p := h.holdPipeline()
		let()
		<-p.held
		closed := make(chan struct{})
		go func() { _ = eng.Close(); close(closed) }()
		select {
		case <-closed:
			t.Fatal("Close returned while a pipeline was in flight")
		case <-time.After(100 * time.Millisecond):
		}
		close(p.open)
		<-closed
		for range 3 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	})
}

package redis_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/fence"
	"github.com/distlock/distlock/internal/fipstest"
	"github.com/distlock/distlock/internal/redistest"
)

// TestFIPSOnly: under GODEBUG=fips140=only, where crypto/sha1 panics, a
// program that imports the engine starts (no SHA-1 at package init: the
// scripts' digests come from the server) and locks on a real Redis,
// standalone and Cluster: acquire, extend, a fenced write (package fence),
// release, a waiter woken by a release, a semaphore, and the same again
// after SCRIPT FLUSH. It runs in a copy of the test binary (fipstest.Run).
func TestFIPSOnly(t *testing.T) { fipstest.Run(t, fipsChild) }

// fipsChild is TestFIPSOnly in the copy run under GODEBUG=fips140=only.
func fipsChild(t *testing.T) {
	t.Run("standalone", func(t *testing.T) {
		srv := redistest.Start(t)
		rc := srv.Client()
		fipsLocks(t, rc, func(ctx context.Context) error { return rc.ScriptFlush(ctx).Err() })
	})
	t.Run("cluster", func(t *testing.T) {
		cl := redistest.StartCluster(t, 3)
		cc := cl.Client()
		fipsLocks(t, cc, func(ctx context.Context) error { return cc.ScriptFlush(ctx).Err() })
	})
}

// fipsLocks locks on rc through a Client: once with the script caches as
// they are, once more after flush empties them.
func fipsLocks(t *testing.T, rc goredis.UniversalClient, flush func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, b := distlock.New(listEngine(t, rc)), distlock.New(listEngine(t, rc))
	defer a.Close()
	defer b.Close()
	for round := range 2 {
		if round == 1 {
			if err := flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
		l, err := a.Acquire(ctx, "fips", distlock.WithTTL(30*time.Second))
		if err != nil {
			t.Fatalf("round %d: acquire: %v", round, err)
		}
		if err := l.Extend(ctx, time.Minute); err != nil {
			t.Fatalf("round %d: extend: %v", round, err)
		}
		// The fenced write (package fence) runs its script the same way.
		if err := fence.NewRedis(rc).Set(ctx, "fips-data", "v", l.Token(), "a"); err != nil {
			t.Fatalf("round %d: fenced write: %v", round, err)
		}
		// b waits in the queue (its heartbeat is a pipelined script) and is
		// woken by a's release.
		got := make(chan error, 1)
		go func() {
			wl, err := b.Acquire(ctx, "fips", distlock.WithTTL(30*time.Second), distlock.WithFair())
			if err == nil {
				err = wl.Release(ctx)
			}
			got <- err
		}()
		waitQueued(t, ctx, a, "fips")
		if err := l.Release(ctx); err != nil {
			t.Fatalf("round %d: release: %v", round, err)
		}
		if err := <-got; err != nil {
			t.Fatalf("round %d: waiter: %v", round, err)
		}
		s := a.Semaphore("fips-sem", 2)
		var leases []*distlock.Lease
		for range 2 {
			sl, err := s.TryAcquire(ctx)
			if err != nil {
				t.Fatalf("round %d: semaphore: %v", round, err)
			}
			leases = append(leases, sl)
		}
		var locked *distlock.LockedError
		if _, err := s.TryAcquire(ctx); !errors.As(err, &locked) {
			t.Fatalf("round %d: a third permit of two: %v", round, err)
		}
		for _, sl := range leases {
			if err := sl.Release(ctx); err != nil {
				t.Fatalf("round %d: semaphore release: %v", round, err)
			}
		}
	}
}

// waitQueued waits until name has a waiter.
func waitQueued(t *testing.T, ctx context.Context, c *distlock.Client, name string) {
	t.Helper()
	for {
		info, err := c.Inspect(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if info.Waiters > 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no waiter on %s: %v", name, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
}

// everyCmd is a go-redis hook that calls itself with every command sent,
// alone or in a pipeline, before it is sent.
type everyCmd func(goredis.Cmder)

func (f everyCmd) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (f everyCmd) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		f(cmd)
		return next(ctx, cmd)
	}
}

func (f everyCmd) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		for _, c := range cmds {
			f(c)
		}
		return next(ctx, cmds)
	}
}

// TestScriptDigestFromServer: the digest the engine sends with EVALSHA is
// one the server has (SCRIPT EXISTS), and once it is known an uncontended
// acquire and release are one EVALSHA each: no SCRIPT LOAD, no EVAL.
func TestScriptDigestFromServer(t *testing.T) {
	srv := redistest.Start(t)
	rc := srv.Client()
	var mu sync.Mutex
	var names, digests []string // the script commands sent (SCRIPT LOAD as "script load"), the EVALSHAs' digests
	rc.AddHook(everyCmd(func(c goredis.Cmder) {
		mu.Lock()
		defer mu.Unlock()
		switch c.Name() {
		case "script":
			names = append(names, "script "+strings.ToLower(fmt.Sprint(c.Args()[1])))
		case "evalsha":
			digests = append(digests, fmt.Sprint(c.Args()[1]))
			fallthrough
		case "eval":
			names = append(names, c.Name())
		}
	}))
	sent := func() string {
		mu.Lock()
		defer mu.Unlock()
		n := strings.Join(names, " ")
		names = nil
		return n
	}
	e := listEngine(t, rc)
	ctx := listCtx(t)
	for i := range 3 {
		sent()
		r := engine.AcquireRequest{Name: "digest", Owner: "o", TTL: time.Minute, Attempt: "o", OneOff: true}
		if _, err := e.Acquire(ctx, r); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Release(ctx, engine.ReleaseRequest{Name: "digest", Owner: "o"}); err != nil {
			t.Fatal(err)
		}
		if got := sent(); i > 0 && got != "evalsha evalsha" {
			t.Fatalf("acquire and release %d, the digests known: sent %q, want one EVALSHA each", i, got)
		}
	}
	mu.Lock()
	ds := append([]string(nil), digests...)
	mu.Unlock()
	ok, err := rc.ScriptExists(ctx, ds...).Result()
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range ds {
		if !ok[i] {
			t.Fatalf("EVALSHA %s: the server has no script with that digest", d)
		}
	}
}

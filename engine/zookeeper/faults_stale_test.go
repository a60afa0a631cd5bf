package zookeeper_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/zookeeper/zktest"
)

// staleRounds is the number of hand-offs staleRefusal makes, and
// backlogWrites the writes committed before each release while the
// follower is paused (applied by it, once resumed, before the release).
const (
	staleRounds   = 10
	backlogWrites = 200
)

// staleRefusal: a TryAcquire through a follower that is behind the leader
// is not refused a lock released a moment before through the leader. A
// client's session is on one follower only (through a proxy that counts
// the bytes it sends); each round the leader's client takes the lock, the
// follower's TryAcquire is refused (the lock is really held: the refusal
// path still refuses), the follower is paused (SIGSTOP), the lock is
// released (committed by the leader and the other follower) after a
// backlog of writes the follower will apply first, the follower's TryAcquire is sent (it waits in the paused member's socket)
// and the follower resumes: its first read races the leader's commit it
// has not applied yet. The try must be granted: a refusal is answered only
// after a sync. The pause is far below syncLimit (5 s): the follower stays
// in the quorum.
func staleRefusal(t *testing.T, ens *zktest.Ensemble) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	waitServing(t, ens, 2*time.Minute) // the fault before is over
	leader := leaderOf(t, ens)
	var follower *zktest.Member
	for _, m := range ens.Members {
		if m != leader {
			follower = m
			break
		}
	}
	t.Cleanup(follower.Cont) // resumed even when the test stops early
	p := startProxy(t, follower.Addr)
	reader := distlock.New(dial(t, []string{p.Addr()}))
	t.Cleanup(func() { _ = reader.Close() })
	holder := distlock.New(dial(t, []string{leader.Addr}))
	t.Cleanup(func() { _ = holder.Close() })
	raw, _, err := zk.Connect([]string{leader.Addr}, testSession, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = raw.Delete(backlogPath, -1)
		raw.Close()
	})
	if _, err := raw.Create(backlogPath, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	ttl := distlock.WithTTL(30 * time.Second) // a slow round is not a lost grant
	// Each kind of call that does not wait, on a name of its own: a
	// mutex's TryAcquire and a semaphore's (limit 1).
	kinds := []struct {
		name      string
		take, try func(context.Context, *distlock.Client, string) (*distlock.Lease, error)
	}{
		{"stale-refusal-mutex",
			func(ctx context.Context, c *distlock.Client, n string) (*distlock.Lease, error) {
				return c.Acquire(ctx, n, ttl)
			},
			func(ctx context.Context, c *distlock.Client, n string) (*distlock.Lease, error) {
				return c.TryAcquire(ctx, n, ttl)
			}},
		{"stale-refusal-semaphore",
			func(ctx context.Context, c *distlock.Client, n string) (*distlock.Lease, error) {
				return c.Semaphore(n, 1).Acquire(ctx, ttl)
			},
			func(ctx context.Context, c *distlock.Client, n string) (*distlock.Lease, error) {
				return c.Semaphore(n, 1).TryAcquire(ctx, ttl)
			}},
	}
	type try struct {
		l   *distlock.Lease
		err error
	}
	for _, k := range kinds {
		stale := 0
		for i := range staleRounds {
			h, err := k.take(ctx, holder, k.name)
			if err != nil {
				t.Fatal(err)
			}
			if l, err := k.try(ctx, reader, k.name); !errors.Is(err, distlock.ErrLocked) {
				if l != nil {
					_ = l.Release(ctx)
				}
				t.Fatalf("%s round %d: a try while it is really held: %v, want ErrLocked", k.name, i, err)
			}
			follower.Stop()
			paused := time.Now()
			backlog(t, raw)
			if err := h.Release(ctx); err != nil {
				follower.Cont()
				t.Fatalf("%s round %d: release with a follower paused: %v", k.name, i, err)
			}
			sent := p.Sent()
			got := make(chan try, 1)
			go func() {
				l, err := k.try(ctx, reader, k.name)
				got <- try{l, err}
			}()
			waitUntil(t, 10*time.Second, "the try sent to the paused follower", func() bool { return p.Sent() > sent })
			follower.Cont()
			resumed := time.Now()
			r := <-got
			if d := time.Since(paused); d > 2*time.Second {
				// A slow round (one ran past a 10 s ttl at load 8): say where.
				t.Logf("%s round %d: paused %v, the try answered %v after the resume", k.name, i, resumed.Sub(paused), time.Since(resumed))
			}
			switch {
			case errors.Is(r.err, distlock.ErrLocked):
				stale++
			case r.err != nil:
				t.Fatalf("%s round %d: the try after the release: %v", k.name, i, r.err)
			default:
				if err := r.l.Release(ctx); err != nil {
					t.Fatalf("%s round %d: release of the try's lease: %v", k.name, i, err)
				}
			}
		}
		if stale > 0 {
			t.Errorf("%s: %d of %d tries through the follower refused what was released before they were sent", k.name, stale, staleRounds)
		}
	}
}

// backlogPath is the node (outside the engine's root) staleRefusal's
// backlog writes.
const backlogPath = "/stale-refusal-backlog"

// backlog commits backlogWrites writes of backlogPath through c, sent
// together (the connection pipelines them).
func backlog(t *testing.T, c *zk.Conn) {
	t.Helper()
	errs := make(chan error, backlogWrites)
	for range backlogWrites {
		go func() {
			_, err := c.Set(backlogPath, []byte("backlog"), -1)
			errs <- err
		}()
	}
	for range backlogWrites {
		if err := <-errs; err != nil {
			t.Fatalf("a backlog write: %v", err)
		}
	}
}

package enginetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
)

// queueListed: an engine that lists its waiter queues (engine.Info.Queue,
// what the server's wait-for graph is drawn from) lists every waiter, in
// arrival order, for a mutex and for a semaphore, in Inspect and in List
// alike (List counting as many as Inspect). Engines that list no queue
// (Queue nil) skip.
func (s *suite) queueListed(t *testing.T) {
	e := s.h.New(t)
	for _, kind := range []string{"mutex", "semaphore"} {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxTimeout(t, time.Minute) // each kind its own (three waits of up to 30s each)
			name := lockName(t)
			holder := s.client(t)
			take := func(ctx context.Context, c *distlock.Client, owner string) (*distlock.Lease, error) {
				if kind == "mutex" {
					return c.Acquire(ctx, name, distlock.WithOwner(owner), distlock.WithTTL(time.Minute))
				}
				return c.Semaphore(name, 1).Acquire(ctx, distlock.WithOwner(owner), distlock.WithTTL(time.Minute))
			}
			if kind == "semaphore" {
				if _, ok := e.(engine.Sharer); !ok {
					t.Skip("the engine has no shared locks (engine.Sharer)")
				}
			}
			if _, err := take(ctx, holder, "holder"); err != nil {
				t.Fatal(err)
			}
			inspect := func() (engine.Info, error) {
				if kind == "mutex" {
					return e.Inspect(ctx, name)
				}
				return e.Inspect(ctx, name)
			}
			wctx, stop := context.WithCancel(ctx)
			done := make(chan struct{}, 3)
			defer func() {
				stop()
				for range 3 {
					<-done
				}
			}()
			for i := 1; i <= 3; i++ {
				go func() {
					defer func() { done <- struct{}{} }()
					if l, err := take(wctx, s.client(t), fmt.Sprintf("w%d", i)); err == nil {
						_ = l.Release(context.Background())
					}
				}()
				// In the queue: counted and, where the engine lists its
				// queue, listed (a quorum counts the most any node has and
				// lists one node's queue: a waiter counted on one node may
				// not have reached the listed one yet).
				WaitFor(t, 30*time.Second, fmt.Sprintf("waiter %d in the queue", i), func() bool {
					info, err := inspect()
					return err == nil && info.Waiters == i && (info.Queue == nil || len(info.Queue) == i)
				})
			}
			info, err := inspect()
			if err != nil {
				t.Fatal(err)
			}
			if s.h.Votes && info.Queue != nil {
				// A quorum lists the queue most of the nodes that count
				// the most waiters have: until a waiter's entry reached
				// a majority, that may be a straggler node's, which
				// queued two waiters the other way round. Settled, the
				// list is the majority's.
				WaitFor(t, 30*time.Second, "the quorum's listed queue in arrival order", func() bool {
					info, err = inspect()
					return err == nil && queueInOrder(info)
				})
			}
			if info.Queue == nil {
				t.Skip("the engine lists no waiter queue (engine.Info.Queue)")
			}
			checkQueue(t, "Inspect", info)
			lister, ok := e.(engine.Lister)
			if !ok {
				return
			}
			listed := func() (engine.Info, bool) {
				infos, _, err := lister.List(ctx, name, "", 10)
				if err != nil {
					t.Fatal(err)
				}
				for _, i := range infos {
					if i.Name == name {
						return i, true
					}
				}
				t.Fatalf("List(%q) = %+v: the lock is missing", name, infos)
				return engine.Info{}, false
			}
			i, _ := listed()
			if s.h.Votes {
				// A quorum's List reads the nodes again: a straggler's
				// order may come first there too, until it settles
				// (above).
				WaitFor(t, 30*time.Second, "the quorum's List in arrival order", func() bool {
					i, _ = listed()
					return i.Waiters == info.Waiters && queueInOrder(i)
				})
			}
			// As many as Inspect counts: a List that read the lock
			// without its queue (etcd's did, for a mutex) listed none,
			// which checkQueue alone takes as in order.
			if i.Waiters != info.Waiters {
				t.Fatalf("List counts %d waiters of %q, Inspect %d: %+v", i.Waiters, name, info.Waiters, i)
			}
			checkQueue(t, "List", i)
		})
	}
}

// checkQueue fails t unless info lists the waiters w1, w2, w3 in that
// order, as many as it counts.
func checkQueue(t *testing.T, what string, info engine.Info) {
	t.Helper()
	if queueInOrder(info) {
		return
	}
	if len(info.Queue) != info.Waiters {
		t.Fatalf("%s: %d waiters counted, %d listed: %+v", what, info.Waiters, len(info.Queue), info.Queue)
	}
	for i, w := range info.Queue {
		if got, want := distlock.WaiterOwner(w.ID), fmt.Sprintf("w%d", i+1); got != want || w.Waited < 0 {
			t.Fatalf("%s: queue entry %d is %+v (owner %q), want %s's, in arrival order: %+v", what, i, w, got, want, info.Queue)
		}
	}
}

// queueInOrder reports whether info lists every waiter counted, w1, w2, ...
// in arrival order (checkQueue).
func queueInOrder(info engine.Info) bool {
	if len(info.Queue) != info.Waiters {
		return false
	}
	for i, w := range info.Queue {
		if distlock.WaiterOwner(w.ID) != fmt.Sprintf("w%d", i+1) || w.Waited < 0 {
			return false
		}
	}
	return true
}

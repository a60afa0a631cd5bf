package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	etcdengine "github.com/distlock/distlock/engine/etcd"
	"github.com/distlock/distlock/engine/etcd/etcdtest"
)

// listKinds are the kinds of lock TestListPages holds, by their keys: a
// mutex (the lock key), a semaphore with several holders (its kind and
// limit, a key per holder), two readers of an RW lock, its writer, and an
// election's leader.
var listKinds = []string{"mutex", "semaphore", "readers", "writer", "election"}

// TestListPages pages through List and Leaks with limits 1, 2, 3, 7 and 100
// over locks of every kind whose keys straddle the pages (a page holds
// about limit*4 keys): every held name is listed exactly once, in name
// order, and every leaked key is reported once. A name released and taken
// again between pages (its new holders' keys sorting after the page's last
// key) is not listed twice, and no name held throughout is missed. Before
// pages were cut at a name's end, a shared lock whose keys spanned two pages
// was listed on both. A cursor of another listing is refused, typed, and
// changes nothing.
func TestListPages(t *testing.T) {
	cl := etcdtest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e := etcdengine.New(cl.Client(t))
	t.Cleanup(func() { _ = e.Close() })

	t.Run("BadCursor", func(t *testing.T) { // first, while nothing writes
		before, err := cl.Client(t).Get(ctx, etcdengine.DefaultPrefix, clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		for _, cursor := range []string{"lp-00", etcdengine.DefaultPrefix + "lq-00/lock", "other/lp-00/lock"} {
			var arg *engine.ArgumentError
			if infos, next, err := e.List(ctx, "lp-", cursor, 1); !errors.As(err, &arg) || arg.Arg != "cursor" {
				t.Errorf("List from cursor %q: %v, %q, %v; want an *engine.ArgumentError for the cursor", cursor, infos, next, err)
			}
			if leaks, next, err := e.Leaks(ctx, "lp-", time.Hour, cursor, 1); !errors.As(err, &arg) || arg.Arg != "cursor" {
				t.Errorf("Leaks from cursor %q: %v, %q, %v; want an *engine.ArgumentError for the cursor", cursor, leaks, next, err)
			}
		}
		after, err := cl.Client(t).Get(ctx, etcdengine.DefaultPrefix, clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		if after.Header.Revision != before.Header.Revision {
			t.Errorf("refused listings changed etcd: revision %d, then %d", before.Header.Revision, after.Header.Revision)
		}
	})

	t.Run("Held", func(t *testing.T) {
		c := newClient(t, cl)
		held := holdEveryKind(t, ctx, c, "lp-", 3)
		queued := held[0].name // a mutex with two waiters: its queue's keys straddle pages too
		stop := queueWaiters(t, ctx, c, queued, 2)
		defer stop()
		enginetest.WaitFor(t, 20*time.Second, "two waiters of "+queued, func() bool {
			info, err := e.Inspect(ctx, queued)
			return err == nil && info.Waiters == 2
		})
		leaked := putLeaked(t, ctx, cl.Client(t), "lp-")
		for _, limit := range []int{1, 2, 3, 7, 100} {
			infos := listAll(t, ctx, e, "lp-", limit, nil)
			checkListed(t, limit, infos, namesOf(held), nil)
			for _, i := range infos {
				if i.Name == queued && i.Waiters != 2 {
					t.Errorf("limit %d: %s listed with %d waiters, want 2", limit, queued, i.Waiters)
				}
			}
			if got := leaksAll(t, ctx, e, "lp-", limit); !slices.Equal(got, leaked) {
				t.Errorf("limit %d: Leaks reported\n%q\nwant each leaked key once:\n%q", limit, got, leaked)
			}
		}
	})

	for _, limit := range []int{1, 2, 3, 7} {
		t.Run(fmt.Sprintf("Churn/limit=%d", limit), func(t *testing.T) {
			c := newClient(t, cl)
			prefix := fmt.Sprintf("lc%d-", limit)
			held := holdEveryKind(t, ctx, c, prefix, 3)
			byName := map[string]*heldLock{}
			for _, h := range held {
				byName[h.name] = h
			}
			gone, listed := map[string]bool{}, map[string]bool{}
			infos := listAll(t, ctx, e, prefix, limit, func(page []engine.Info) {
				for _, i := range page { // listed: freed, then taken again by holders whose keys sort last
					if h := byName[i.Name]; h != nil && !gone[h.name] && !listed[h.name] {
						listed[h.name] = true
						h.release(t, ctx)
						h.take(t, ctx, c, "zz")
					}
				}
				for k := len(held) - 1; k >= 0; k-- { // not listed yet: freed for good
					if h := held[k]; !gone[h.name] && !listed[h.name] {
						h.release(t, ctx)
						gone[h.name] = true
						break
					}
				}
			})
			checkListed(t, limit, infos, namesOf(held), gone)
		})
	}
}

// heldLock is a name held as one of listKinds, by the leases of its holders.
type heldLock struct {
	name, kind string
	holders    int // a semaphore's
	leases     []*distlock.Lease
}

// holdEveryKind holds n names of every kind of listKinds, named prefix and
// a number in name order; the i-th semaphore has 2+2i holders.
func holdEveryKind(t *testing.T, ctx context.Context, c *distlock.Client, prefix string, n int) []*heldLock {
	t.Helper()
	var held []*heldLock
	for i := 0; i < n*len(listKinds); i++ {
		h := &heldLock{name: fmt.Sprintf("%s%02d", prefix, i), kind: listKinds[i%len(listKinds)], holders: 2 + 2*(i/len(listKinds))}
		h.take(t, ctx, c, "o")
		held = append(held, h)
	}
	return held
}

// take holds h's name as its kind, each holder under an owner of its own
// named owner and a number.
func (h *heldLock) take(t *testing.T, ctx context.Context, c *distlock.Client, owner string) {
	t.Helper()
	as := func(i int) distlock.Option { return distlock.WithOwner(fmt.Sprintf("%s-%d", owner, i)) }
	add := func(l *distlock.Lease, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("hold %s (%s): %v", h.name, h.kind, err)
		}
		h.leases = append(h.leases, l)
	}
	switch h.kind {
	case "mutex":
		add(c.TryAcquire(ctx, h.name, as(0)))
	case "semaphore":
		for i := 0; i < h.holders; i++ {
			add(c.Semaphore(h.name, 6).TryAcquire(ctx, as(i)))
		}
	case "readers":
		for i := 0; i < 2; i++ {
			add(c.RWMutex(h.name).TryRLock(ctx, as(i)))
		}
	case "writer":
		add(c.RWMutex(h.name).TryLock(ctx, as(0)))
	case "election":
		l, err := c.Campaign(ctx, h.name, "leader", as(0))
		if err != nil {
			t.Fatalf("campaign %s: %v", h.name, err)
		}
		h.leases = append(h.leases, l.Lease())
	}
}

// release releases every hold of h.
func (h *heldLock) release(t *testing.T, ctx context.Context) {
	t.Helper()
	for _, l := range h.leases {
		if err := l.Release(ctx); err != nil {
			t.Fatalf("release %s (%s): %v", h.name, h.kind, err)
		}
	}
	h.leases = nil
}

func namesOf(held []*heldLock) []string {
	var out []string
	for _, h := range held {
		out = append(out, h.name)
	}
	return out
}

// queueWaiters starts n acquires of name that wait until stop is called.
func queueWaiters(t *testing.T, ctx context.Context, c *distlock.Client, name string, n int) (stop func()) {
	t.Helper()
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if l, err := c.Acquire(wctx, name, distlock.WithOwner(fmt.Sprintf("waiter-%d", i))); err == nil {
				_ = l.Release(ctx)
			}
		}()
	}
	return func() { cancel(); wg.Wait() }
}

// putLeaked puts keys with no lease under the engine's prefix among the
// names starting with prefix: two names' worth of foreign keys (five keys
// under one name: more than a page of limit 1 holds) and two keys shaped
// like no name's. It returns them sorted: what Leaks must report, once each.
func putLeaked(t *testing.T, ctx context.Context, cli *clientv3.Client, prefix string) []string {
	t.Helper()
	root := etcdengine.DefaultPrefix + prefix
	keys := []string{root + "03j/x", root + "06u", root + "09u"}
	for i := 0; i < 5; i++ {
		keys = append(keys, fmt.Sprintf("%s07j/x%d", root, i))
	}
	for _, k := range keys {
		if _, err := cli.Put(ctx, k, "foreign"); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(keys)
	return keys
}

// listAll pages through e's listing of the names starting with prefix,
// limit a page, following the cursor until it is absent, and returns every
// page's locks in the order listed. between, when not nil, runs after each
// page but the last, with its locks.
func listAll(t *testing.T, ctx context.Context, e *etcdengine.Engine, prefix string, limit int, between func([]engine.Info)) []engine.Info {
	t.Helper()
	var all []engine.Info
	for cursor, pages := "", 0; ; pages++ {
		if pages > 1000 {
			t.Fatalf("limit %d: no end after %d pages", limit, pages)
		}
		infos, next, err := e.List(ctx, prefix, cursor, limit)
		if err != nil {
			t.Fatalf("limit %d: List: %v", limit, err)
		}
		all = append(all, infos...)
		if next == "" {
			return all
		}
		if between != nil {
			between(infos)
		}
		cursor = next
	}
}

// leaksAll pages through e's leaks under prefix, limit a page, and returns
// their keys in the order reported.
func leaksAll(t *testing.T, ctx context.Context, e *etcdengine.Engine, prefix string, limit int) []string {
	t.Helper()
	var keys []string
	for cursor, pages := "", 0; ; pages++ {
		if pages > 1000 {
			t.Fatalf("limit %d: no end after %d pages", limit, pages)
		}
		leaks, next, err := e.Leaks(ctx, prefix, time.Hour, cursor, limit)
		if err != nil {
			t.Fatalf("limit %d: Leaks: %v", limit, err)
		}
		for _, l := range leaks {
			keys = append(keys, l.Key)
		}
		if next == "" {
			return keys
		}
		cursor = next
	}
}

// checkListed checks that infos name every one of names but those in gone
// exactly once, held, in name order, and nothing else.
func checkListed(t *testing.T, limit int, infos []engine.Info, names []string, gone map[string]bool) {
	t.Helper()
	var got, want []string
	for _, i := range infos {
		got = append(got, i.Name)
		if !i.Held {
			t.Errorf("limit %d: %s listed not held: %+v", limit, i.Name, i)
		}
	}
	for _, n := range names {
		if !gone[n] {
			want = append(want, n)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("limit %d: listed %d names\n%q\nwant each held name once, in name order (%d):\n%q", limit, len(got), got, len(want), want)
	}
}

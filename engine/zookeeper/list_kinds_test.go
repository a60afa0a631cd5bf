package zookeeper_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
)

// TestListWaitedSharedLock: List shows a semaphore and a reader-writer
// lock that are waited for but not held (their holder released while a
// waiter's place stays queued), once each, as Inspect describes them, as
// every other engine does; a mutex only waited for is not listed. Before,
// List kept only held locks and left them out.
func TestListWaitedSharedLock(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	servers := shared(t, 1).Servers()
	a, w := dial(t, servers), dial(t, servers)
	const prefix = "listwaited/"
	reqs := map[string]engine.AcquireRequest{
		prefix + "mutex": {},
		prefix + "rw":    {Kind: engine.RWLock, Limit: engine.RWPermits, Weight: engine.RWPermits},
		prefix + "sem":   {Kind: engine.Semaphore, Limit: 1, Weight: 1},
	}
	for name, r := range reqs {
		r.Name, r.Owner, r.TTL = name, "holder", time.Minute
		if g, err := a.Acquire(ctx, r); err != nil || !g.Acquired {
			t.Fatalf("%s: %+v, %v", name, g, err)
		}
		q := r
		q.Owner, q.Waiter, q.WaiterTTL, q.Waiting = "waiter", "waiter-"+name, time.Minute, true
		if g, err := w.Acquire(ctx, q); err != nil || g.Acquired || !g.Queued {
			t.Fatalf("%s waiter: %+v, %v; want queued", name, g, err)
		}
		if rel, err := a.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "holder", Kind: r.Kind}); err != nil || rel.Status != engine.Released {
			t.Fatalf("%s release: %+v, %v", name, rel, err)
		}
	}
	infos, next, err := a.List(ctx, prefix, "", 100)
	if err != nil || next != "" {
		t.Fatalf("List: %v, next %q", err, next)
	}
	got := map[string]engine.Info{}
	for _, i := range infos {
		if _, dup := got[i.Name]; dup {
			t.Errorf("%s listed twice", i.Name)
		}
		got[i.Name] = i
	}
	for _, name := range []string{prefix + "rw", prefix + "sem"} {
		i, ok := got[name]
		want, err := a.Inspect(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if !ok || i.Held || i.Kind != reqs[name].Kind || i.Waiters != 1 || want.Kind != i.Kind || want.Waiters != 1 {
			t.Errorf("%s: listed %v %+v, Inspect %+v; want it listed, free, of its kind, one waiter", name, ok, i, want)
		}
	}
	if i, ok := got[prefix+"mutex"]; ok {
		t.Errorf("a mutex only waited for is listed: %+v", i)
	}
}

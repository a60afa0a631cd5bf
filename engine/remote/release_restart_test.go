package remote_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/remote"
)

// onceLog is a remote engine that records the ids and errors of its
// ReleaseOnce calls.
type onceLog struct {
	*remote.Engine
	mu   sync.Mutex
	ids  []string
	errs []error
}

func (e *onceLog) ReleaseOnce(ctx context.Context, r engine.ReleaseRequest, id string) (engine.ReleaseResult, error) {
	res, err := e.Engine.ReleaseOnce(ctx, r, id)
	e.mu.Lock()
	e.ids, e.errs = append(e.ids, id), append(e.errs, err)
	e.mu.Unlock()
	return res, err
}

func (e *onceLog) failed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.errs) > 0 && e.errs[0] != nil
}

// TestExplicitOwnerReleaseThroughRestartedServer: an explicit (re-entrant)
// owner holds a lock twice through a server on Redis; the server is killed
// and a release of one hold fails on the refused connection; it is sent
// again, with the same release id, within the release timeout, and once
// the server is started again on its port it drops exactly one hold: the
// owner still holds once, and the second release frees the lock. Before,
// an explicit owner's release through a server was sent once: the hold
// stayed until its ttl.
func TestExplicitOwnerReleaseThroughRestartedServer(t *testing.T) {
	srvs, direct, _ := procServers(t, 1)
	a := srvs[0]
	e, err := remote.New(a.URL())
	if err != nil {
		t.Fatal(err)
	}
	eng := &onceLog{Engine: e}
	c := distlock.New(eng, distlock.WithReleaseTimeout(30*time.Second))
	t.Cleanup(func() { _ = c.Close(); _ = e.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var leases [2]*distlock.Lease
	for i := range leases {
		if leases[i], err = c.Acquire(ctx, "r", distlock.WithOwner("worker"), distlock.WithTTL(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	a.kill()
	released := make(chan error, 1)
	go func() { released <- leases[0].Release(ctx) }()
	enginetest.WaitFor(t, 20*time.Second, "the release's first copy to fail", eng.failed)
	a.start() // the same port
	if err := <-released; err != nil {
		t.Fatalf("the release through the restarted server: %v", err)
	}
	eng.mu.Lock()
	ids := append([]string(nil), eng.ids...)
	eng.mu.Unlock()
	for _, id := range ids {
		if id == "" || id != ids[0] {
			t.Fatalf("the copies of one release carried ids %q", ids)
		}
	}
	if info, err := direct.Inspect(ctx, "r"); err != nil || !info.Held || info.Owner != "worker" || info.Count != 1 {
		t.Fatalf("after one of two holds was released (%d copies): %+v, %v; want worker holding once", len(ids), info, err)
	}
	if err := leases[1].Release(ctx); err != nil {
		t.Fatal(err)
	}
	if info, err := direct.Inspect(ctx, "r"); err != nil || info.Held {
		t.Fatalf("after both releases: %+v, %v; want free", info, err)
	}
}

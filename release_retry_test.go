package distlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// releaseLog is a Redis engine that records the ids and answers of its
// releases ("": a plain Release, which makes an id of its own).
type releaseLog struct {
	*redisengine.Engine
	mu   sync.Mutex
	ids  []string
	errs []error
}

func (e *releaseLog) Release(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	return e.ReleaseOnce(ctx, r, "")
}

func (e *releaseLog) ReleaseOnce(ctx context.Context, r engine.ReleaseRequest, id string) (engine.ReleaseResult, error) {
	res, err := e.Engine.ReleaseOnce(ctx, r, id)
	e.mu.Lock()
	e.ids, e.errs = append(e.ids, id), append(e.errs, err)
	e.mu.Unlock()
	return res, err
}

func (e *releaseLog) failed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.errs) > 0 && e.errs[0] != nil
}

// TestReleaseThroughRestartedRedis: a release sent while its Redis is down
// (a failover's first moments: connections refused) is sent again within
// the release timeout, so the lock is freed once the server answers, not
// left held for its ttl; every copy carries one release id, so none drops
// a second hold (found by an outside tester on Sentinel: the release right
// after a failover failed on its one dial, and the lock stayed held).
func TestReleaseThroughRestartedRedis(t *testing.T) {
	srv := redistest.Start(t, redistest.WithPersistence())
	inner, err := redisengine.New(srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	eng := &releaseLog{Engine: inner}
	c := distlock.New(eng, distlock.WithReleaseTimeout(20*time.Second))
	defer c.Close()
	ctx := context.Background()
	l, err := c.Acquire(ctx, "r", distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	released := make(chan error, 1)
	go func() { released <- l.Release(ctx) }()
	enginetest.WaitFor(t, 20*time.Second, "the release's first copy to fail", eng.failed)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := <-released; err != nil {
		t.Fatalf("Release through a restarted Redis: %v", err)
	}
	eng.mu.Lock()
	ids := eng.ids
	eng.mu.Unlock()
	for _, id := range ids {
		if id == "" || id != ids[0] {
			t.Fatalf("the copies of one release carry ids %q", ids)
		}
	}
	info, err := inner.Inspect(ctx, "r")
	if err != nil || info.Held {
		t.Fatalf("after the release: %+v, %v; want free", info, err)
	}
	if _, err := c.TryAcquire(ctx, "r"); err != nil {
		t.Fatalf("another grant after the release: %v", err)
	}
}

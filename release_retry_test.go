package distlock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/memory"
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
	srv, inner, eng, c := restartableRedis(t)
	ctx := context.Background()
	l, err := c.Acquire(ctx, "r", distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if err := releaseThroughRestart(t, srv, eng, func() error { return l.Release(ctx) }); err != nil {
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

// ReleaseMulti records the answers of the set releases.
func (e *releaseLog) ReleaseMulti(ctx context.Context, rs []engine.ReleaseRequest) ([]engine.ReleaseResult, error) {
	res, err := e.Engine.ReleaseMulti(ctx, rs)
	e.mu.Lock()
	e.errs = append(e.errs, err)
	e.mu.Unlock()
	return res, err
}

// TestSetReleaseThroughRestartedRedis: a set's release sent while its
// Redis is down is sent again within the release timeout, as a lease's
// is, so every member is freed once the server answers (a set's release
// after a failover failed on its one try and left its names held for
// their ttl).
func TestSetReleaseThroughRestartedRedis(t *testing.T) {
	srv, inner, eng, c := restartableRedis(t)
	ctx := context.Background()
	names := []string{"set-a", "set-b"}
	set, err := c.AcquireAll(ctx, names, distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if err := releaseThroughRestart(t, srv, eng, func() error { return set.Release(ctx) }); err != nil {
		t.Fatalf("a set's Release through a restarted Redis: %v", err)
	}
	for _, name := range names {
		if info, err := inner.Inspect(ctx, name); err != nil || info.Held {
			t.Fatalf("%s after the release: %+v, %v; want free", name, info, err)
		}
	}
}

// lostFirstReply is an engine whose first release is carried out with its
// answer lost (a connection cut after the command ran), and which has no
// optional interfaces: every release goes through Release.
type lostFirstReply struct {
	engine.Engine
	mu       sync.Mutex
	releases int
}

var errReplyLost = errors.New("connection reset after the command ran")

func (e *lostFirstReply) Release(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	res, err := e.Engine.Release(ctx, r)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.releases++
	if e.releases == 1 {
		return engine.ReleaseResult{}, errReplyLost
	}
	return res, err
}

// TestOneOffReleaseAppliedReplyLost: on an engine that cannot release once,
// a lease of the Client's random owner is released again after a failed
// copy, and a copy that finds the lock free while the lease was valid
// reports the first copy's release: Release returns nil. An explicit
// owner may hold the lock again (re-entry), so its release is sent once
// and the error is returned.
func TestOneOffReleaseAppliedReplyLost(t *testing.T) {
	ctx := context.Background()
	for _, explicit := range []bool{false, true} {
		eng := &lostFirstReply{Engine: memory.New()}
		c := distlock.New(eng)
		var opts []distlock.Option
		if explicit {
			opts = append(opts, distlock.WithOwner("worker-1"))
		}
		l, err := c.Acquire(ctx, "r", opts...)
		if err != nil {
			t.Fatal(err)
		}
		err = l.Release(ctx)
		eng.mu.Lock()
		sent := eng.releases
		eng.mu.Unlock()
		switch {
		case explicit && (!errors.Is(err, errReplyLost) || sent != 1):
			t.Errorf("an explicit owner's release: %v after %d copies; want the lost reply's error after 1", err, sent)
		case !explicit && (err != nil || sent != 2):
			t.Errorf("a random owner's release: %v after %d copies; want nil after 2", err, sent)
		}
		if info, err := eng.Inspect(ctx, "r"); err != nil || info.Held {
			t.Errorf("after the release: %+v, %v; want free", info, err)
		}
		c.Close()
	}
}

// restartableRedis starts a redis-server that keeps its data across a
// restart, and a Client on it (release timeout 20 s) whose engine records
// its releases.
func restartableRedis(t *testing.T) (*redistest.Server, *redisengine.Engine, *releaseLog, *distlock.Client) {
	t.Helper()
	srv := redistest.Start(t, redistest.WithPersistence())
	inner, err := redisengine.New(srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	eng := &releaseLog{Engine: inner}
	c := distlock.New(eng, distlock.WithReleaseTimeout(20*time.Second))
	t.Cleanup(func() { _ = c.Close() })
	return srv, inner, eng, c
}

// releaseThroughRestart stops srv, starts release, waits until its first
// copy failed, restarts srv and returns release's error.
func releaseThroughRestart(t *testing.T, srv *redistest.Server, eng *releaseLog, release func() error) error {
	t.Helper()
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	released := make(chan error, 1)
	go func() { released <- release() }()
	enginetest.WaitFor(t, 20*time.Second, "the release's first copy to fail", eng.failed)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	return <-released
}

// lostFirstOnceReply is lostFirstReply on an engine whose releases apply
// once (engine.OnceReleaser): its first ReleaseOnce is carried out with
// its answer lost.
type lostFirstOnceReply struct {
	lostFirstReply
	once engine.OnceReleaser
	ids  []string
}

func (e *lostFirstOnceReply) ReleaseOnce(ctx context.Context, r engine.ReleaseRequest, id string) (engine.ReleaseResult, error) {
	res, err := e.once.ReleaseOnce(ctx, r, id)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.releases++
	e.ids = append(e.ids, id)
	if e.releases == 1 {
		return engine.ReleaseResult{}, errReplyLost
	}
	return res, err
}

// TestExplicitOwnerReleaseAppliedReplyLost: on an engine whose releases
// apply once, an explicit owner's release whose answer was lost is sent
// again with the same id: a copy of a count-down drops no second hold of
// the re-entrant owner (its other lease still holds the lock), and a copy
// of the release that freed the lock finds it free while the lease was
// valid, which is the first copy's release: Release returns nil. Before,
// an explicit owner's release was resent only on Redis, PostgreSQL and
// ZooKeeper, and a copy that found the lock freed by the first one
// returned an error.
func TestExplicitOwnerReleaseAppliedReplyLost(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	eng := &lostFirstOnceReply{lostFirstReply: lostFirstReply{Engine: mem}, once: mem}
	c := distlock.New(eng)
	defer c.Close()
	first, err := c.Acquire(ctx, "r", distlock.WithOwner("worker-1"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.Acquire(ctx, "r", distlock.WithOwner("worker-1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Release(ctx); err != nil {
		t.Fatalf("the first hold's release, its answer lost once: %v", err)
	}
	eng.mu.Lock()
	ids := append([]string(nil), eng.ids...)
	eng.mu.Unlock()
	if len(ids) != 2 || ids[0] == "" || ids[0] != ids[1] {
		t.Fatalf("the release's copies carried ids %q; want two copies with one id", ids)
	}
	if info, err := mem.Inspect(ctx, "r"); err != nil || !info.Held || info.Owner != "worker-1" || info.Count != 1 {
		t.Fatalf("after one of two holds was released: %+v, %v; want worker-1 holding once", info, err)
	}
	eng.mu.Lock()
	eng.releases = 0 // the next release's first answer is lost too
	eng.mu.Unlock()
	if err := second.Release(ctx); err != nil {
		t.Fatalf("the last hold's release, its answer lost once: %v", err)
	}
	if info, err := mem.Inspect(ctx, "r"); err != nil || info.Held {
		t.Fatalf("after both holds were released: %+v, %v; want free", info, err)
	}
}

package zookeeper_test

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/zookeeper/zktest"
	"github.com/distlock/distlock/internal/stallproxy"
)

// TestLateRenewalPastExpiryUndone: a holder's renewal held up on its way
// (its connection stalled, as under a stopped ensemble or a network that
// delays without cutting) is given up by its caller and reaches the
// ensemble only after the lease expired, with nobody else touching the
// name meanwhile, so its version still matches and ZooKeeper applies it.
// That write must not bring the lease back for a ttl, held by nobody (the
// holder was told it lost the lock): the engine judges the write's answer
// when it comes, after its caller gave up, and deletes the hold it revived.
// Nothing else reads the line here, so no sweep removes it instead.
func TestLateRenewalPastExpiryUndone(t *testing.T) {
	t.Parallel()
	ens := shared(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := stallproxy.Listen(ens.Servers()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	e := dial(t, []string{p.Addr()})
	name := uniqueName("late-renewal")
	const ttl = time.Second
	g, err := e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "a", Attempt: "a", TTL: ttl})
	if err != nil || !g.Acquired {
		t.Fatalf("acquire: %+v, %v", g, err)
	}
	mtime0, ok := holderMtime(t, ens, name)
	if !ok {
		t.Fatal("no holder node after the grant")
	}
	p.Pause()
	resumed := false
	defer func() {
		if !resumed {
			p.Resume()
		}
	}()
	rctx, rcancel := context.WithTimeout(ctx, 50*time.Millisecond)
	rs, err := e.Extend(rctx, []engine.ExtendRequest{{Name: name, Owner: "a", TTL: ttl, Token: g.Token}})
	rcancel()
	if err == nil && len(rs) == 1 && rs[0].Err == nil {
		t.Fatalf("a renewal through a stalled connection answered %+v", rs)
	}
	// The lease ends ttl after its grant's write, by the ensemble's clock:
	// the stall lasts until that clock is half a ttl past it, so the held
	// renewal lands after it.
	waitEnsembleClock(t, ens, mtime0+(ttl+ttl/2).Milliseconds())
	p.Resume()
	resumed = true
	// The held renewal reaches the ensemble (its node's mtime moves), or
	// never does (its connection was closed meanwhile: nothing to judge).
	var applied bool
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		mtime, ok := holderMtime(t, ens, name)
		if applied = ok && mtime != mtime0; applied || !ok {
			break
		}
	}
	if !applied {
		if _, ok := holderMtime(t, ens, name); ok {
			t.Skip("the held renewal never reached the ensemble (its connection was closed): nothing revived")
		}
		return // deleted already
	}
	enginetest.WaitFor(t, 20*time.Second, "the hold the late renewal revived to be deleted", func() bool {
		_, ok := holderMtime(t, ens, name)
		return !ok
	})
}

// holderMtime is the mtime of name's one persistent child (its holder's
// node), read with a connection of the test's own, which sweeps nothing.
func holderMtime(t *testing.T, ens *zktest.Ensemble, name string) (int64, bool) {
	t.Helper()
	raw := currentConn(t, ens.Servers())
	defer raw.Close()
	path := "/distlock/l-" + url.PathEscape(name)
	kids, _, err := raw.Children(path)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}
	for _, k := range kids {
		if _, st, err := raw.Get(path + "/" + k); err == nil && st.EphemeralOwner == 0 {
			return st.Mtime, true
		}
	}
	return 0, false
}

// TestLateProclaimPastExpiryRefused: a leader's Proclaim (SetMetadata)
// sent while its connection stalls reaches the ensemble only after the
// lease expired. The line it reads then is as old as the stall (its newest
// mtime is the grant's), so the hold looks live; the write's own mtime
// tells otherwise: the answer is Missing (not the leader's value), and the
// hold the write revived is deleted.
func TestLateProclaimPastExpiryRefused(t *testing.T) {
	t.Parallel()
	ens := shared(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := stallproxy.Listen(ens.Servers()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	e := dial(t, []string{p.Addr()})
	name := uniqueName("late-proclaim")
	const ttl = time.Second
	g, err := e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "a", Attempt: "a", TTL: ttl, Metadata: "v1", Announce: true})
	if err != nil || !g.Acquired {
		t.Fatalf("acquire: %+v, %v", g, err)
	}
	mtime0, ok := holderMtime(t, ens, name)
	if !ok {
		t.Fatal("no holder node after the grant")
	}
	p.Pause()
	type answer struct {
		st  engine.ExtendStatus
		err error
	}
	got := make(chan answer, 1)
	go func() {
		st, err := e.SetMetadata(ctx, engine.MetadataRequest{Name: name, Owner: "a", Metadata: "v2-late", Token: g.Token})
		got <- answer{st, err}
	}()
	waitEnsembleClock(t, ens, mtime0+(ttl+ttl/2).Milliseconds()) // past the lease's end, as above
	p.Resume()
	a := <-got
	if a.err != nil || a.st == engine.Extended {
		t.Fatalf("a Proclaim applied after the lease expired: %v, %v; want Missing", a.st, a.err)
	}
	enginetest.WaitFor(t, 20*time.Second, "the hold the late Proclaim revived to be deleted", func() bool {
		_, ok := holderMtime(t, ens, name)
		return !ok
	})
}

// waitEnsembleClock waits until the ensemble's clock (the mtime of a write
// to a scratch node of the test's own) reaches ms, in ZooKeeper's
// milliseconds.
func waitEnsembleClock(t *testing.T, ens *zktest.Ensemble, ms int64) {
	t.Helper()
	raw, _, err := zk.Connect(ens.Servers(), testSession, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	path := "/late-clock-" + url.PathEscape(t.Name())
	if _, err := raw.Create(path, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	defer func() { _ = raw.Delete(path, -1) }()
	enginetest.WaitFor(t, 20*time.Second, "the ensemble's clock past the lease's end", func() bool {
		st, err := raw.Set(path, nil, -1)
		return err == nil && st.Mtime >= ms
	})
}

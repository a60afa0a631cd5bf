package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/postgres"
	"github.com/distlock/distlock/engine/postgres/pgtest"
)

// assertUntouched checks that nobody holds names, nobody queues for them,
// and that they have no row of locks (a refused set deletes the rows it
// made).
func assertUntouched(t *testing.T, ctx context.Context, e *postgres.Engine, pool *pgxpool.Pool, names ...string) {
	t.Helper()
	for _, n := range names {
		info, err := e.Inspect(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if info.Held || info.Waiters != 0 {
			t.Errorf("%q: held %v by %q, %d waiters; want free, no waiter", n, info.Held, info.Owner, info.Waiters)
		}
		var rows int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+e.Schema()+`.locks WHERE name = $1`, n).Scan(&rows); err != nil || rows != 0 {
			t.Errorf("%q: %d rows of locks (%v); want none", n, rows, err)
		}
	}
}

// multiResult is an answer of AcquireMulti.
type multiResult struct {
	mg  engine.MultiGrant
	err error
}

// goAcquireMulti calls e.AcquireMulti(ctx, rs) in a goroutine of its own
// and returns the channel of its answer.
func goAcquireMulti(ctx context.Context, e *postgres.Engine, rs []engine.AcquireRequest) <-chan multiResult {
	done := make(chan multiResult, 1)
	go func() {
		mg, err := e.AcquireMulti(ctx, rs)
		done <- multiResult{mg, err}
	}()
	return done
}

// setup migrates schema and returns a context that ends within a minute,
// a pool and an engine on schema, and a prefix for the test's names.
func setup(t *testing.T, schema string) (context.Context, *pgxpool.Pool, *postgres.Engine, string) {
	t.Helper()
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	pool := newPool(t)
	return ctx, pool, newEngine(t, pool, schema), uniqueName(t) + "/"
}

// TestMultiAllOrNothing: a set that overlaps a name held by another
// owner, a name held as a semaphore, or a free name with a waiter queued
// is refused whole, naming the name that blocks it, and leaves every
// other name as it was (no hold, no waiter, no row); bad input is typed
// and changes nothing.
func TestMultiAllOrNothing(t *testing.T) {
	ctx, pool, e, p := setup(t, "multi")
	a, b, c, sem := p+"a", p+"b", p+"c", p+"sem"

	g, err := e.Acquire(ctx, engine.AcquireRequest{Name: b, Owner: "x", Attempt: "x", TTL: time.Minute})
	if err != nil || !g.Acquired {
		t.Fatalf("Acquire b: %+v, %v", g, err)
	}
	mg, err := e.AcquireMulti(ctx, enginetest.SetRequests("s", time.Minute, a, b, c))
	if err != nil || mg.Acquired || mg.Blocked != 1 || mg.Grant.Holder != "x" || mg.Grant.HolderTTL <= 0 {
		t.Fatalf("AcquireMulti over held b: %+v, %v; want refused at 1 by x", mg, err)
	}
	assertUntouched(t, ctx, e, pool, a, c)

	sg, err := e.Acquire(ctx, engine.AcquireRequest{Name: sem, Owner: "h",
		Attempt: "h", OneOff: true, TTL: time.Minute, Kind: engine.Semaphore, Limit: 1, Weight: 1})
	if err != nil || !sg.Acquired {
		t.Fatalf("Acquire (shared): %+v, %v", sg, err)
	}
	_, err = e.AcquireMulti(ctx, enginetest.SetRequests("s", time.Minute, a, sem))
	var ae *engine.ArgumentError
	if !errors.As(err, &ae) || err.Error() != engine.KindError(sem, engine.Semaphore, 0).Error() {
		t.Fatalf("AcquireMulti over a semaphore: %v; want %v", err, engine.KindError(sem, engine.Semaphore, 0))
	}
	assertUntouched(t, ctx, e, pool, a)

	for _, bad := range []struct {
		what string
		rs   []engine.AcquireRequest
		want func(error) bool
	}{
		{"a repeated name", enginetest.SetRequests("s", time.Minute, a, c, a), func(err error) bool { return errors.As(err, &ae) }},
		{"a NUL in a name", enginetest.SetRequests("s", time.Minute, a, "c\x00"), func(err error) bool { return errors.As(err, &ae) }},
		{"a NUL in an owner", enginetest.SetRequests("s\x00", time.Minute, a, c), func(err error) bool { return errors.As(err, &ae) }},
		{"a waiter", append(enginetest.SetRequests("s", time.Minute, a), engine.AcquireRequest{Name: c, Owner: "s", Waiter: "w", TTL: time.Minute}),
			func(err error) bool { return errors.Is(err, engine.ErrNotAtomic) }},
	} {
		if _, err := e.AcquireMulti(ctx, bad.rs); !bad.want(err) {
			t.Errorf("AcquireMulti with %s: %v", bad.what, err)
		}
	}
	for _, bad := range [][]engine.ReleaseRequest{
		setReleases("s", a, a),
		setReleases("s\x00", a),
		{{Name: a, Owner: "s"}, {Name: c, Owner: "s", Kind: engine.Semaphore}},
	} {
		if _, err := e.ReleaseMulti(ctx, bad); !errors.As(err, &ae) {
			t.Errorf("ReleaseMulti(%+v): %v; want *engine.ArgumentError", bad, err)
		}
	}
	assertUntouched(t, ctx, e, pool, a, c)

	// A waiter queued on a free name keeps it: w queues behind x on b, x
	// releases (b is free, w unfair: not reserved), and a set with b is
	// refused as kept for the queue, where a lone Acquire would barge.
	q, err := e.Acquire(ctx, engine.AcquireRequest{Name: b, Owner: "w", Attempt: "w", TTL: time.Minute,
		Waiter: "w", WaiterTTL: time.Minute})
	if err != nil || q.Acquired || !q.Queued {
		t.Fatalf("queue on b: %+v, %v", q, err)
	}
	if r, err := e.Release(ctx, engine.ReleaseRequest{Name: b, Owner: "x"}); err != nil || r.Status != engine.Released {
		t.Fatalf("Release b: %+v, %v", r, err)
	}
	mg, err = e.AcquireMulti(ctx, enginetest.SetRequests("s", time.Minute, a, b))
	if err != nil || mg.Acquired || mg.Blocked != 1 || !mg.Grant.Reserved || mg.Grant.HolderTTL <= 0 {
		t.Fatalf("AcquireMulti over queued b: %+v, %v; want refused at 1, reserved", mg, err)
	}
	assertUntouched(t, ctx, e, pool, a)
	if info, err := e.Inspect(ctx, b); err != nil || info.Held || info.Waiters != 1 {
		t.Fatalf("b after the refused set: %+v, %v; want free, w queued", info, err)
	}
}

// TestMultiTokensAndRelease: the set's tokens are above every earlier
// token of each name, of either kind, and below every later one;
// ReleaseMulti frees the whole set in one call; a set through the Client
// takes the same path.
func TestMultiTokensAndRelease(t *testing.T) {
	ctx, pool, e, p := setup(t, "multi")
	names := []string{p + "a", p + "b", p + "c"}

	single := func(name string) uint64 {
		t.Helper()
		g, err := e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "one", Attempt: "one", OneOff: true, TTL: time.Minute})
		if err != nil || !g.Acquired {
			t.Fatalf("Acquire %s: %+v, %v", name, g, err)
		}
		if r, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "one"}); err != nil || r.Status != engine.Released {
			t.Fatalf("Release %s: %+v, %v", name, r, err)
		}
		return g.Token
	}
	before := single(names[0])
	permit, err := e.Acquire(ctx, engine.AcquireRequest{Name: names[1], Owner: "p",
		Attempt: "p", TTL: time.Minute, Kind: engine.Semaphore, Limit: 2, Weight: 1})
	if err != nil || !permit.Acquired {
		t.Fatalf("a permit: %+v, %v", permit, err)
	}
	if _, err := e.Release(ctx, engine.ReleaseRequest{Name: names[1], Owner: "p", Kind: engine.Semaphore}); err != nil {
		t.Fatal(err)
	}
	mg, err := e.AcquireMulti(ctx, enginetest.SetRequests("s", time.Minute, names...))
	if err != nil || !mg.Acquired || len(mg.Tokens) != 3 {
		t.Fatalf("AcquireMulti: %+v, %v", mg, err)
	}
	if mg.Tokens[0] <= before || mg.Tokens[1] <= permit.Token {
		t.Errorf("set tokens %v, not above the earlier %d (a) and %d (b's permit)", mg.Tokens, before, permit.Token)
	}
	for i, n := range names {
		if info, err := e.Inspect(ctx, n); err != nil || info.Owner != "s" || info.Token != mg.Tokens[i] || info.Count != 1 {
			t.Errorf("%s after the set: %+v, %v; want s's one hold, token %d", n, info, err, mg.Tokens[i])
		}
	}
	res, err := e.ReleaseMulti(ctx, setReleases("s", names[2], names[0], names[1]))
	if err != nil || len(res) != 3 {
		t.Fatalf("ReleaseMulti: %+v, %v", res, err)
	}
	for i, r := range res {
		if r.Status != engine.Released {
			t.Errorf("ReleaseMulti[%d]: %+v; want Released", i, r)
		}
	}
	assertUntouched(t, ctx, e, pool, names...)
	if after := single(names[1]); after <= mg.Tokens[1] {
		t.Errorf("token of b %d after the set's %d", after, mg.Tokens[1])
	}
	res, err = e.ReleaseMulti(ctx, setReleases("s", names[:2]...))
	if err != nil || res[0].Status != engine.NotHeld || res[1].Status != engine.NotHeld {
		t.Errorf("ReleaseMulti again: %+v, %v; want NotHeld", res, err)
	}

	cl := distlock.New(e)
	defer cl.Close()
	set, err := cl.TryAcquireAll(ctx, []string{names[2], names[0]})
	if err != nil {
		t.Fatal(err)
	}
	if set.Token(names[0]) <= mg.Tokens[0] || set.Token(names[2]) <= mg.Tokens[2] {
		t.Errorf("Client set tokens %v not above the engine set's %v", set.Tokens(), mg.Tokens)
	}
	if _, err := cl.TryAcquireAll(ctx, []string{names[1], names[2]}); !errors.Is(err, distlock.ErrLocked) {
		t.Errorf("TryAcquireAll over a held name: %v; want ErrLocked", err)
	}
	if err := set.Release(ctx); err != nil {
		t.Fatal(err)
	}
	assertUntouched(t, ctx, e, pool, names...)
}

// TestMultiStalledToken: a set whose backend stalls before it has its
// rows (a trigger holds its insert) while another client takes one of its
// names and releases it gets a token above that grant's: each token is
// drawn once the set holds every row.
func TestMultiStalledToken(t *testing.T) {
	const schema = "multi_stall"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pool := newPool(t)
	installStall(t, ctx, pool, schema, "BEFORE INSERT ON locks")
	p := uniqueName(t) + "/"
	names := []string{p + "a", p + "b"}
	app := "stalled-set"
	letGo := holdStall(t, ctx)
	stalled := newEngine(t, newPool(t, stallParams(app)...), schema)
	done := goAcquireMulti(ctx, stalled, enginetest.SetRequests("s", time.Minute, names...))
	waitLocked(t, ctx, app, 1) // in the trigger of its first insert
	other := mutexMeanwhile(t, ctx, names[1])(newEngine(t, newPool(t), schema))
	letGo()
	r := <-done
	if r.err != nil || !r.mg.Acquired {
		t.Fatalf("the stalled set: %+v, %v", r.mg, r.err)
	}
	if r.mg.Tokens[1] <= other {
		t.Errorf("the stalled set's token of b %d is not above %d, the token of a grant made and released before it", r.mg.Tokens[1], other)
	}
}

// TestMultiNoDeadlock: Clients on pools of their own, whose sets form a
// ring listed in opposite orders (enginetest.CycleSets), all finish their
// rounds, with mutual exclusion on every name.
func TestMultiNoDeadlock(t *testing.T) {
	const schema, clients, rounds = "multi", 6, 8
	migrated(t, schema)
	cs := make([]*distlock.Client, clients)
	for i := range cs {
		cs[i] = client(t, schema, fmt.Sprintf("cycle-%d", i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	enginetest.SetCycles(t, ctx, cs, uniqueName(t)+"/", rounds, distlock.WithTTL(5*time.Second))
}

// TestMultiLostAnswer: a set granted by PostgreSQL whose answer is lost
// (the connection cut while the reply is held) is sent again, and the
// second copy finds the names its own: granted, with the first copy's
// tokens, not refused by itself.
func TestMultiLostAnswer(t *testing.T) {
	const schema = "multi_lost"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pool := newPool(t)
	installStall(t, ctx, pool, schema, "BEFORE INSERT ON locks")
	proxy, err := pgtest.NewProxy(net.JoinHostPort("127.0.0.1", strconv.Itoa(srv.Port)))
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	const app = "lost-set"
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&application_name=%s&distlock_test.stall=on", proxy.Port(), app)
	e := newEngine(t, poolOn(t, url), schema)
	watch := newEngine(t, pool, schema)
	p := uniqueName(t) + "/"
	names := []string{p + "a", p + "b"}

	letGo := holdStall(t, ctx)
	done := goAcquireMulti(ctx, e, enginetest.SetRequests("s", time.Minute, names...))
	waitLocked(t, ctx, app, 1)
	proxy.Pause() // the answer will be held
	letGo()
	var tokens []uint64
	waitFor(t, "the set's commit", func() bool {
		tokens = tokens[:0]
		for _, n := range names {
			info, err := watch.Inspect(ctx, n)
			if err != nil || info.Owner != "s" {
				return false
			}
			tokens = append(tokens, info.Token)
		}
		return true
	})
	proxy.Cut() // the answer is lost; the copy sent again goes through
	r := <-done
	if r.err != nil || !r.mg.Acquired || len(r.mg.Tokens) != 2 {
		t.Fatalf("a set whose answer was lost: %+v, %v; want granted", r.mg, r.err)
	}
	if r.mg.Tokens[0] != tokens[0] || r.mg.Tokens[1] != tokens[1] {
		t.Errorf("tokens %v; want the first copy's %v", r.mg.Tokens, tokens)
	}
	for _, n := range names {
		if info, err := watch.Inspect(ctx, n); err != nil || info.Count != 1 || info.TTL < 30*time.Second {
			t.Errorf("%s after the resent copy: %+v, %v; want one hold, its lease restarted", n, info, err)
		}
	}
	res, err := watch.ReleaseMulti(ctx, setReleases("s", names...))
	if err != nil || res[0].Status != engine.Released || res[1].Status != engine.Released {
		t.Fatalf("ReleaseMulti: %+v, %v", res, err)
	}
	assertUntouched(t, ctx, watch, pool, names...)
}

// TestMultiUpgrade: on a version 4 schema (testdata) a set is
// engine.ErrNotAtomic, and the Client takes it name by name (and releases
// it one call each); Migrate brings the schema to version 5, keeping the
// set held across it, and then a set is granted in one call.
func TestMultiUpgrade(t *testing.T) {
	const schema = "upgrade_v4"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pool := newPool(t)
	oldSchema(t, ctx, pool, schema, "schema_v4.sql")
	e := newEngine(t, pool, schema)
	if _, err := e.AcquireMulti(ctx, enginetest.SetRequests("s", time.Minute, "a", "b")); !errors.Is(err, engine.ErrNotAtomic) {
		t.Fatalf("AcquireMulti on version 4: %v; want engine.ErrNotAtomic", err)
	}
	assertUntouched(t, ctx, e, pool, "a", "b")
	c := distlock.New(e)
	defer c.Close()
	held, err := c.TryAcquireAll(ctx, []string{"a", "b"}, distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatalf("TryAcquireAll on version 4: %v; want the set, name by name", err)
	}
	upgrade(t, ctx, pool, schema)
	for _, n := range []string{"a", "b"} {
		if info, err := e.Inspect(ctx, n); err != nil || info.Owner != held.Owner(n) || info.Token != held.Token(n) {
			t.Fatalf("%s held across the upgrade: %+v, %v", n, info, err)
		}
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	mg, err := e.AcquireMulti(ctx, enginetest.SetRequests("s", time.Minute, "a", "b"))
	if err != nil || !mg.Acquired || mg.Tokens[0] <= held.Token("a") {
		t.Fatalf("AcquireMulti after the upgrade: %+v, %v", mg, err)
	}
	if err := postgres.Drop(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
}

// TestMultiRowOrder: engines call AcquireMulti directly with the ring's
// sets in the caller's order (enginetest.CycleSets: the last in the
// opposite order), all at once, each first stalled (a trigger) just after
// it made its first row, until every one has: acquire_multi locks the
// rows in name order whatever the order of the request, so no two calls
// wait for each other in a cycle (PostgreSQL would abort one: "deadlock
// detected"). Then more rounds, unstalled.
func TestMultiRowOrder(t *testing.T) {
	const schema, engines, rounds = "multi_order", 6, 20
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	installStall(t, ctx, newPool(t), schema, "AFTER INSERT ON locks")
	const app = "ring-set"
	letGo := holdStall(t, ctx)
	sets := enginetest.CycleSets(uniqueName(t)+"/", engines)
	errs := make(chan error, engines)
	for i := range engines {
		e := newEngine(t, newPool(t, stallParams(app)...), schema)
		go func() {
			for r := range rounds {
				rs := enginetest.SetRequests(fmt.Sprintf("o%d-%d", i, r), time.Minute, sets[i]...)
				mg, err := e.AcquireMulti(ctx, rs)
				if err == nil && mg.Acquired {
					_, err = e.ReleaseMulti(ctx, setReleases(rs[0].Owner, sets[i]...))
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	waitLocked(t, ctx, app, engines)
	letGo()
	for range engines {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestMultiResent: a copy of a set's call sent again finds the names of
// the first copy its own (same owner, same attempt): granted with their
// tokens. The same owner from another attempt is refused as held. A copy
// refused by a name another owner took since frees the names it found its
// own, leaving nothing held.
func TestMultiResent(t *testing.T) {
	ctx, pool, e, p := setup(t, "multi")
	a, b := p+"a", p+"b"
	rs := enginetest.SetRequests("s", time.Minute, a, b)
	first, err := e.AcquireMulti(ctx, rs)
	if err != nil || !first.Acquired {
		t.Fatalf("AcquireMulti: %+v, %v", first, err)
	}
	again, err := e.AcquireMulti(ctx, rs)
	if err != nil || !again.Acquired || again.Tokens[0] != first.Tokens[0] || again.Tokens[1] != first.Tokens[1] {
		t.Fatalf("the copy sent again: %+v, %v; want granted with tokens %v", again, err, first.Tokens)
	}
	other := enginetest.SetRequests("s", time.Minute, a, b)
	other[0].Attempt, other[1].Attempt = "another", "another"
	if mg, err := e.AcquireMulti(ctx, other); err != nil || mg.Acquired || mg.Blocked != 0 || mg.Grant.Holder != "s" {
		t.Fatalf("the owner from another attempt: %+v, %v; want refused at 0, held by s", mg, err)
	}
	if held, err := e.ForceRelease(ctx, b); err != nil || !held {
		t.Fatalf("ForceRelease b: %v, %v", held, err)
	}
	if g, err := e.Acquire(ctx, engine.AcquireRequest{Name: b, Owner: "x", Attempt: "x", TTL: time.Minute}); err != nil || !g.Acquired {
		t.Fatalf("Acquire b: %+v, %v", g, err)
	}
	if mg, err := e.AcquireMulti(ctx, rs); err != nil || mg.Acquired || mg.Blocked != 1 || mg.Grant.Holder != "x" {
		t.Fatalf("the copy sent again after b was taken: %+v, %v; want refused at 1 by x", mg, err)
	}
	assertUntouched(t, ctx, e, pool, a)
}

// TestMultiLapsedWaiter: a waiter whose heartbeat stopped does not keep a
// free name from a set: the set is granted, and the dead waiter is
// dropped from the queue.
func TestMultiLapsedWaiter(t *testing.T) {
	ctx, pool, e, p := setup(t, "multi")
	a, b := p+"a", p+"b"
	if g, err := e.Acquire(ctx, engine.AcquireRequest{Name: b, Owner: "x", Attempt: "x", TTL: time.Minute}); err != nil || !g.Acquired {
		t.Fatalf("Acquire b: %+v, %v", g, err)
	}
	q, err := e.Acquire(ctx, engine.AcquireRequest{Name: b, Owner: "w", Attempt: "w", TTL: time.Minute,
		Waiter: "w", WaiterTTL: 50 * time.Millisecond})
	if err != nil || !q.Queued {
		t.Fatalf("queue on b: %+v, %v", q, err)
	}
	if r, err := e.Release(ctx, engine.ReleaseRequest{Name: b, Owner: "x"}); err != nil || r.Status != engine.Released {
		t.Fatalf("Release b: %+v, %v", r, err)
	}
	waitFor(t, "the waiter's heartbeat deadline", func() bool {
		info, err := e.Inspect(ctx, b)
		return err == nil && info.Waiters == 0
	})
	mg, err := e.AcquireMulti(ctx, enginetest.SetRequests("s", time.Minute, a, b))
	if err != nil || !mg.Acquired {
		t.Fatalf("a set over b, its only waiter dead: %+v, %v; want granted", mg, err)
	}
	var rows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM multi.waiters WHERE name = $1`, b).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("%d waiters of b left (%v); want the dead one dropped", rows, err)
	}
}

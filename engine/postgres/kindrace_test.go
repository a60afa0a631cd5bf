package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/postgres"
)

// Races between the kinds on one name, made deterministic: one call's
// backend is stalled inside its transaction (a trigger of installStall
// waits for the advisory lock the test holds) at the point named, after
// its check or its write, before its commit, while a call of another kind
// runs on another engine. That call either ends meanwhile (it read the
// stalled one's tables before the commit) or waits for a row lock the
// stalled one holds; once the stall is let go, exactly one kind may win,
// the other is refused with the memory engine's typed kind error, and
// nothing of the loser is stored.

// raceSchema is the schema of this file's tests (their stall triggers stay
// out of the others' schemas).
const raceSchema = "kindrace"

// raceResult is a call's answer: a grant, a number (SetLimit's previous
// limit; 1 for a RaiseFence that found the hold held, or a renewal that
// extended it), an error.
type raceResult struct {
	g   engine.Grant
	n   int
	err error
}

// race runs stalled on an engine whose session stalls at the installed
// trigger, waits until it is stalled there, runs other on an engine of its
// own, and reports whether other ended before the stall was let go (it did
// not wait for the stalled call) or waited for a lock; then it lets the
// stall go and returns both answers. Both engines have connected before
// prepare (if not nil) runs, just before stalled is sent; between (if not
// nil) runs while the stalled call is stalled, before other is sent. The
// stalled call must reach the stall: see raceOnce for a call that may not.
func race(t *testing.T, ctx context.Context, schema, tag string, prepare, between func(),
	stalled, other func(e *postgres.Engine) raceResult) (s, o raceResult, otherWaited bool) {
	t.Helper()
	s, o, otherWaited, ok := raceOnce(t, ctx, schema, tag, prepare, between, stalled, other)
	if !ok {
		t.Fatalf("%s: the stalled call ended without stalling: %+v", tag, s)
	}
	return s, o, otherWaited
}

// raceOnce is race for a stalled call that may end without reaching the
// stall (a renewal that finds the lease already ended): it then reports
// stalledOK false with the stalled call's answer, having run neither
// between nor other.
func raceOnce(t *testing.T, ctx context.Context, schema, tag string, prepare, between func(),
	stalled, other func(e *postgres.Engine) raceResult) (s, o raceResult, otherWaited, stalledOK bool) {
	t.Helper()
	stalledApp, otherApp := "stalled-"+tag, "other-"+tag
	letGo := holdStall(t, ctx)
	defer letGo()
	se := newEngine(t, newPool(t, stallParams(stalledApp)...), schema)
	oe := newEngine(t, newPool(t, "application_name="+otherApp), schema)
	for _, e := range []*postgres.Engine{se, oe} { // connected: no dial between prepare and the race
		if _, err := e.Inspect(ctx, tag); err != nil {
			t.Fatal(err)
		}
	}
	if prepare != nil {
		prepare()
	}
	sDone, oDone := make(chan raceResult, 1), make(chan raceResult, 1)
	go func() { sDone <- stalled(se) }()
	if s, ended := lockedOrDone(t, ctx, stalledApp, sDone); ended {
		return s, o, false, false
	}
	if between != nil {
		between()
	}
	go func() { oDone <- other(oe) }()
	o, ended := lockedOrDone(t, ctx, otherApp, oDone)
	letGo()
	s = <-sDone
	if !ended {
		o = <-oDone
	}
	return s, o, !ended, true
}

// lockedOrDone waits until a session of app waits for a lock (ended
// false) or the call that runs there answers on done (ended true, with its
// answer), failing the test when neither comes within 10 s.
func lockedOrDone(t *testing.T, ctx context.Context, app string, done <-chan raceResult) (answer raceResult, ended bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); lockWaiters(t, ctx, app) == 0; {
		select {
		case answer = <-done:
			return answer, true
		case <-time.After(5 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatalf("the call of %s neither ended nor waited for a lock", app)
			}
		}
	}
	return answer, false
}

// clearStalls drops the stall triggers of this file's tests, so that
// each installs only its own.
func clearStalls(t *testing.T, ctx context.Context, pool *pgxpool.Pool, schema string) {
	t.Helper()
	for _, table := range []string{"locks", "shared", "shared_holders"} {
		if _, err := pool.Exec(ctx, `DROP TRIGGER IF EXISTS stall_for_test ON `+schema+`.`+table); err != nil {
			t.Fatal(err)
		}
	}
}

// stored reads what the schema keeps for name: its shared row's kind and
// limit (0, 0 without one), its row of locks' owner ("" free, "-" none).
func stored(t *testing.T, ctx context.Context, pool *pgxpool.Pool, name string) (kind, limit int, owner string) {
	t.Helper()
	err := pool.QueryRow(ctx, `SELECT coalesce((SELECT kind FROM `+raceSchema+`.shared WHERE name = $1), 0),
  coalesce((SELECT lim FROM `+raceSchema+`.shared WHERE name = $1), 0),
  coalesce((SELECT coalesce(owner, '') FROM `+raceSchema+`.locks WHERE name = $1), '-')`, name).Scan(&kind, &limit, &owner)
	if err != nil {
		t.Fatal(err)
	}
	return kind, limit, owner
}

// isKindError reports whether err is the memory engine's refusal of a
// request of kind asked on name, a lock of kind is.
func isKindError(err error, name string, is, asked engine.Kind) bool {
	var ae *engine.ArgumentError
	return errors.As(err, &ae) && err.Error() == engine.KindError(name, is, asked).Error()
}

func mutexRequest(name, owner string) engine.AcquireRequest {
	return engine.AcquireRequest{Name: name, Owner: owner, Attempt: owner, TTL: time.Minute}
}

func sharedRequest(name, owner string, kind engine.Kind, write bool) engine.AcquireRequest {
	r := engine.AcquireRequest{Name: name, Owner: owner, Attempt: owner, TTL: time.Minute, Kind: kind, Limit: 2, Weight: 1}
	if kind == engine.RWLock {
		r.Limit = engine.RWPermits
		if write {
			r.Weight = engine.RWPermits
		}
	}
	return r
}

// storedSemaphore makes name a free semaphore of limit 2 (a permit taken
// and given back): its kind and limit stored, nobody holding it.
func storedSemaphore(t *testing.T, ctx context.Context, e *postgres.Engine, name string) {
	t.Helper()
	if g, err := e.Acquire(ctx, sharedRequest(name, "before", engine.Semaphore, false)); err != nil || !g.Acquired {
		t.Fatalf("the first permit: %+v, %v", g, err)
	}
	if r, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "before", Kind: engine.Semaphore}); err != nil || r.Status != engine.Released {
		t.Fatalf("its release: %+v, %v", r, err)
	}
}

// TestKindRaceSetLimitMutex: a mutex's grant stalled after it wrote the
// name's row of locks (inserted it, or updated the free one a stored
// semaphore left), before its commit; meanwhile SetLimit of the name.
// SetLimit must wait for the grant and then be refused as the memory
// engine refuses SetLimit on a mutex, storing nothing: no kind made, the
// stored limit unchanged. (Schema version 8's set_limit read the row of
// locks without locking it: it did not see the uncommitted grant, stored
// its kind and limit and answered beside it. That outcome is the one of
// SetLimit before the grant, since a mutex is refused only while a shared
// lock's holders hold the name, so no exclusion was broken; version 9
// serializes the two on the row of locks, as every other shared call.)
func TestKindRaceSetLimitMutex(t *testing.T) {
	migrated(t, raceSchema)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := newPool(t)
	clearStalls(t, ctx, pool, raceSchema)
	installStall(t, ctx, pool, raceSchema, "AFTER INSERT OR UPDATE ON locks")
	for _, fresh := range []bool{true, false} {
		name := uniqueName(t)
		wantKind, wantLimit := 0, 0
		if !fresh {
			storedSemaphore(t, ctx, newEngine(t, pool, raceSchema), name)
			wantKind, wantLimit = int(engine.Semaphore), 2
		}
		m, s, waited := race(t, ctx, raceSchema, name, nil, nil,
			func(e *postgres.Engine) raceResult {
				g, err := e.Acquire(ctx, mutexRequest(name, "m"))
				return raceResult{g: g, err: err}
			},
			func(e *postgres.Engine) raceResult {
				n, err := e.SetLimit(ctx, name, 5)
				return raceResult{n: n, err: err}
			})
		if m.err != nil || !m.g.Acquired {
			t.Fatalf("fresh %t: the stalled mutex: %+v, %v", fresh, m.g, m.err)
		}
		if !waited || !isKindError(s.err, name, engine.Mutex, engine.Semaphore) {
			t.Errorf("fresh %t: SetLimit during the mutex's grant: waited %t, answered %d, %v; want it to wait, then %v",
				fresh, waited, s.n, s.err, engine.KindError(name, engine.Mutex, engine.Semaphore))
		}
		if kind, limit, owner := stored(t, ctx, pool, name); kind != wantKind || limit != wantLimit || owner != "m" {
			t.Errorf("fresh %t: stored kind %d, limit %d, holder %q; want kind %d, limit %d, held by m", fresh, kind, limit, owner, wantKind, wantLimit)
		}
	}
}

// TestKindRaceSharedMutex: a shared lock's grant (a permit, a reader, a
// writer) and a mutex's grant of one name, each stalled after its check
// and write, before its commit, while the other is sent: the other waits
// (both hold the name's row of locks while they check: the mutex FOR
// UPDATE or by its insert, the shared lock FOR KEY SHARE, inserting a free
// row, which waits for the mutex's insert) and is then refused with the
// memory engine's kind error; the loser stores nothing (a shared lock's
// refusal leaves no kind record, a mutex's no owner).
func TestKindRaceSharedMutex(t *testing.T) {
	migrated(t, raceSchema)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pool := newPool(t)
	type sharedKind struct {
		what  string
		kind  engine.Kind
		write bool
	}
	kinds := []sharedKind{{"a permit", engine.Semaphore, false}, {"a reader", engine.RWLock, false}, {"a writer", engine.RWLock, true}}

	t.Run("mutex stalled", func(t *testing.T) {
		clearStalls(t, ctx, pool, raceSchema)
		installStall(t, ctx, pool, raceSchema, "AFTER INSERT OR UPDATE ON locks")
		for _, k := range kinds {
			name := uniqueName(t)
			m, s, waited := race(t, ctx, raceSchema, name, nil, nil,
				func(e *postgres.Engine) raceResult {
					g, err := e.Acquire(ctx, mutexRequest(name, "m"))
					return raceResult{g: g, err: err}
				},
				func(e *postgres.Engine) raceResult {
					g, err := e.Acquire(ctx, sharedRequest(name, "s", k.kind, k.write))
					return raceResult{g: g, err: err}
				})
			if m.err != nil || !m.g.Acquired {
				t.Fatalf("%s: the stalled mutex: %+v, %v", k.what, m.g, m.err)
			}
			if !waited || s.g.Acquired || !isKindError(s.err, name, engine.Mutex, k.kind) {
				t.Errorf("%s during the mutex's grant: waited %t, %+v, %v", k.what, waited, s.g, s.err)
			}
			if kind, _, owner := stored(t, ctx, pool, name); kind != 0 || owner != "m" {
				t.Errorf("%s refused: stored kind %d, holder %q; want no kind, held by m", k.what, kind, owner)
			}
		}
	})

	t.Run("shared stalled", func(t *testing.T) {
		// After the kind record's insert: the shared lock's grant holds the
		// row of locks it made, and has stored its kind, uncommitted.
		clearStalls(t, ctx, pool, raceSchema)
		installStall(t, ctx, pool, raceSchema, "AFTER INSERT ON shared")
		for _, k := range kinds {
			name := uniqueName(t)
			s, m, waited := race(t, ctx, raceSchema, name, nil, nil,
				func(e *postgres.Engine) raceResult {
					g, err := e.Acquire(ctx, sharedRequest(name, "s", k.kind, k.write))
					return raceResult{g: g, err: err}
				},
				func(e *postgres.Engine) raceResult {
					g, err := e.Acquire(ctx, mutexRequest(name, "m"))
					return raceResult{g: g, err: err}
				})
			if s.err != nil || !s.g.Acquired {
				t.Fatalf("%s stalled: %+v, %v", k.what, s.g, s.err)
			}
			if !waited || m.g.Acquired || !isKindError(m.err, name, k.kind, engine.Mutex) {
				t.Errorf("a mutex during %s's grant: waited %t, %+v, %v", k.what, waited, m.g, m.err)
			}
			if kind, _, owner := stored(t, ctx, pool, name); kind != int(k.kind) || owner != "" {
				t.Errorf("the mutex refused: stored kind %d, holder %q; want kind %d, the row free", kind, owner, k.kind)
			}
		}
	})
}

// TestKindRaceSharedRenewal: a permit's holder is renewed (extend_shared)
// or its token raised (raise_shared_fence) by a call that judged it live
// by the clock it read after locking the shared row, then stalls before
// its commit (a trigger on the holder row's update) until the permit's
// original lease has ended in the database's time; meanwhile a mutex is
// asked for the name. The renewal is linearized when it read its clock,
// before the mutex's call: the mutex must then be refused as long as the
// renewed holder holds, and a mutex granted after a raise must have a
// token above the raised one. Schema version 8's mutex checked the
// holders without the shared row's lock, read the holder's old expiry,
// and was granted beside the renewed holder (exclusion broken), or under
// the raised token (tokens going backwards); version 9's _mutex_check
// locks the shared row FOR SHARE, waiting for the renewal's commit.
func TestKindRaceSharedRenewal(t *testing.T) {
	migrated(t, raceSchema)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := newPool(t)
	clearStalls(t, ctx, pool, raceSchema)
	installStall(t, ctx, pool, raceSchema, "BEFORE UPDATE ON shared_holders")

	t.Run("extend", func(t *testing.T) {
		name := uniqueName(t)
		s, m, waited := renewalRace(t, ctx, pool, raceSchema, name, extendPermit(ctx, name))
		if s.err != nil || s.n != 1 {
			t.Errorf("the stalled renewal: %+v; want extended", s)
		}
		info, err := newEngine(t, pool, raceSchema).Inspect(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if m.g.Acquired {
			t.Errorf("a mutex was granted beside the renewed permit (the mutex waited %t; the name: %+v)", waited, info)
		}
		if !waited || !isKindError(m.err, name, engine.Semaphore, engine.Mutex) {
			t.Errorf("a mutex during the renewal: waited %t, %+v, %v; want it to wait, then %v",
				waited, m.g, m.err, engine.KindError(name, engine.Semaphore, engine.Mutex))
		}
		if !info.Held || info.Kind != engine.Semaphore || len(info.Holders) != 1 || info.Holders[0].Owner != "p" {
			t.Errorf("after the race: %+v, want the renewed permit holding", info)
		}
	})

	t.Run("raise", func(t *testing.T) {
		name := uniqueName(t)
		var raised uint64
		s, m, waited := renewalRace(t, ctx, pool, raceSchema, name, func(e *postgres.Engine, token uint64) raceResult {
			raised = token + 1_000_000_000 // about 17 minutes of tokens ahead
			held, err := e.RaiseFence(ctx, engine.RaiseRequest{Name: name, Owner: "p", Token: raised, Kind: engine.Semaphore})
			r := raceResult{err: err}
			if held {
				r.n = 1
			}
			return r
		})
		if s.err != nil || s.n != 1 {
			t.Errorf("the stalled raise: %+v; want held", s)
		}
		if m.err != nil || !m.g.Acquired {
			t.Fatalf("the mutex after the permit's lease ended: %+v, %v", m.g, m.err)
		}
		if m.g.Token <= raised {
			t.Errorf("the mutex's token %d is not above the permit's raised token %d (the mutex waited %t)", m.g.Token, raised, waited)
		}
	})
}

// renewalRace grants name's permit to p for a short ttl on schema, then
// runs renew (given the permit's token) on an engine whose session stalls
// (installStall), waits until the permit's first lease has ended in the
// database's time, and asks for a mutex of the name on another engine
// (race); it returns renew's answer, the mutex's, and whether the mutex
// waited for a lock. The renewal must reach its stall while the permit
// is live: where the machine was slow enough that it ran after the lease
// ended (it then ends without stalling, finding no live hold), it grants
// again with twice the ttl, up to 8 s, and past that skips the test as
// machine too slow.
func renewalRace(t *testing.T, ctx context.Context, pool *pgxpool.Pool, schema, name string,
	renew func(e *postgres.Engine, token uint64) raceResult) (raceResult, raceResult, bool) {
	t.Helper()
	e := newEngine(t, pool, schema)
	if _, err := e.Inspect(ctx, name); err != nil { // connected
		t.Fatal(err)
	}
	for ttl := time.Second; ; ttl *= 2 {
		var (
			g   engine.Grant
			end time.Time
		)
		grant := func() {
			r := sharedRequest(name, "p", engine.Semaphore, false)
			r.TTL = ttl // the renewal is sent one round trip later
			var err error
			if g, err = e.Acquire(ctx, r); err != nil || !g.Acquired {
				t.Fatalf("the permit: %+v, %v", g, err)
			}
			if err := pool.QueryRow(ctx, `SELECT expires_at FROM `+schema+`.shared_holders WHERE name = $1 AND owner = 'p'`, name).Scan(&end); err != nil {
				t.Fatal(err)
			}
		}
		past := func() {
			waitFor(t, "the permit's first lease to end", func() bool {
				var ended bool
				return pool.QueryRow(ctx, `SELECT clock_timestamp() > $1`, end).Scan(&ended) == nil && ended
			})
		}
		s, m, waited, stalled := raceOnce(t, ctx, schema, name, grant, past,
			func(e *postgres.Engine) raceResult { return renew(e, g.Token) },
			func(e *postgres.Engine) raceResult {
				g, err := e.Acquire(ctx, mutexRequest(name, "m"))
				return raceResult{g: g, err: err}
			})
		if stalled {
			return s, m, waited
		}
		if ttl >= 8*time.Second {
			t.Skipf("machine too slow: the renewal of the permit ran after its lease ended, with ttls from 1s to %v (the last: %+v)", ttl, s)
		}
		t.Logf("the renewal ran after the permit's %v lease ended (%+v): again with %v", ttl, s, 2*ttl)
	}
}

// extendPermit returns a renewal of p's permit of name for renewalRace:
// its answer's n is 1 when it was extended.
func extendPermit(ctx context.Context, name string) func(e *postgres.Engine, _ uint64) raceResult {
	return func(e *postgres.Engine, _ uint64) raceResult {
		rs, err := e.Extend(ctx, []engine.ExtendRequest{{Name: name, Owner: "p", TTL: time.Minute, Kind: engine.Semaphore}})
		r := raceResult{err: err}
		switch {
		case err != nil:
		case rs[0].Err != nil:
			r.err = rs[0].Err
		case rs[0].Status == engine.Extended:
			r.n = 1
		}
		return r
	}
}

// TestKindRaceUpgrade: on a version 8 schema (testdata) the mutex's grant
// passes beside a shared holder whose renewal is in progress (the defect
// TestKindRaceSharedRenewal pins); Migrate to the current version, with
// that mutex and the renewed permit held across it, closes the window:
// the same race then refuses the mutex.
func TestKindRaceUpgrade(t *testing.T) {
	const schema = "kindrace_v8"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := newPool(t)
	oldSchema(t, ctx, pool, schema, "schema_v8.sql")
	installStall(t, ctx, pool, schema, "BEFORE UPDATE ON shared_holders")
	old := uniqueName(t)
	if s, m, _ := renewalRace(t, ctx, pool, schema, old, extendPermit(ctx, old)); s.err != nil || s.n != 1 || !m.g.Acquired {
		t.Fatalf("version 8: the renewal %+v; the mutex during it: %+v, %v; want both granted (the defect)", s, m.g, m.err)
	}

	upgrade(t, ctx, pool, schema)
	e := newEngine(t, pool, schema)
	// Both kept their holds across it (the broken state version 8 left).
	rs, err := e.Extend(ctx, []engine.ExtendRequest{{Name: old, Owner: "m", TTL: time.Minute}, {Name: old, Owner: "p", TTL: time.Minute, Kind: engine.Semaphore}})
	if err != nil || rs[0].Status != engine.Extended || rs[1].Status != engine.Extended {
		t.Fatalf("the holds across Migrate: %+v, %v", rs, err)
	}
	name := uniqueName(t)
	s, m, waited := renewalRace(t, ctx, pool, schema, name, extendPermit(ctx, name))
	if s.err != nil || s.n != 1 {
		t.Errorf("after Migrate: the stalled renewal: %+v; want extended", s)
	}
	if m.g.Acquired || !waited || !isKindError(m.err, name, engine.Semaphore, engine.Mutex) {
		t.Errorf("after Migrate: the mutex during the renewal: waited %t, %+v, %v; want it to wait, then refused", waited, m.g, m.err)
	}
	if err := postgres.Drop(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
}

// TestTokensAcrossKindsAfterDeletion: on a name used as a shared lock (a
// semaphore, an RW lock) and as a mutex in turn, each grant's token is
// above every earlier grant's of either kind, also after a release that
// deletes the name's row of locks (a mutex's, a set's, a queued waiter's
// leave after the release, Sweep of an expired lease) while the shared
// lock's row keeps an older high-water; and Inspect's HighWater is never
// below the last token granted. (Schema version 8 kept the mutex's
// high-water only in the deleted row: Inspect then showed the shared
// lock's older one. Version 9 carries it to the shared row when it
// deletes the row of locks.)
func TestTokensAcrossKindsAfterDeletion(t *testing.T) {
	migrated(t, raceSchema)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := newPool(t)
	e := newEngine(t, pool, raceSchema)
	for _, kind := range []engine.Kind{engine.Semaphore, engine.RWLock} {
		name := uniqueName(t)
		var last uint64
		grant := func(what string, r engine.AcquireRequest) uint64 {
			t.Helper()
			g, err := e.Acquire(ctx, r)
			if err != nil || !g.Acquired || g.Token <= last {
				t.Fatalf("%s %s: %+v, %v; want granted above %d", kind, what, g, err, last)
			}
			last = g.Token
			return g.Token
		}
		release := func(what string, r engine.ReleaseRequest) {
			t.Helper()
			if res, err := e.Release(ctx, r); err != nil || res.Status != engine.Released {
				t.Fatalf("%s %s: %+v, %v", kind, what, res, err)
			}
		}
		check := func(after string, rowGone bool) {
			t.Helper()
			if rowGone {
				if n := queryCount(t, ctx, `SELECT count(*) FROM `+raceSchema+`.locks WHERE name = $1`, name); n != 0 {
					t.Fatalf("%s after %s: the row of locks is still there", kind, after)
				}
			}
			info, err := e.Inspect(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if info.HighWater < last {
				t.Errorf("%s after %s: Inspect's HighWater %d, below the last token %d", kind, after, info.HighWater, last)
			}
		}
		shared := sharedRequest(name, "s", kind, true)

		grant("a shared grant", shared)
		release("its release", engine.ReleaseRequest{Name: name, Owner: "s", Kind: kind})
		check("the shared lock's release", false)

		grant("a mutex", mutexRequest(name, "m"))
		release("the mutex's release", engine.ReleaseRequest{Name: name, Owner: "m"})
		check("the mutex's release", true)

		grant("a shared grant after the mutex's row went", shared)
		release("its release", engine.ReleaseRequest{Name: name, Owner: "s", Kind: kind})

		mg, err := e.AcquireMulti(ctx, []engine.AcquireRequest{mutexRequest(name, "set"), mutexRequest(name+"/other", "set")})
		if err != nil || !mg.Acquired || mg.Tokens[0] <= last {
			t.Fatalf("%s a set: %+v, %v; want granted above %d", kind, mg, err, last)
		}
		last = mg.Tokens[0]
		if _, err := e.ReleaseMulti(ctx, setReleases("set", name, name+"/other")); err != nil {
			t.Fatal(err)
		}
		check("the set's release", true)
		grant("a shared grant after the set", shared)
		release("its release", engine.ReleaseRequest{Name: name, Owner: "s", Kind: kind})

		// A waiter queued while a mutex holds the name keeps the row after
		// the release; its leave deletes it.
		grant("a mutex with a waiter queued", mutexRequest(name, "h"))
		w := mutexRequest(name, "w")
		w.Waiting, w.Waiter, w.WaiterTTL = true, "w", time.Minute
		if g, err := e.Acquire(ctx, w); err != nil || g.Acquired || !g.Queued {
			t.Fatalf("%s the waiter: %+v, %v", kind, g, err)
		}
		release("the held mutex's release", engine.ReleaseRequest{Name: name, Owner: "h"})
		if err := e.Leave(ctx, engine.LeaveRequest{Name: name, Waiter: "w"}); err != nil {
			t.Fatal(err)
		}
		check("the waiter's leave", true)
		grant("a shared grant after the leave", shared)
		release("its release", engine.ReleaseRequest{Name: name, Owner: "s", Kind: kind})

		// An expired mutex's row deleted by Sweep.
		short := mutexRequest(name, "x")
		short.TTL = 50 * time.Millisecond
		grant("a short mutex", short)
		waitFor(t, "the short mutex to expire", func() bool {
			info, err := e.Inspect(ctx, name)
			return err == nil && !info.Held
		})
		if _, err := e.Sweep(ctx, 100000); err != nil {
			t.Fatal(err)
		}
		check("Sweep", true)
		grant("a shared grant after Sweep", shared)
		release("its release", engine.ReleaseRequest{Name: name, Owner: "s", Kind: kind})
		grant("a mutex at the end", mutexRequest(name, "m"))
		release("its release", engine.ReleaseRequest{Name: name, Owner: "m"})
		check("the last release", true)
	}
}

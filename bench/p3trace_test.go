package main

import (
	"context"
	"crypto/md5"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	pgengine "github.com/distlock/distlock/engine/postgres"
	"github.com/distlock/distlock/engine/postgres/pgtest"
)

// TestTraceP3 is a diagnostic, not a check: P3 (16 Clients, each with its
// own engine and pool, contend for one name, hold 1 ms) on a PostgreSQL
// whose queue and lock rows log every change (triggers writing to
// trace.ev), then the figures that tell what a slow wait was made of. It
// runs only when DISTLOCK_TRACE_P3 is set, to the traffic's duration:
//
//	cd bench && DISTLOCK_TRACE_P3=15s GOWORK=off go test -run TestTraceP3 -v .
//
// It prints: the waits (from each granted Acquire call's start, after a
// 1 s warm-up); for the waits at or above their p98, how many grants came
// meanwhile (a fair queue of 16: 15); each hand-off cut into the release
// call to the release's row change, that to the head's acquire statement's
// start (the NOTIFY's delivery, the listener, the wait loop), that statement
// to its grant, and the grant to Acquire's return; reservations that ended
// without their waiter's grant and heads that came after their
// reservation's end; and the slowest waits with their waiter's queue
// entries. The triggers add work to every statement: compare figures of
// traced runs with each other, not with the benchmark's.
func TestTraceP3(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("DISTLOCK_TRACE_P3"))
	if err != nil {
		t.Skip("DISTLOCK_TRACE_P3 (a duration) not set: a diagnostic run on demand")
	}
	ctx := context.Background()
	s, err := pgtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	admin, err := pgxpool.New(ctx, s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := pgengine.Migrate(ctx, admin, pgengine.DefaultSchema); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, strings.ReplaceAll(traceSQL, "{{S}}", pgengine.DefaultSchema)); err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	waits := make(chan map[string]int, 1)
	go func() { waits <- sampleWaits(sctx, admin) }()
	handed := make(chan []time.Time, 1)
	go func() { handed <- listenHanded(sctx, t, s.URL()) }()
	grants := traceContend(t, ctx, s.URL(), d)
	stop()
	evs := traceEvents(t, ctx, admin)
	reportTrace(t, grants, evs)
	reportDelivery(t, evs, <-handed)
	t.Logf("backends' wait events, sampled every 5 ms (active backends other than the sampler): %v", <-waits)
}

// traceSQL logs the queue's entries and exits, heartbeats, and every
// change of a lock's owner or reservation, with the statement's start and
// the call it came from.
const traceSQL = `
CREATE SCHEMA IF NOT EXISTS trace;
CREATE TABLE IF NOT EXISTS trace.ev (id bigserial, ts timestamptz, st timestamptz DEFAULT statement_timestamp(),
  xid bigint DEFAULT txid_current(), op text, waiter text, ticket bigint, owner text, token bigint, rv text, orv text,
  q text DEFAULT left(current_query(), 80));
CREATE OR REPLACE FUNCTION trace.waiters() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    INSERT INTO trace.ev (ts, op, waiter, ticket) VALUES (clock_timestamp(), 'exit', OLD.waiter, OLD.ticket);
    RETURN OLD;
  END IF;
  INSERT INTO trace.ev (ts, op, waiter, ticket) VALUES (clock_timestamp(), CASE TG_OP WHEN 'INSERT' THEN 'entry' ELSE 'beat' END, NEW.waiter, NEW.ticket);
  RETURN NEW;
END $$;
CREATE OR REPLACE FUNCTION trace.locks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    INSERT INTO trace.ev (ts, op, owner, orv) VALUES (clock_timestamp(), 'deleted', OLD.owner, OLD.reserved_for);
    RETURN OLD;
  END IF;
  IF TG_OP = 'UPDATE' AND NEW.owner IS NOT DISTINCT FROM OLD.owner AND NEW.reserved_for IS NOT DISTINCT FROM OLD.reserved_for THEN
    RETURN NEW;
  END IF;
  INSERT INTO trace.ev (ts, op, owner, token, rv, orv)
  VALUES (clock_timestamp(), CASE WHEN NEW.owner IS NULL THEN 'free' ELSE 'granted' END, NEW.owner, NEW.token, NEW.reserved_for,
          CASE WHEN TG_OP = 'UPDATE' THEN OLD.reserved_for END);
  RETURN NEW;
END $$;
DROP TRIGGER IF EXISTS trace ON {{S}}.waiters;
CREATE TRIGGER trace AFTER INSERT OR UPDATE OR DELETE ON {{S}}.waiters FOR EACH ROW EXECUTE FUNCTION trace.waiters();
DROP TRIGGER IF EXISTS trace ON {{S}}.locks;
CREATE TRIGGER trace AFTER INSERT OR UPDATE OR DELETE ON {{S}}.locks FOR EACH ROW EXECUTE FUNCTION trace.locks();
`

// traceGrant is one grant as its goroutine saw it.
type traceGrant struct {
	worker         int
	call, got, rel time.Time
	token          uint64
}

// traceContend runs 16 Clients on one name for d and returns their grants
// in grant order.
func traceContend(t *testing.T, ctx context.Context, url string, d time.Duration) []traceGrant {
	const workers = 16
	clients := make([]*distlock.Client, workers)
	for i := range clients {
		cfg, err := pgxpool.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		cfg.MaxConns = p3PoolSize
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		eng, err := pgengine.New(pool)
		if err != nil {
			t.Fatal(err)
		}
		defer eng.Close()
		clients[i] = distlock.New(eng)
		defer clients[i].Close()
	}
	var mu sync.Mutex
	var out []traceGrant
	cctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			for cctx.Err() == nil {
				call := time.Now()
				l, err := clients[i].Acquire(cctx, "p3")
				if err != nil {
					return
				}
				got := time.Now()
				time.Sleep(s3Hold)
				rel := time.Now()
				_ = l.Release(context.WithoutCancel(ctx))
				mu.Lock()
				out = append(out, traceGrant{worker: i, call: call, got: got, rel: rel, token: l.Token()})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	sort.Slice(out, func(i, j int) bool { return out[i].got.Before(out[j].got) })
	return out
}

// traceEv is one row of trace.ev.
type traceEv struct {
	ts, st                        time.Time
	xid, ticket, token            int64
	op, waiter, owner, rv, orv, q string
}

func traceEvents(t *testing.T, ctx context.Context, db *pgxpool.Pool) []traceEv {
	rows, err := db.Query(ctx, `SELECT ts, st, xid, coalesce(ticket, 0), coalesce(token, 0), op, coalesce(waiter, ''),
	  coalesce(owner, ''), coalesce(rv, ''), coalesce(orv, ''), q FROM trace.ev ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var evs []traceEv
	for rows.Next() {
		var e traceEv
		if err := rows.Scan(&e.ts, &e.st, &e.xid, &e.ticket, &e.token, &e.op, &e.waiter, &e.owner, &e.rv, &e.orv, &e.q); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"acquire", "release", "extend", "leave"} {
			if strings.Contains(e.q, "."+f+"(") {
				e.q = f
			}
		}
		evs = append(evs, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}

// reportTrace prints the figures (see TestTraceP3).
func reportTrace(t *testing.T, all []traceGrant, evs []traceEv) {
	if len(all) < 2 {
		t.Fatalf("%d grants", len(all))
	}
	// A waiter id is its worker's from the grant that took it out of the
	// queue (the same transaction as the grant of the worker's token).
	byToken := map[int64]int{}
	for _, g := range all {
		byToken[int64(g.token)] = g.worker
	}
	exits := map[int64]string{}   // transaction -> the waiter it took out
	grantedIn := map[int64]bool{} // transactions that granted the lock
	for _, e := range evs {
		switch e.op {
		case "exit":
			exits[e.xid] = e.waiter
		case "granted":
			grantedIn[e.xid] = true
		}
	}
	workerOf := map[string]int{}
	grantAt := map[int64]traceEv{}
	for _, e := range evs {
		if e.op == "granted" {
			grantAt[e.token] = e
			if w, ok := exits[e.xid]; ok {
				workerOf[w] = byToken[e.token]
			}
		}
	}
	var grants []traceGrant // after the warm-up
	for _, g := range all {
		if g.call.After(all[0].call.Add(time.Second)) {
			grants = append(grants, g)
		}
	}
	waits := make([]time.Duration, len(grants))
	for i, g := range grants {
		waits[i] = g.got.Sub(g.call)
	}
	t.Logf("%d grants, %.0f/s; waits %s", len(grants), float64(len(grants))/grants[len(grants)-1].got.Sub(grants[0].got).Seconds(), quantiles(waits))
	meanwhile := func(g traceGrant) int {
		n := 0
		for _, o := range all {
			if o.got.After(g.call) && o.got.Before(g.got) {
				n++
			}
		}
		return n
	}
	p98 := sorted(waits)[len(waits)*98/100]
	hist := map[int]int{}
	for i, g := range grants {
		if waits[i] >= p98 {
			hist[meanwhile(g)]++
		}
	}
	t.Logf("grants meanwhile, waits >= p98 (%v): %v", p98.Round(time.Millisecond), hist)

	// Each hand-off: the release call, its row change ('free'), the head's
	// acquire statement's start, its grant, Acquire's return.
	var toRelease, toStatement, toGrant, toReturn []time.Duration
	for i := 1; i < len(all); i++ {
		prev, g := all[i-1], all[i]
		ge, ok := grantAt[int64(g.token)]
		if !ok {
			continue
		}
		for _, e := range evs {
			if e.op == "free" && e.q == "release" && !e.ts.Before(prev.rel) && !e.ts.After(ge.ts) {
				toRelease = append(toRelease, e.ts.Sub(prev.rel))
				toStatement = append(toStatement, ge.st.Sub(e.ts))
				toGrant = append(toGrant, ge.ts.Sub(ge.st))
				toReturn = append(toReturn, g.got.Sub(ge.ts))
				break
			}
		}
	}
	t.Logf("release call -> release's row change: %s", quantiles(toRelease))
	t.Logf("release's row change -> head's acquire statement starts: %s", quantiles(toStatement))
	t.Logf("head's acquire statement start -> its grant: %s", quantiles(toGrant))
	t.Logf("grant -> Acquire returns: %s", quantiles(toReturn))

	// Reservations: how long from reserved to granted; those that ended
	// otherwise (by which call).
	reserved := map[string]time.Time{}
	var toConfirm []time.Duration
	late, lost := 0, map[string]int{}
	for _, e := range evs {
		if e.op == "free" && e.rv != "" && e.rv != e.orv {
			reserved[e.rv] = e.ts
		}
		if e.orv != "" && e.orv != e.rv {
			at, ok := reserved[e.orv]
			delete(reserved, e.orv)
			switch {
			case !ok:
			case grantedIn[e.xid] && exits[e.xid] == e.orv:
				toConfirm = append(toConfirm, e.ts.Sub(at))
				if e.ts.Sub(at) >= engine.ReserveTTL {
					late++
				}
			default:
				lost[e.q]++
			}
		}
	}
	t.Logf("reserved -> the head's grant: %s; heads granted after the reservation's end: %d; reservations ended otherwise, by call: %v", quantiles(toConfirm), late, lost)

	idx := make([]int, len(grants))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return waits[idx[a]] > waits[idx[b]] })
	for _, i := range idx[:min(10, len(idx))] {
		g := grants[i]
		var seen []string
		for _, e := range evs {
			if e.ts.Before(g.call) || e.ts.After(g.got) {
				continue
			}
			if w, ok := workerOf[e.waiter]; ok && w == g.worker && e.op != "beat" {
				seen = append(seen, fmt.Sprintf("%s t%d by %s +%v", e.op, e.ticket, e.q, e.ts.Sub(g.call).Round(100*time.Microsecond)))
			}
			if w, ok := workerOf[e.rv]; ok && w == g.worker && e.op == "free" {
				seen = append(seen, fmt.Sprintf("reserved +%v", e.ts.Sub(g.call).Round(100*time.Microsecond)))
			}
		}
		t.Logf("wait %v (worker %d), %d grants meanwhile: %s", waits[i].Round(time.Millisecond), g.worker, meanwhile(g), strings.Join(seen, ", "))
	}
}

// listenHanded receives, on a connection of its own, the 'handed'
// notifications every release that wakes a queued head sends on the
// schema's channel, in the same commit as the head's wake-up on its
// engine's own channel, until ctx ends; it returns when each arrived.
func listenHanded(ctx context.Context, t *testing.T, url string) []time.Time {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Error(err)
		return nil
	}
	defer conn.Close(context.WithoutCancel(ctx))
	ch := fmt.Sprintf("distlock_%x", md5.Sum([]byte(pgengine.DefaultSchema)))[:len("distlock_")+20]
	if _, err := conn.Exec(ctx, "LISTEN "+ch); err != nil {
		t.Error(err)
		return nil
	}
	var at []time.Time
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return at
		}
		if strings.HasSuffix(n.Payload, " handed") {
			at = append(at, time.Now())
		}
	}
}

// reportDelivery splits the release's row change -> head's statement
// segment at the arrival of the release's 'handed' notification at a
// listener of its own: the server's delivery of the commit's
// notifications, then the head's side (its engine's listener, the wait
// loop, the pool, the statement's send).
func reportDelivery(t *testing.T, evs []traceEv, handed []time.Time) {
	var delivered, rest []time.Duration
	next := 0
	for i, e := range evs {
		if e.op != "free" || e.q != "release" || e.rv == "" {
			continue
		}
		for next < len(handed) && handed[next].Before(e.ts) {
			next++
		}
		if next == len(handed) {
			break
		}
		for _, g := range evs[i+1:] {
			if g.op == "granted" {
				if g.st.After(handed[next]) {
					delivered = append(delivered, handed[next].Sub(e.ts))
					rest = append(rest, g.st.Sub(handed[next]))
				}
				break
			}
		}
		next++
	}
	t.Logf("release's row change -> its notification received (a listener of the harness's own): %s", quantiles(delivered))
	t.Logf("that notification received -> the head's acquire statement starts: %s", quantiles(rest))
}

// sampleWaits counts, every 5 ms until ctx ends, the wait events of the
// server's active backends (pg_stat_activity): lock waits on the rows,
// LWLocks of the notification queue, and so on ("running": none).
func sampleWaits(ctx context.Context, db *pgxpool.Pool) map[string]int {
	out := map[string]int{}
	for ctx.Err() == nil {
		rows, err := db.Query(ctx, `SELECT coalesce(wait_event_type || ':' || wait_event, 'running') FROM pg_stat_activity
		  WHERE state = 'active' AND pid <> pg_backend_pid() AND backend_type = 'client backend'`)
		if err == nil {
			for rows.Next() {
				var w string
				if rows.Scan(&w) == nil {
					out[w]++
				}
			}
			rows.Close()
		}
		time.Sleep(5 * time.Millisecond)
	}
	return out
}

func sorted(d []time.Duration) []time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s
}

// quantiles formats d's count, p50, p90, p99 and max.
func quantiles(d []time.Duration) string {
	if len(d) == 0 {
		return "none"
	}
	s := sorted(d)
	q := func(f float64) time.Duration { return s[int(f*float64(len(s)-1))].Round(10 * time.Microsecond) }
	return fmt.Sprintf("n %d, p50 %v, p90 %v, p99 %v, max %v", len(s), q(.5), q(.9), q(.99), s[len(s)-1].Round(10*time.Microsecond))
}

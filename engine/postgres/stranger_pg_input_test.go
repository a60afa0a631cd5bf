package postgres_test

// A stranger's bad input to the engine's admin paths (engine.Lister,
// engine.LeakFinder, engine.ForceReleaser, engine.HolderReleaser, Inspect,
// Sweep), called as the server and the CLI call them: a clear typed error
// and nothing changed, or the answer the contract gives.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
)

// TestStrangerPGAdminHugeLimit: a page limit of 2^31 or more (an int on
// the Go side) lists every lock, finds every leak and sweeps every row,
// as a limit of 100 would. Before the fix the limit was cut to 32 bits:
// 2^32 became LIMIT 0 (List and Leaks answered an empty last page, "no
// lock held", while two were; Sweep deleted nothing) and 2^31 a negative
// LIMIT (a backend error).
func TestStrangerPGAdminHugeLimit(t *testing.T) {
	const schema = "stranger_huge_limit"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := newPool(t)
	e := newEngine(t, pool, schema)
	c := distlock.New(e)
	defer c.Close()
	base := uniqueName(t) + "/"
	m, err := c.Acquire(ctx, base+"mutex", distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release(ctx)
	s, err := c.Semaphore(base+"sem", 2).Acquire(ctx, distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release(ctx)
	for _, limit := range []int{1 << 31, 1 << 32, 1<<32 + 1, int(^uint(0) >> 1)} {
		infos, next, err := e.List(ctx, base, "", limit)
		if err != nil || len(infos) != 2 || next != "" {
			t.Fatalf("List with limit %d: %d locks, next %q, %v; want both held locks, no next page", limit, len(infos), next, err)
		}
		// A negative maxTTL: every held lock's expiry is beyond it.
		leaks, next, err := e.Leaks(ctx, base, -time.Hour, "", limit)
		if err != nil || len(leaks) != 2 || next != "" {
			t.Fatalf("Leaks with limit %d: %+v, next %q, %v; want both held locks, no next page", limit, leaks, next, err)
		}
	}
	// A row of locks whose lease ended: Sweep with a huge limit deletes it.
	x, err := c.Acquire(ctx, base+"expired", distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE `+schema+`.locks SET expires_at = clock_timestamp() - interval '1 second' WHERE name = $1`, x.Name()); err != nil {
		t.Fatal(err)
	}
	if n, err := e.Sweep(ctx, 1<<32); err != nil || n < 1 {
		t.Fatalf("Sweep(1<<32) over an expired row: %d, %v; want it deleted", n, err)
	}
	var rows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+schema+`.locks WHERE name = $1`, x.Name()).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("the expired row after Sweep: %d rows, %v", rows, err)
	}
}

// TestStrangerPGAdminInvalidUTF8: a prefix, cursor, name or owner that is
// not UTF-8 (PostgreSQL's UTF8 text cannot hold it; distlock's names are
// UTF-8) is refused by the engine with an *engine.ArgumentError before
// anything is sent, as a NUL byte is, and changes nothing. Before the fix
// List, Leaks, ForceRelease and ForceReleaseHolder sent it and returned
// PostgreSQL's error (SQLSTATE 22021, a backend error to the caller).
func TestStrangerPGAdminInvalidUTF8(t *testing.T) {
	const schema = "stranger_utf8"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e := newEngine(t, newPool(t), schema)
	c := distlock.New(e)
	defer c.Close()
	name := uniqueName(t)
	l, err := c.Acquire(ctx, name, distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	bad := name + "\xff"
	for what, call := range map[string]func() error{
		"List prefix":        func() error { _, _, err := e.List(ctx, bad, "", 10); return err },
		"List cursor":        func() error { _, _, err := e.List(ctx, name, bad, 10); return err },
		"Leaks prefix":       func() error { _, _, err := e.Leaks(ctx, bad, time.Hour, "", 10); return err },
		"Leaks cursor":       func() error { _, _, err := e.Leaks(ctx, name, time.Hour, bad, 10); return err },
		"Inspect":            func() error { _, err := e.Inspect(ctx, bad); return err },
		"ForceRelease":       func() error { _, err := e.ForceRelease(ctx, bad); return err },
		"ForceReleaseHolder": func() error { _, err := e.ForceReleaseHolder(ctx, name, l.Owner()+"\xff"); return err },
	} {
		var ae *engine.ArgumentError
		if err := call(); !errors.As(err, &ae) {
			t.Errorf("%s with invalid UTF-8: %T %v; want an *engine.ArgumentError", what, err, err)
		}
	}
	info, err := e.Inspect(ctx, name)
	if err != nil || !info.Held || info.Owner != l.Owner() || info.Token != l.Token() {
		t.Fatalf("the lock after the refused calls: %+v, %v; want still held by %s", info, err, l.Owner())
	}
}

// TestStrangerPGHolderReleaseEmptyOwner: ForceReleaseHolder (an
// engine.HolderReleaser, called by a server or a tool on the engine
// itself) with the owner "" frees one holder by owner: "" holds nothing,
// so it reports false and changes nothing, as the memory engine does
// (the contract: "when it did not, nothing changed"). Before the fix ""
// meant "every holder" in force_release and force_release_shared, and the
// call freed the mutex's holder and every permit's holder, telling them
// they were taken over.
func TestStrangerPGHolderReleaseEmptyOwner(t *testing.T) {
	const schema = "stranger_utf8"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e := newEngine(t, newPool(t), schema)
	c := distlock.New(e)
	defer c.Close()
	name := uniqueName(t)
	m, err := c.Acquire(ctx, name+"-mutex", distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release(ctx)
	s, err := c.Semaphore(name+"-sem", 2).Acquire(ctx, distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release(ctx)
	for _, l := range []*distlock.Lease{m, s} {
		held, err := e.ForceReleaseHolder(ctx, l.Name(), "")
		if err != nil || held {
			t.Errorf("ForceReleaseHolder(%q, \"\"): %v, %v; want false (nobody holds as \"\"), nothing changed", l.Name(), held, err)
		}
		info, err := e.Inspect(ctx, l.Name())
		if err != nil || !info.Held {
			t.Fatalf("%s after ForceReleaseHolder with no owner: %+v, %v; want still held by %s", l.Name(), info, err, l.Owner())
		}
	}
	// The holders' next renewals: still held, not taken over.
	for _, l := range []*distlock.Lease{m, s} {
		if err := l.Extend(ctx, time.Minute); err != nil {
			t.Fatalf("%s's holder after ForceReleaseHolder with no owner: %v; want still held", l.Name(), err)
		}
	}
}

// TestStrangerPGLatchCountBelowOne: the engine's SetCount (engine.Latcher:
// "count (at least 1)") with 0 or a negative count is an
// *engine.ArgumentError before anything is sent, and no latch is made.
// Before the fix PostgreSQL's CHECK (count > 0) refused it with SQLSTATE
// 23514, a backend error to the caller.
func TestStrangerPGLatchCountBelowOne(t *testing.T) {
	const schema = "stranger_utf8"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e := newEngine(t, newPool(t), schema)
	name := uniqueName(t)
	for _, n := range []int64{0, -1, -1 << 62} {
		var ae *engine.ArgumentError
		if set, err := e.SetCount(ctx, name, n); set || !errors.As(err, &ae) {
			t.Errorf("SetCount(%d): %v, %T %v; want an *engine.ArgumentError", n, set, err, err)
		}
		if c, err := e.Count(ctx, name); c != 0 || err != nil {
			t.Fatalf("the latch after SetCount(%d): %d, %v; want none", n, c, err)
		}
	}
}

package postgres_test

// A stranger's acceptance tests of the engine's admin paths across kinds
// (Leaks, force-release seen through an election's Proclaim), on the test
// binary's real server.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/postgres"
)

const strangerAdminSchema = "stranger_admin"

// TestStrangerPGLeaksSharedHolders: Leaks (engine.LeakFinder) reports a
// held lock whose expiry is beyond maxTTL "on every kind": a semaphore's
// permit and an RW lock's reader whose rows were made to expire in ten
// years (a hand-made UPDATE; distlock never writes one) are leaks as a
// mutex's row is, one Leak per name, paged by name; the Leaks call changes
// nothing. Before the fix Leaks read only the mutexes' table, and the
// shared holders' leaks were never reported.
func TestStrangerPGLeaksSharedHolders(t *testing.T) {
	migrated(t, strangerAdminSchema)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := newPool(t)
	e := newEngine(t, pool, strangerAdminSchema)
	c := distlock.New(e)
	defer c.Close()
	base := uniqueName(t) + "/"
	mx, sem, rw, ok := base+"a-mutex", base+"b-sem", base+"c-rw", base+"d-fine"
	for _, l := range []func() (*distlock.Lease, error){
		func() (*distlock.Lease, error) { return c.Acquire(ctx, mx, distlock.WithTTL(time.Minute)) },
		func() (*distlock.Lease, error) {
			return c.Semaphore(sem, 3).Acquire(ctx, distlock.WithTTL(time.Minute))
		},
		func() (*distlock.Lease, error) {
			return c.Semaphore(sem, 3).Acquire(ctx, distlock.WithTTL(time.Minute))
		},
		func() (*distlock.Lease, error) { return c.RWMutex(rw).RLock(ctx, distlock.WithTTL(time.Minute)) },
		func() (*distlock.Lease, error) { return c.Semaphore(ok, 2).Acquire(ctx, distlock.WithTTL(time.Minute)) },
	} {
		lease, err := l()
		if err != nil {
			t.Fatal(err)
		}
		defer lease.Release(context.Background())
	}
	// A fine permit beside a leaked one on the same name: the name is one leak.
	for _, u := range []struct{ q, name string }{
		{`UPDATE ` + strangerAdminSchema + `.locks SET expires_at = clock_timestamp() + interval '10 years' WHERE name = $1`, mx},
		{`UPDATE ` + strangerAdminSchema + `.shared_holders SET expires_at = clock_timestamp() + interval '10 years'
		  WHERE name = $1 AND owner = (SELECT min(owner) FROM ` + strangerAdminSchema + `.shared_holders WHERE name = $1)`, sem},
		{`UPDATE ` + strangerAdminSchema + `.shared_holders SET expires_at = clock_timestamp() + interval '10 years' WHERE name = $1`, rw},
	} {
		q := u.q
		tag, err := pool.Exec(ctx, q, u.name)
		if err != nil || tag.RowsAffected() != 1 {
			t.Fatalf("%s: %v, %d rows", q, err, tag.RowsAffected())
		}
	}
	before := map[string]engine.Info{}
	for _, n := range []string{mx, sem, rw, ok} {
		info, err := e.Inspect(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		before[n] = info
	}
	var got []engine.Leak
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatalf("Leaks pages without end: %+v", got)
		}
		leaks, next, err := e.Leaks(ctx, base, 2*time.Minute, cursor, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(leaks) > 1 {
			t.Fatalf("a page of limit 1 with %d leaks: %+v", len(leaks), leaks)
		}
		got = append(got, leaks...)
		if next == "" {
			break
		}
		cursor = next
	}
	var names []string
	for _, l := range got {
		names = append(names, l.Name)
		if l.Key != l.Name || l.Kind != engine.LeakLock || l.TTL < 24*time.Hour {
			t.Errorf("leak %+v: want Key = Name, Kind %q, a TTL of about ten years", l, engine.LeakLock)
		}
	}
	if want := []string{mx, sem, rw}; !equalStrings(names, want) {
		t.Fatalf("Leaks found %q, want %q (a mutex's, a semaphore's permit's and a reader's ten-year leases)", names, want)
	}
	if leaks, _, err := e.Leaks(ctx, base, 20*365*24*time.Hour, "", 10); err != nil || len(leaks) != 0 {
		t.Fatalf("Leaks with a maxTTL of 20 years: %+v, %v; want none", leaks, err)
	}
	for _, n := range []string{mx, sem, rw, ok} {
		info, err := e.Inspect(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if info.Held != before[n].Held || info.Token != before[n].Token || len(info.Holders) != len(before[n].Holders) {
			t.Fatalf("%s changed across Leaks: %+v, was %+v", n, info, before[n])
		}
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestStrangerPGProclaimAfterForceRelease: an election's leader freed by
// a force-release (ForceRelease, or ForceReleaseHolder by its owner) that
// then Proclaims is told its leadership was taken over
// (LostError.Cause TakenOver, as its next renewal would say and as the
// memory engine's SetMetadata answers), not that it expired: its ttl was
// a minute. Before schema version 11, set_metadata answered 2 (missing)
// for a force-released holder, and the Client recorded the loss as
// Expired.
func TestStrangerPGProclaimAfterForceRelease(t *testing.T) {
	migrated(t, strangerAdminSchema)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	leader := strangerAdminClient(t, "stranger-proclaim-leader")
	admin := strangerAdminClient(t, "stranger-proclaim-admin")
	for _, how := range []string{"ForceRelease", "ForceReleaseHolder"} {
		name := uniqueName(t) + "-" + how
		ld, err := leader.Campaign(ctx, name, "v1", distlock.WithTTL(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		switch how {
		case "ForceRelease":
			if ok, err := admin.ForceRelease(ctx, name); !ok || err != nil {
				t.Fatalf("ForceRelease: %v, %v", ok, err)
			}
		default:
			if err := admin.ForceReleaseHolder(ctx, name, ld.Lease().Owner()); err != nil {
				t.Fatalf("ForceReleaseHolder: %v", err)
			}
		}
		err = ld.Proclaim(ctx, "v2")
		if !errors.Is(err, distlock.ErrNotHeld) && !errors.Is(err, distlock.ErrLeaseLost) {
			t.Fatalf("%s: Proclaim after the force-release: %v, want not held / lost", how, err)
		}
		var lost *distlock.LostError
		if !errors.As(ld.Err(), &lost) || lost.Cause != distlock.TakenOver {
			t.Fatalf("%s: Proclaim answered %v; the leadership ended with %v, want a *LostError with cause TakenOver (a force-release freed it, its ttl had a minute left)", how, err, ld.Err())
		}
		select {
		case <-ld.Done():
		default:
			t.Fatalf("%s: the leadership's Done is open after its loss was reported", how)
		}
		if l, err := admin.Leader(ctx, name); !errors.Is(err, distlock.ErrNoLeader) {
			t.Fatalf("%s: Leader after the force-release: %+v, %v; want none (Proclaim changed nothing)", how, l, err)
		}
	}
}

func strangerAdminClient(t *testing.T, app string) *distlock.Client {
	t.Helper()
	c := distlock.New(newEngine(t, newPool(t, "application_name="+app), strangerAdminSchema))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestStrangerPGProclaimUpgrade: on a version 10 schema
// (testdata/schema_v10.sql) a force-released leader's Proclaim is told
// the leadership expired; Migrate brings it to version 11 with a leader
// elected across it, and then that leader, force-released, is told taken
// over.
func TestStrangerPGProclaimUpgrade(t *testing.T) {
	const schema = "stranger_upgrade_v10"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := newPool(t)
	oldSchema(t, ctx, pool, schema, "schema_v10.sql")
	c := distlock.New(newEngine(t, newPool(t, "application_name=stranger-upgrade-v10"), schema))
	defer c.Close()
	proclaimLost := func(ld *distlock.Leadership) distlock.LossCause {
		t.Helper()
		if ok, err := c.ForceRelease(ctx, ld.Name()); !ok || err != nil {
			t.Fatalf("ForceRelease: %v, %v", ok, err)
		}
		_ = ld.Proclaim(ctx, "v2")
		var lost *distlock.LostError
		if !errors.As(ld.Err(), &lost) {
			t.Fatalf("after a Proclaim of a force-released leader: %v, want a *LostError", ld.Err())
		}
		return lost.Cause
	}
	name := uniqueName(t)
	old, err := c.Campaign(ctx, name+"-old", "v1", distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if cause := proclaimLost(old); cause != distlock.Expired {
		t.Fatalf("version 10: a force-released leader's Proclaim: lost %v, want Expired (the flaw version 11 mends)", cause)
	}
	across, err := c.Campaign(ctx, name+"-across", "v1", distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	upgrade(t, ctx, pool, schema)
	if cause := proclaimLost(across); cause != distlock.TakenOver {
		t.Fatalf("after Migrate to version %d: a force-released leader's Proclaim: lost %v, want TakenOver", postgres.SchemaVersion, cause)
	}
}

package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/postgres"
)

// TestQuotedInput: names, owners and metadata full of SQL's quoting
// characters travel as parameters: they are stored and read back as they
// are, and list finds them; so do a set's arrays of them.
func TestQuotedInput(t *testing.T) {
	const schema = "input"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e := newEngine(t, newPool(t), schema)
	c := distlock.New(e)
	defer c.Close()
	for _, name := range []string{
		`it's "quoted"; DROP TABLE input.locks; --`,
		`back\slash\\ and \x00-looking text`,
		`$$ dollar $$ quotes $1 $2`,
		"ünïcødé ✓ 名前",
		strings.Repeat("'", distlock.MaxNameLen),
	} {
		meta := name + ` metadata ' " \ $$`
		l, err := c.TryAcquire(ctx, name, distlock.WithMetadata(meta), distlock.WithOwner(`owner "'`+name[:min(8, len(name))]))
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		info, err := c.Inspect(ctx, name)
		if err != nil || !info.Held || info.Metadata != meta || info.Owner != l.Owner() || info.Token != l.Token() {
			t.Fatalf("%q: %+v, %v", name, info, err)
		}
		infos, _, err := e.List(ctx, name, "", 10)
		if err != nil || len(infos) != 1 || infos[0].Name != name || infos[0].Metadata != meta {
			t.Fatalf("list %q: %+v, %v", name, infos, err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatalf("%q: %v", name, err)
		}
	}
	// A set of them, in one call: the arrays travel as parameters too.
	names := []string{`it's "quoted"; --`, `$$ dollar $$ quotes $1`, `{"array", literal}`, `back\slash`}
	set, err := c.TryAcquireAll(ctx, names, distlock.WithMetadata(`meta ' " {,} $$`))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if info, err := c.Inspect(ctx, name); err != nil || info.Owner != set.Owner(name) || info.Token != set.Token(name) || info.Metadata != `meta ' " {,} $$` {
			t.Fatalf("%q in a set: %+v, %v", name, info, err)
		}
	}
	if err := set.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestNULRefused: PostgreSQL's text cannot hold a NUL byte. A name with one
// is refused by the name rule of every engine (engine.ValidateName) before
// any call; metadata or an owner with one by the engine before it sends
// anything. Each is an *ArgumentError, and nothing changes.
func TestNULRefused(t *testing.T) {
	const schema = "input"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e := newEngine(t, newPool(t), schema)
	c := distlock.New(e)
	defer c.Close()
	name := uniqueName(t)
	wantArg := func(what, arg string, err error) {
		t.Helper()
		var ae *distlock.ArgumentError
		if !errors.As(err, &ae) || !errors.Is(err, distlock.ErrInvalidArgument) || ae.Arg != arg {
			t.Fatalf("%s: %v, want an *ArgumentError for %s", what, err, arg)
		}
	}
	_, err := c.TryAcquire(ctx, "a\x00b")
	wantArg("name with NUL", "name", err)
	_, err = c.Inspect(ctx, "a\x00b")
	wantArg("inspect of a name with NUL", "name", err)
	_, err = c.Acquire(ctx, name, distlock.WithMetadata("a\x00b"))
	wantArg("metadata with NUL", "metadata", err)
	_, err = c.TryAcquire(ctx, name, distlock.WithOwner("own\x00er"))
	wantArg("owner with NUL", "owner", err)
	if info, err := c.Inspect(ctx, name); err != nil || info.Held || info.HighWater != 0 {
		t.Fatalf("after the refusals: %+v, %v; want nothing", info, err)
	}
	// An election's value too.
	l, err := c.Campaign(ctx, name, "v1")
	if err != nil {
		t.Fatal(err)
	}
	wantArg("Proclaim with NUL", "metadata", l.Proclaim(ctx, "v\x002"))
	if st, err := c.Leader(ctx, name); err != nil || st.Value != "v1" {
		t.Fatalf("after the refused Proclaim: %+v, %v", st, err)
	}
	_ = l.Resign(ctx)
}

// TestHugeMetadata: the Client refuses metadata over MaxMetadataLen and
// changes nothing; the engine itself stores what it is given (a megabyte
// here) and reads it back.
func TestHugeMetadata(t *testing.T) {
	const schema = "input"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e := newEngine(t, newPool(t), schema)
	c := distlock.New(e)
	defer c.Close()
	name := uniqueName(t)
	huge := strings.Repeat("m'\"", 1<<20/3)
	if _, err := c.TryAcquire(ctx, name, distlock.WithMetadata(huge)); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("1 MiB of metadata through the Client: %v, want ErrInvalidArgument", err)
	}
	if info, err := c.Inspect(ctx, name); err != nil || info.Held {
		t.Fatalf("after the refusal: %+v, %v", info, err)
	}
	g, err := e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "o", Attempt: "o", TTL: time.Minute, Metadata: huge})
	if err != nil || !g.Acquired {
		t.Fatalf("1 MiB of metadata on the engine: %+v, %v", g, err)
	}
	info, err := e.Inspect(ctx, name)
	if err != nil || info.Metadata != huge {
		t.Fatalf("read back %d bytes, %v", len(info.Metadata), err)
	}
	if r, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "o"}); err != nil || r.Status != engine.Released {
		t.Fatalf("release: %+v, %v", r, err)
	}
}

// TestNotMigrated: on a schema Migrate never made, every call fails with
// an error that matches ErrNotMigrated and says what to do; nothing is
// created behind the user's back.
func TestNotMigrated(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool := newPool(t)
	e := newEngine(t, pool, "never_migrated")
	c := distlock.New(e)
	defer c.Close()
	_, err := c.TryAcquire(ctx, "x")
	if !errors.Is(err, postgres.ErrNotMigrated) || !errors.Is(err, distlock.ErrBackend) || !strings.Contains(err.Error(), "Migrate") {
		t.Fatalf("TryAcquire on a schema never migrated: %v", err)
	}
	var se *postgres.SchemaError
	if !errors.As(err, &se) || se.Schema != "never_migrated" {
		t.Fatalf("%v: not a *SchemaError for the schema", err)
	}
	if _, err := e.Inspect(ctx, "x"); !errors.Is(err, postgres.ErrNotMigrated) {
		t.Fatalf("Inspect: %v", err)
	}
	if _, err := e.Extend(ctx, []engine.ExtendRequest{{Name: "x", Owner: "o", TTL: time.Second}}); !errors.Is(err, postgres.ErrNotMigrated) {
		t.Fatalf("Extend: %v", err)
	}
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'never_migrated')`).Scan(&exists); err != nil || exists {
		t.Fatalf("the schema exists after the calls: %v, %v", exists, err)
	}
	if _, err := postgres.New(pool, postgres.WithSchema("")); err == nil {
		t.Fatal("an empty schema name was taken")
	}
	// Migrate twice, concurrently: idempotent.
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- postgres.Migrate(ctx, newPool(t), `odd "schema"'s name`) }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	odd := distlock.New(newEngine(t, pool, `odd "schema"'s name`))
	defer odd.Close()
	l, err := odd.TryAcquire(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Release(ctx)
	if err := postgres.Drop(ctx, pool, `odd "schema"'s name`); err != nil {
		t.Fatal(err)
	}
}

package etcd_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	etcdengine "github.com/distlock/distlock/engine/etcd"
	"github.com/distlock/distlock/engine/etcd/etcdtest"
)

// TestForeignKeyEndsWaits: a value distlock did not write at a lock's key
// (another tool's, under the engine's prefix) is a *ForeignKeyError naming
// the lock and its key, which no retry mends: Acquire with
// context.Background() ends with it at once, without waiting out the
// failure budget (BackendError.Failing is zero), and Inspect returns it
// too; neither changes the key. As the Redis engine's; before, a wait
// retried for the whole budget and the CLI said the backend was
// unreachable. The minute's guard keeps a wait that never ends from
// hanging the test; it asserts no speed.
func TestForeignKeyEndsWaits(t *testing.T) {
	cl := etcdtest.Start(t, 1)
	ctx := context.Background()
	kv := cl.Client(t)
	eng := etcdengine.New(cl.Client(t))
	c := distlock.New(eng)
	defer c.Close()
	const key = etcdengine.DefaultPrefix + "foreign/lock"
	if _, err := kv.Put(ctx, key, "garbage"); err != nil {
		t.Fatal(err)
	}
	check := func(op string, err error) {
		t.Helper()
		var fk *etcdengine.ForeignKeyError
		switch {
		case !errors.As(err, &fk):
			t.Errorf("%s = %v, want a *ForeignKeyError", op, err)
		case fk.Name != "foreign" || fk.Key != key:
			t.Errorf("%s: ForeignKeyError names %q, %q; want %q, %q", op, fk.Name, fk.Key, "foreign", key)
		case !errors.Is(err, distlock.ErrBackend) || !engine.IsPermanent(eng, err):
			t.Errorf("%s = %v, want a permanent backend error", op, err)
		}
	}
	done := make(chan error, 1)
	go func() { _, err := c.Acquire(ctx, "foreign"); done <- err }()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("Acquire did not return")
	}
	check("Acquire", err)
	if be := (*distlock.BackendError)(nil); errors.As(err, &be) && be.Failing != 0 {
		t.Errorf("Acquire waited out the failure budget (%v) for an error no retry mends", be.Failing)
	}
	_, err = c.Inspect(ctx, "foreign")
	check("Inspect", err)
	got, err := kv.Get(ctx, key)
	if err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "garbage" {
		t.Errorf("the key changed: %v, %v", got, err)
	}
}

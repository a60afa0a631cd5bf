package etcd_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	etcdengine "github.com/distlock/distlock/engine/etcd"
	"github.com/distlock/distlock/engine/etcd/etcdtest"
)

// TestPermissionDeniedEndsWait: on a cluster with authentication on, a user
// whose role may only read cannot take a lock, and no retry can change
// that: a waiting Acquire ends at once with the refusal (a *BackendError
// that wraps etcd's permission denied), not after the failure budget, and
// nothing is written. The engine classifies it permanent; the control,
// the same error without the engine's classification, is transient.
func TestPermissionDeniedEndsWait(t *testing.T) {
	cl := etcdtest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root := cl.Client(t)
	for _, step := range []func() error{
		func() error { _, err := root.UserAdd(ctx, "root", "rootpw"); return err },
		func() error { _, err := root.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := root.RoleAdd(ctx, "reader"); return err },
		func() error {
			_, err := root.RoleGrantPermission(ctx, "reader", "\x00", "\x00", clientv3.PermissionType(clientv3.PermRead))
			return err
		},
		func() error { _, err := root.UserAdd(ctx, "ro", "ropw"); return err },
		func() error { _, err := root.UserGrantRole(ctx, "ro", "reader"); return err },
		func() error { _, err := root.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	ro, err := clientv3.New(clientv3.Config{Endpoints: cl.Endpoints(), Username: "ro", Password: "ropw", DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ro.Close() })
	eng := etcdengine.New(ro)
	const budget = time.Minute
	c := distlock.New(eng, distlock.WithBackendFailureBudget(budget))
	t.Cleanup(func() { _ = c.Close() })

	start := time.Now()
	l, err := c.Acquire(ctx, "denied")
	took := time.Since(start)
	if l != nil {
		t.Fatalf("a read-only user took the lock (token %d)", l.Token())
	}
	var be *distlock.BackendError
	if !errors.As(err, &be) || !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Fatalf("Acquire: %v, want a *BackendError wrapping permission denied", err)
	}
	if took >= budget/2 {
		t.Fatalf("the refused Acquire took %v: it waited out the failure budget %v rather than ending at once", took, budget)
	}
	if !engine.IsPermanent(eng, be.Err) {
		t.Fatalf("the engine does not classify %v as permanent", be.Err)
	}
	if engine.IsPermanent(nil, be.Err) {
		t.Fatalf("control: %v is permanent without the engine's classification: the check cannot fail", be.Err)
	}
	resp, err := ro.Get(ctx, "", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count != 0 {
		t.Fatalf("the refused Acquire wrote %v keys (%v)", resp, err)
	}
}

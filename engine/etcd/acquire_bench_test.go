package etcd_test

import (
	"context"
	"testing"

	"github.com/distlock/distlock"
	etcdengine "github.com/distlock/distlock/engine/etcd"
	"github.com/distlock/distlock/engine/etcd/etcdtest"
)

// BenchmarkAcquireRelease: an uncontended acquire and release of one name
// through a Client (E1's loop, for profiling the client's work per grant).
func BenchmarkAcquireRelease(b *testing.B) {
	cl := etcdtest.Start(b, 1)
	e := etcdengine.New(cl.Client(b))
	c := distlock.New(e)
	b.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		l, err := c.Acquire(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

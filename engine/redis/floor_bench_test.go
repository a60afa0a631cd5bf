package redis_test

// The cost of the guarantees the uncontended mutex grant keeps, in one run
// on one redis-server: the time floor (default) against WithoutTimeFloor,
// and a grant on a name whose shared lock was used before (the acquire
// script's kind check finds the name's shared holders key and reads it):
//
//	go test -run '^$' -bench 'UncontendedGuarantees' -benchmem -count 5 ./engine/redis/

import (
	"context"
	"testing"

	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

func BenchmarkUncontendedGuarantees(b *testing.B) {
	srv := redistest.Start(b)
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		opts []redisengine.Option
	}{
		{"floor", nil},
		{"without-floor", []redisengine.Option{redisengine.WithoutTimeFloor()}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c, rt := benchClient(b, srv, bc.opts...)
			b.ReportAllocs()
			calls := scriptCalls(b, srv)
			for b.Loop() {
				if err := benchOnce(ctx, c, "bench-guarantees-"+bc.name); err != nil {
					b.Fatal(err)
				}
			}
			report(b, srv, rt, calls)
		})
	}
	b.Run("floor-after-shared", func(b *testing.B) {
		c, rt := benchClient(b, srv)
		const name = "bench-guarantees-after-shared"
		s := c.Semaphore(name, 2)
		l, err := s.TryAcquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		calls := scriptCalls(b, srv)
		for b.Loop() {
			if err := benchOnce(ctx, c, name); err != nil {
				b.Fatal(err)
			}
		}
		report(b, srv, rt, calls)
	})
}

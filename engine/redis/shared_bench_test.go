package redis_test

// The uncontended permit against the mutex, in one run on one
// redis-server (issue 15's target: a permit's acquire+release p50 within
// 1.1 x the mutex's):
//
//	go test -run '^$' -bench 'SharedUncontended' -benchmem -count 4 ./engine/redis/

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/distlock/distlock/internal/redistest"
)

// scriptCalls returns the number of commands the server ran inside scripts
// so far (INFO commandstats, without the scripts themselves and the
// benchmark's own commands).
func scriptCalls(b *testing.B, srv *redistest.Server) int64 {
	b.Helper()
	c := srv.Client()
	defer c.Close()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":calls=")
		if !ok || strings.HasPrefix(name, "eval") || name == "info" || name == "hello" || name == "client" || name == "ping" {
			continue
		}
		calls, _, _ := strings.Cut(rest, ",")
		v, _ := strconv.ParseInt(calls, 10, 64)
		n += v
	}
	return n
}

// report adds the round trips and the commands run inside scripts per op.
func report(b *testing.B, srv *redistest.Server, rt *roundTrips, calls0 int64) {
	b.ReportMetric(float64(rt.single.Load()+rt.pipelines.Load())/float64(b.N), "round-trips/op")
	b.ReportMetric(float64(scriptCalls(b, srv)-calls0)/float64(b.N), "redis-cmds/op")
}

func BenchmarkSharedUncontended(b *testing.B) {
	srv := redistest.Start(b)
	ctx := context.Background()
	b.Run("mutex", func(b *testing.B) {
		c, rt := benchClient(b, srv)
		b.ReportAllocs()
		calls := scriptCalls(b, srv)
		for b.Loop() {
			if err := benchOnce(ctx, c, "bench-mutex"); err != nil {
				b.Fatal(err)
			}
		}
		report(b, srv, rt, calls)
	})
	for _, kind := range []string{"semaphore", "rlock", "lock"} {
		b.Run(kind, func(b *testing.B) {
			c, rt := benchClient(b, srv)
			b.ReportAllocs()
			sem, rw := c.Semaphore("bench-"+kind, 8), c.RWMutex("bench-"+kind)
			try := map[string]func() error{
				"semaphore": func() error {
					l, err := sem.TryAcquire(ctx)
					if err != nil {
						return err
					}
					return l.Release(ctx)
				},
				"rlock": func() error {
					l, err := rw.TryRLock(ctx)
					if err != nil {
						return err
					}
					return l.Release(ctx)
				},
				"lock": func() error {
					l, err := rw.TryLock(ctx)
					if err != nil {
						return err
					}
					return l.Release(ctx)
				},
			}[kind]
			calls := scriptCalls(b, srv)
			for b.Loop() {
				if err := try(); err != nil {
					b.Fatal(err)
				}
			}
			report(b, srv, rt, calls)
		})
	}
}

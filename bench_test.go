package distlock_test

// Benchmarks of an uncontended acquire+release against one real redis-server
// (started by internal/redistest on a free loopback port), next to the raw
// two-round-trip floor that any safe Redis lock pays: SET NX PX, then a
// compare-and-delete script. See docs/BENCHMARKS.md for the command and the
// results.
//
//	go test -run '^$' -bench 'AcquireRelease' -benchmem -count 6 -benchtime 2s .

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/memory"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// benchGoroutines is the number of goroutines of the Parallel64 benchmarks.
const benchGoroutines = 64

// benchPoolSize is the go-redis connection pool of every benchmark client:
// big enough that none of the 64 goroutines waits for a connection.
const benchPoolSize = 2 * benchGoroutines

// floorRelease is the compare-and-delete of the floor: delete the key only
// while it still holds our token.
var floorRelease = goredis.NewScript(`if redis.call('GET',KEYS[1])==ARGV[1] then return redis.call('DEL',KEYS[1]) else return 0 end`)

// benchClient returns a go-redis client for srv. distlock and the floor get
// clients made by this one function, so their options are the same.
func benchClient(b *testing.B, srv *redistest.Server) *goredis.Client {
	b.Helper()
	c := srv.ClientWithPool(benchPoolSize)
	b.Cleanup(func() { _ = c.Close() })
	if err := c.Ping(context.Background()).Err(); err != nil {
		b.Fatal(err)
	}
	return c
}

// benchDistlock returns a distlock Client on engine/redis over its own
// go-redis client.
func benchDistlock(b *testing.B, srv *redistest.Server) *distlock.Client {
	b.Helper()
	eng, err := redisengine.New(benchClient(b, srv))
	if err != nil {
		b.Fatal(err)
	}
	c := distlock.New(eng)
	b.Cleanup(func() {
		_ = c.Close()
		_ = eng.Close()
	})
	return c
}

// floorToken returns a fresh random token (128 bits), as a safe lock must
// use for every acquisition.
func floorToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// distlockOnce is one uncontended TryAcquire+Release with default options
// (auto-renewal on, ttl 30s).
func distlockOnce(ctx context.Context, c *distlock.Client, name string) error {
	l, err := c.TryAcquire(ctx, name)
	if err != nil {
		return err
	}
	return l.Release(ctx)
}

// errFloor reports a floor round trip that did not do what it must.
type errFloor string

func (e errFloor) Error() string { return string(e) }

// floorOnce is the raw floor: SET key token NX PX 30000, then the
// compare-and-delete script with EVALSHA (Script.Run).
func floorOnce(ctx context.Context, c *goredis.Client, key string) error {
	token := floorToken()
	err := c.Do(ctx, "set", key, token, "nx", "px", "30000").Err()
	if err == goredis.Nil {
		return errFloor("floor: " + key + " was held")
	}
	if err != nil {
		return err
	}
	n, err := floorRelease.Run(ctx, c, []string{key}, token).Int64()
	if err != nil {
		return err
	}
	if n != 1 {
		return errFloor("floor: " + key + " was not released")
	}
	return nil
}

// BenchmarkAcquireRelease measures one goroutine acquiring and releasing one
// lock name, uncontended.
func BenchmarkAcquireRelease(b *testing.B) {
	srv := redistest.Start(b)
	ctx := context.Background()

	b.Run("distlock", func(b *testing.B) {
		c := benchDistlock(b, srv)
		b.ReportAllocs()
		for b.Loop() {
			if err := distlockOnce(ctx, c, "bench-single"); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("floor", func(b *testing.B) {
		c := benchClient(b, srv)
		b.ReportAllocs()
		for b.Loop() {
			if err := floorOnce(ctx, c, "floor:{bench-single}"); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("memory", func(b *testing.B) {
		eng := memory.New()
		c := distlock.New(eng)
		b.Cleanup(func() {
			_ = c.Close()
			_ = eng.Close()
		})
		b.ReportAllocs()
		for b.Loop() {
			if err := distlockOnce(ctx, c, "bench-single"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkAcquireReleaseParallel64 measures 64 goroutines, each acquiring
// and releasing its own lock name, uncontended, through one client.
func BenchmarkAcquireReleaseParallel64(b *testing.B) {
	srv := redistest.Start(b)
	ctx := context.Background()

	b.Run("distlock", func(b *testing.B) {
		c := benchDistlock(b, srv)
		runParallel64(b, srv, func(id int) func() error {
			name := "bench-par-" + strconv.Itoa(id)
			return func() error { return distlockOnce(ctx, c, name) }
		})
	})

	b.Run("floor", func(b *testing.B) {
		c := benchClient(b, srv)
		runParallel64(b, srv, func(id int) func() error {
			key := "floor:{bench-par-" + strconv.Itoa(id) + "}"
			return func() error { return floorOnce(ctx, c, key) }
		})
	})
}

// runParallel64 runs op from 64 goroutines (b.RunParallel with
// SetParallelism: GOMAXPROCS×p goroutines), each with its own id, hence its
// own lock name. It reports the number of goroutines that ran as the
// "goroutines" metric; that is 64 unless GOMAXPROCS does not divide 64.
// It also reports the CPU time spent per operation by this process
// (client-cpu-µs/op, from getrusage) and by srv (redis-cpu-µs/op, from INFO
// cpu): on a shared machine CPU time per operation moves much less than
// throughput, so comparing two commits by it shows a change in the work done.
func runParallel64(b *testing.B, srv *redistest.Server, newOp func(id int) func() error) {
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((benchGoroutines + procs - 1) / procs)
	var ids atomic.Int64
	b.ReportAllocs()
	client0, redis0 := processCPU(), serverCPU(b, srv)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		op := newOp(int(ids.Add(1)))
		for pb.Next() {
			if err := op(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(ids.Load()), "goroutines")
	n := float64(b.N)
	b.ReportMetric((processCPU()-client0).Seconds()*1e6/n, "client-cpu-µs/op")
	b.ReportMetric((serverCPU(b, srv)-redis0).Seconds()*1e6/n, "redis-cpu-µs/op")
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serverCPU is the CPU time (user and system) srv has used, from INFO cpu.
func serverCPU(b *testing.B, srv *redistest.Server) time.Duration {
	c := srv.Client()
	defer c.Close()
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var s float64
	for _, l := range strings.Split(info, "\r\n") {
		k, v, _ := strings.Cut(l, ":")
		if k == "used_cpu_sys" || k == "used_cpu_user" {
			f, _ := strconv.ParseFloat(v, 64)
			s += f
		}
	}
	return time.Duration(s * float64(time.Second))
}

// BenchmarkAcquireReleasePaired runs distlock and the floor (one goroutine,
// one name each) in the same loop, taking turns, and reports the mean time
// of each as distlock-ns/op and floor-ns/op, and their ratio. On a small
// virtual machine the latency of a loopback round trip drifts by 2x and more
// between runs (it depends on where the scheduler puts the client and
// redis-server), so the ratio of two sub-benchmarks measured one after the
// other is noisy; taking turns exposes both to the same conditions. Its
// ns/op is the time of one distlock op plus one floor op.
func BenchmarkAcquireReleasePaired(b *testing.B) {
	srv := redistest.Start(b)
	ctx := context.Background()
	c := benchDistlock(b, srv)
	fc := benchClient(b, srv)
	var dist, floor time.Duration
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		t0 := time.Now()
		var err error
		if i%2 == 0 {
			err = distlockOnce(ctx, c, "bench-paired")
		} else {
			err = floorOnce(ctx, fc, "floor:{bench-paired}")
		}
		t1 := time.Now()
		if err != nil {
			b.Fatal(err)
		}
		if i%2 == 0 {
			err = floorOnce(ctx, fc, "floor:{bench-paired}")
		} else {
			err = distlockOnce(ctx, c, "bench-paired")
		}
		t2 := time.Now()
		if err != nil {
			b.Fatal(err)
		}
		if i%2 == 0 {
			dist, floor = dist+t1.Sub(t0), floor+t2.Sub(t1)
		} else {
			floor, dist = floor+t1.Sub(t0), dist+t2.Sub(t1)
		}
	}
	b.ReportMetric(float64(dist.Nanoseconds())/float64(b.N), "distlock-ns/op")
	b.ReportMetric(float64(floor.Nanoseconds())/float64(b.N), "floor-ns/op")
	b.ReportMetric(float64(dist)/float64(floor), "distlock/floor")
}

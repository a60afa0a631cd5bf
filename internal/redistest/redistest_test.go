package redistest_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/internal/lagprobe"
	"github.com/distlock/distlock/internal/redistest"
)

func ctx(t *testing.T) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestStartPing(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	if s.Port() == 6379 || s.Port() == 0 {
		t.Fatalf("unexpected port %d", s.Port())
	}
	if !strings.HasPrefix(s.Addr(), "127.0.0.1:") || s.URL() != "redis://"+s.Addr() {
		t.Fatalf("Addr %q URL %q", s.Addr(), s.URL())
	}
	if !s.Running() || s.PID() <= 0 {
		t.Fatalf("Running=%v PID=%d", s.Running(), s.PID())
	}
	c := s.Client()
	if got, err := c.Ping(ctx(t)).Result(); err != nil || got != "PONG" {
		t.Fatalf("PING = %q, %v", got, err)
	}
	// Confirm the flags: no persistence by default.
	cfg, err := c.ConfigGet(ctx(t), "*").Result()
	if err != nil || cfg["appendonly"] != "no" || cfg["save"] != "" || cfg["bind"] != "127.0.0.1" {
		t.Fatalf("appendonly=%q save=%q bind=%q, %v", cfg["appendonly"], cfg["save"], cfg["bind"], err)
	}
}

func TestWithArgs(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, redistest.WithArgs("--maxmemory", "10mb"))
	cfg, err := s.Client().ConfigGet(ctx(t), "maxmemory").Result()
	if err != nil || cfg["maxmemory"] != "10485760" {
		t.Fatalf("maxmemory = %v, %v", cfg, err)
	}
}

func TestKillRestartLosesData(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	c := s.Client()
	if err := c.Set(ctx(t), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	port, pid := s.Port(), s.PID()
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	if s.Running() {
		t.Fatal("running after Kill")
	}
	short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := c.Ping(short).Err(); err == nil {
		t.Fatal("PING succeeded on a killed server")
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if s.Port() != port || s.PID() == pid {
		t.Fatalf("after restart port %d (was %d), pid %d (was %d)", s.Port(), port, s.PID(), pid)
	}
	if err := c.Get(ctx(t), "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET after restart: %v, want redis.Nil", err)
	}
}

func TestPersistenceKeepsData(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, redistest.WithPersistence())
	c := s.Client()
	if err := c.Set(ctx(t), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Get(ctx(t), "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET after restart = %q, %v; want \"v\"", got, err)
	}
}

func TestStopRestart(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if s.Running() {
		t.Fatal("running after Stop")
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	// Restart of a running server kills it first.
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := s.Client().Ping(ctx(t)).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestRestartWaitsForBusyPort(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	// Hold the port for a while: Restart must keep trying, not give up.
	l, err := net.Listen("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(300*time.Millisecond, func() { l.Close() })
	start := time.Now()
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("Restart returned after %v while the port was held", d)
	}
	if err := s.Client().Ping(ctx(t)).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestPauseResume(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	c := s.Client()
	if err := c.Ping(ctx(t)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	probe := lagprobe.Start()
	short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := c.Ping(short).Err(); err == nil {
		t.Fatal("PING succeeded on a paused server")
	}
	// A PING to a stopped server returns when its context ends; a machine
	// measured starved may run that return late (a skip, not a failure).
	d, lag := time.Since(start), probe.Done()
	if d > time.Second && lag >= lagprobe.Starved {
		t.Skipf("machine too slow: measured scheduling delay %v; the timed-out PING took %v", lag, d)
	}
	if d > time.Second {
		t.Fatalf("timed-out PING took %v (scheduling delay measured: %v)", d, lag)
	}
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx(t)).Err(); err != nil {
		t.Fatalf("PING after Resume: %v", err)
	}
}

func TestCloseWhilePaused(t *testing.T) {
	t.Parallel()
	s, err := redistest.New()
	if err != nil {
		t.Fatal(err)
	}
	c := s.Client()
	if err := c.Ping(ctx(t)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	pid := s.PID()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("kill(%d, 0) = %v, want ESRCH", pid, err)
	}
}

func TestCloseIdempotent(t *testing.T) {
	t.Parallel()
	s, err := redistest.New()
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Client()
	pid := s.PID()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("kill(%d, 0) = %v, want ESRCH", pid, err)
	}
	if s.Running() {
		t.Fatal("running after Close")
	}
	if err := s.Restart(); err == nil {
		t.Fatal("Restart after Close succeeded")
	}
}

func TestFlushAllDel(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	c := s.Client()
	for _, k := range []string{"a", "b", "c"} {
		if err := c.Set(ctx(t), k, "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Del(ctx(t), "a"); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Exists(ctx(t), "a", "b", "c").Result(); err != nil || n != 2 {
		t.Fatalf("EXISTS after Del = %d, %v", n, err)
	}
	if err := s.FlushAll(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if n, err := c.DBSize(ctx(t)).Result(); err != nil || n != 0 {
		t.Fatalf("DBSIZE after FlushAll = %d, %v", n, err)
	}
}

func TestStartNDistinctPorts(t *testing.T) {
	t.Parallel()
	const n = 5
	servers := redistest.StartN(t, n)
	if len(servers) != n {
		t.Fatalf("got %d servers", len(servers))
	}
	seen := map[int]bool{}
	for _, s := range servers {
		if seen[s.Port()] {
			t.Fatalf("duplicate port %d", s.Port())
		}
		seen[s.Port()] = true
		if err := s.Client().Ping(ctx(t)).Err(); err != nil {
			t.Fatalf("%s: %v", s.Addr(), err)
		}
	}
}

func TestRequireRedisServer(t *testing.T) {
	path, err := redistest.RequireRedisServer()
	if err != nil || path == "" {
		t.Fatalf("RequireRedisServer() = %q, %v", path, err)
	}
	t.Setenv("PATH", t.TempDir())
	_, err = redistest.RequireRedisServer()
	want := "redis-server not found in PATH: install it with `apt-get update && apt-get install -y redis-server` (or run ./scripts/test, which does)"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	if _, err := redistest.New(); !errors.Is(err, redistest.ErrRedisServerNotFound) {
		t.Fatalf("New without redis-server: %v", err)
	}
}

// TestStartCluster: three masters serve every slot between them, and a
// cluster client routes keys of different slots to different nodes.
func TestStartCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	cc := c.Client()
	ctx := ctx(t)
	owners := map[string]bool{}
	for i := range 30 {
		key := "k" + strconv.Itoa(i)
		if err := cc.Set(ctx, key, i, 0).Err(); err != nil {
			t.Fatal(err)
		}
		slot := cc.ClusterKeySlot(ctx, key).Val()
		for _, n := range c.Nodes {
			if n.Client().Exists(ctx, key).Val() == 1 {
				owners[n.Addr()] = true
				want := 0
				for want < len(c.Nodes)-1 && int(slot) >= (want+1)*16384/len(c.Nodes) {
					want++
				}
				if c.Nodes[want] != n {
					t.Errorf("key %s (slot %d) on %s, want node %d", key, slot, n.Addr(), want)
				}
			}
		}
	}
	if len(owners) != 3 {
		t.Fatalf("30 keys landed on %d of 3 nodes", len(owners))
	}
	if err := c.Del(ctx, "k1"); err != nil || cc.Exists(ctx, "k1").Val() != 0 {
		t.Fatalf("Del: %v", err)
	}
}

// TestStartSentinel: the failover client writes to the master and the
// replica receives it; after the master is killed and Failover returns,
// the failover client writes to the replica, now the master; every process
// of the group is gone when the test's cleanup has run.
func TestStartSentinel(t *testing.T) {
	var pids []int
	t.Run("group", func(t *testing.T) {
		g := redistest.StartSentinel(t)
		for _, s := range append([]*redistest.Server{g.Master, g.Replica}, g.Sentinels...) {
			pids = append(pids, s.PID())
		}
		ctx := ctx(t)
		fc := g.Client()
		if err := fc.Set(ctx, "k", "before", 0).Err(); err != nil {
			t.Fatal(err)
		}
		for g.Replica.Client().Get(ctx, "k").Val() != "before" {
			if ctx.Err() != nil {
				t.Fatal("the replica never received the write")
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err := g.Master.Kill(); err != nil {
			t.Fatal(err)
		}
		g.Failover(t)
		if addr, err := g.MasterAddr(ctx); err != nil || addr != g.Replica.Addr() {
			t.Fatalf("MasterAddr after the failover: %q, %v", addr, err)
		}
		if err := g.Client().Set(ctx, "k", "after", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if v := g.Replica.Client().Get(ctx, "k").Val(); v != "after" {
			t.Fatalf("the new master holds %q", v)
		}
	})
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("pid %d still there after the cleanup: kill(0) = %v", pid, err)
		}
	}
}

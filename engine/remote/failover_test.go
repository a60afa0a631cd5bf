package remote_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/engine/remote"
	"github.com/distlock/distlock/internal/redistest"
	"github.com/distlock/distlock/internal/servertest"
	"github.com/distlock/distlock/server"
)

// killableServers starts two servers on one redis-server, each with its
// own Redis engine, and returns their URLs and what kills each.
func killableServers(t *testing.T) (*redistest.Server, [2]string, [2]func()) {
	rs := redistest.Start(t)
	var (
		urls  [2]string
		kills [2]func()
	)
	for i := range urls {
		eng, err := redisengine.New(rs.Client())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = eng.Close() })
		_, urls[i], kills[i] = servertest.Killable(t, eng, server.WithLogger(quietLogger()))
	}
	return rs, urls, kills
}

// TestKillOneOfTwoServersRedis: a client names two servers on one Redis. While
// it holds a lease with auto-renewal and another client waits for the
// lock, the server both talk to is killed (its connections reset, its port
// closed). The lease is not lost: renewals sent after the kill are
// confirmed through the other server, Done stays open, the token stays,
// and Redis still shows the same holder; the waiter, queued through the
// dead server, is granted through the other one when the holder releases,
// with a greater token.
func TestKillOneOfTwoServersRedis(t *testing.T) {
	rs, urls, kills := killableServers(t)
	servertest.KillOneOfTwo(t, urls, kills[0], 1500*time.Millisecond, func(ctx context.Context, name string) (engine.Info, error) {
		direct, err := redisengine.New(rs.Client())
		if err != nil {
			return engine.Info{}, err
		}
		defer direct.Close()
		return direct.Inspect(ctx, name)
	})
}

// TestDeadServerFirst: a client whose first server is down (nothing
// listens on its port) works through the second, and Ping says the
// servers answer.
func TestDeadServerFirst(t *testing.T) {
	_, urls := twoServers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e := newRemote(t, "http://"+servertest.ClosedAddr(t)+","+urls[1])
	if _, err := e.Ping(ctx); err != nil {
		t.Fatalf("ping with one server of two down: %v", err)
	}
	c := distlock.New(e)
	defer c.Close()
	// Held until the Release below, however slowly the machine runs it.
	l, err := c.Acquire(ctx, "job", distlock.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Inspect(ctx, "job")
	if err != nil || info.Owner != l.Owner() {
		t.Fatalf("inspect: %+v, %v", info, err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Both down: the error says so for each.
	down := newRemote(t, "http://"+servertest.ClosedAddr(t)+",http://"+servertest.ClosedAddr(t))
	_, err = distlock.New(down).TryAcquire(ctx, "job")
	if !errors.Is(err, distlock.ErrBackend) || errors.Is(err, remote.ErrBackendMismatch) {
		t.Fatalf("both servers down: %v", err)
	}
}

// TestEmbeddedServersNotSwitched: two servers on the embedded engine do
// not share their locks. Ping refuses a client that names both with a
// *MismatchError; a client that names both and loses the first does not
// go on through the second (which never saw its lock): its lease is lost
// rather than renewed there, and new requests fail with the mismatch,
// changing nothing on the second server.
func TestEmbeddedServersNotSwitched(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var (
		urls  [2]string
		kills [2]func()
	)
	for i := range urls {
		mem := newMemory(t)
		_, urls[i], kills[i] = servertest.Killable(t, mem, server.WithLogger(quietLogger()))
	}
	both := urls[0] + "," + urls[1]
	_, err := newRemote(t, both).Ping(ctx)
	var me *remote.MismatchError
	if !errors.As(err, &me) || !errors.Is(err, remote.ErrBackendMismatch) || me.Server != urls[1] {
		t.Fatalf("ping of two embedded servers: %v", err)
	}

	c := distlock.New(newRemote(t, both))
	defer c.Close()
	// A ttl a busy machine's grant fits in (a 300ms one could be used up
	// before its answer came back, and the Acquire failed); the lease,
	// not renewed with its server dead, ends within it.
	l, err := c.Acquire(ctx, "job", distlock.WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	kills[0]()
	select {
	case <-l.Done():
	case <-ctx.Done():
		t.Fatal("the lease went on with its server dead and the other server not sharing it")
	}
	_, err = c.TryAcquire(ctx, "job")
	if !errors.Is(err, remote.ErrBackendMismatch) {
		t.Fatalf("an acquire after the first embedded server died: %v", err)
	}
	second := distlock.New(newRemote(t, urls[1]))
	defer second.Close()
	if info, err := second.Inspect(ctx, "job"); err != nil || info.Held || info.HighWater != 0 {
		t.Fatalf("the second embedded server was used: %+v, %v", info, err)
	}
}

// TestNewServerList: New takes several servers separated by commas, in
// order; an empty item, a server named twice or a bad URL in the list is
// an error wrapping an *engine.ArgumentError.
func TestNewServerList(t *testing.T) {
	e, err := remote.New(" http://127.0.0.1:7420/ ,https://b:7421/x")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got := e.Servers(); len(got) != 2 || got[0] != "http://127.0.0.1:7420" || got[1] != "https://b:7421/x" {
		t.Fatalf("Servers() = %q", got)
	}
	if e.String() != "distlock server http://127.0.0.1:7420,https://b:7421/x" {
		t.Fatalf("String() = %q", e.String())
	}
	for _, bad := range []string{"http://a:1,", ",http://a:1", "http://a:1,,http://b:1", "http://a:1,http://a:1/", "http://a:1,redis://b:1"} {
		_, err := remote.New(bad)
		var ae *engine.ArgumentError
		if !errors.As(err, &ae) || ae.Arg != "server URL" {
			t.Errorf("New(%q) = %v, want an *engine.ArgumentError", bad, err)
		}
	}
}

// hungAddr returns a loopback address that accepts connections and never
// answers on them, as a stopped server's port does.
func hungAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				_ = c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); <-done })
	return ln.Addr().String()
}

// TestHungServerFirst: a first server that accepts connections and never
// answers holds up neither Ping (once another server answered, the hung one
// counts as not answering) nor a call with a deadline (it gets its share of
// the time, then the call goes on through the next server) nor the opening
// of an event stream (5s, then the next server).
func TestHungServerFirst(t *testing.T) {
	_, urls := twoServers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	e := newRemote(t, "http://"+hungAddr(t)+","+urls[1])
	if _, err := e.Ping(ctx); err != nil {
		t.Fatalf("ping with the first server hung: %v", err)
	}
	c := distlock.New(e)
	defer c.Close()
	actx, acancel := context.WithTimeout(ctx, 20*time.Second)
	defer acancel()
	l, err := c.TryAcquire(actx, "job", distlock.WithTTL(time.Second))
	if err != nil {
		t.Fatalf("acquire with the first server hung: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// An event stream opens on the next server too.
	fresh := newRemote(t, "http://"+hungAddr(t)+","+urls[1])
	sub, err := fresh.Subscribe(ctx, "job")
	if err != nil {
		t.Fatalf("subscribe with the first server hung: %v", err)
	}
	sub.Close()
}

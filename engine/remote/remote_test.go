package remote_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/engine/remote"
	"github.com/distlock/distlock/server"
)

func TestNewURL(t *testing.T) {
	for _, bad := range []string{"", "127.0.0.1:7420", "redis://127.0.0.1:6379", "http://", "http://u:p@127.0.0.1:1", "http://127.0.0.1:1/?x=1"} {
		if _, err := remote.New(bad); err == nil {
			t.Errorf("New(%q) accepted", bad)
		}
	}
	e, err := remote.New("http://127.0.0.1:7420/")
	if err != nil || e.String() != "distlock server http://127.0.0.1:7420" {
		t.Fatalf("%v %v", e, err)
	}
	_ = e.Close()
}

const (
	writeTok = "write-token-0123456789"
	adminTok = "admin-token-0123456789"
)

func withTokens(t *testing.T) server.Option {
	tk, err := server.ParseTokens("write:" + writeTok + ",admin:" + adminTok)
	if err != nil {
		t.Fatal(err)
	}
	return server.WithTokens(tk)
}

// TestErrors: the server's refusals reach the caller as typed errors.
func TestErrors(t *testing.T) {
	mem := memory.New()
	defer mem.Close()
	_, url := startServer(t, mem, server.WithLogger(quietLogger()), withTokens(t))
	ctx := context.Background()

	c := distlock.New(newRemote(t, url))
	defer c.Close()
	_, err := c.TryAcquire(ctx, "x")
	var re *remote.Error
	if !errors.Is(err, distlock.ErrBackend) || !errors.Is(err, remote.ErrUnauthorized) || !errors.As(err, &re) || re.Status != 401 {
		t.Fatalf("no token: %v", err)
	}
	if _, err := newRemote(t, url).Ping(ctx); !errors.Is(err, remote.ErrUnauthorized) {
		t.Fatalf("ping without a token: %v", err)
	}

	w := distlock.New(newRemote(t, url, remote.WithToken(writeTok)))
	defer w.Close()
	l, err := w.Acquire(ctx, "x", distlock.WithOwner("secret-owner"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.ForceRelease(ctx, "x"); !errors.Is(err, remote.ErrForbidden) {
		t.Fatalf("force-release as write: %v", err)
	}
	// Owner tokens are hidden from non-admins; a holder id shows instead.
	info, err := w.Inspect(ctx, "x")
	if err != nil || !info.Held || info.Owner == "secret-owner" || !strings.HasPrefix(info.Owner, "holder:") {
		t.Fatalf("inspect as write: %+v %v", info, err)
	}
	g, err := newRemote(t, url, remote.WithToken(writeTok)).Acquire(ctx, engine.AcquireRequest{Name: "x", Owner: "o", TTL: time.Second, Attempt: "a"})
	if err != nil || g.Acquired || !strings.HasPrefix(g.Holder, "holder:") || g.HolderTTL <= 0 {
		t.Fatalf("locked grant as write: %+v %v", g, err)
	}
	a := distlock.New(newRemote(t, url, remote.WithToken(adminTok)))
	defer a.Close()
	if info, _ := a.Inspect(ctx, "x"); info.Owner != "secret-owner" {
		t.Fatalf("inspect as admin: %+v", info)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// Too many waiters: the subscription is refused, the Client polls.
	mem2 := memory.New()
	defer mem2.Close()
	_, url2 := startServer(t, mem2, server.WithLogger(quietLogger()), server.WithMaxWaiters(1, 1))
	e2 := newRemote(t, url2)
	sub, err := e2.Subscribe(ctx, "y")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := newRemote(t, url2).Subscribe(ctx, "y"); !errors.Is(err, remote.ErrTooManyWaiters) {
		t.Fatalf("second stream over the limit: %v", err)
	}
}

// TestSubscribeReconnect: a broken stream wakes its waiters (a release may
// have been missed) and is reopened; releases are signalled again after.
func TestSubscribeReconnect(t *testing.T) {
	mem := memory.New()
	defer mem.Close()
	srv1, err := server.New(mem, server.WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	go func() { _ = srv1.Serve(ln) }()
	e := newRemote(t, "http://"+addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sub, err := e.Subscribe(ctx, "n")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if info, _ := mem.Inspect(ctx, "n"); info.Subscribers != 1 {
		t.Fatalf("subscribed, but the engine sees %d subscribers", info.Subscribers)
	}
	_ = srv1.Close()
	select {
	case <-sub.C():
	case <-time.After(10 * time.Second):
		t.Fatal("a broken stream did not wake its waiter")
	}
	// The same engine behind a new server on the same address.
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = startServerOn(t, mem, ln2)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if info, _ := mem.Inspect(ctx, "n"); info.Subscribers == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stream was not reopened")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The reopened stream wakes its waiters (releases may have been
	// missed meanwhile): that wake-up, then none pending.
	select {
	case <-sub.C():
	case <-time.After(10 * time.Second):
		t.Fatal("the reopened stream did not wake its waiter")
	}
	for len(sub.C()) > 0 {
		<-sub.C()
	}
	releaseWakes(t, ctx, mem, "n", sub)
}

// startServerOn serves eng on ln until the test ends.
func startServerOn(t *testing.T, eng engine.Engine, ln net.Listener) (*server.Server, string) {
	srv, err := server.New(eng, server.WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	})
	return srv, "http://" + ln.Addr().String()
}

// TestBigBatch: more extensions than one request may carry are split.
func TestBigBatch(t *testing.T) {
	mem := memory.New()
	defer mem.Close()
	_, url := startServer(t, mem, server.WithLogger(quietLogger()))
	e := newRemote(t, url)
	ctx := context.Background()
	rs := make([]engine.ExtendRequest, 2500)
	for i := range rs {
		rs[i] = engine.ExtendRequest{Name: fmt.Sprintf("l%d", i), Owner: "o", TTL: time.Second}
	}
	// Held for a minute: a batch of 2500 on a starved machine can take
	// longer than a second, and the check is of the batching, not of time.
	for _, i := range []int{0, 1500, 2499} {
		if g, err := e.Acquire(ctx, engine.AcquireRequest{Name: rs[i].Name, Owner: "o", TTL: time.Minute, Attempt: "a"}); err != nil || !g.Acquired {
			t.Fatal(g, err)
		}
	}
	res, err := e.Extend(ctx, rs)
	if err != nil || len(res) != len(rs) {
		t.Fatalf("%d results, %v", len(res), err)
	}
	for i, r := range res {
		want := engine.Missing
		if i == 0 || i == 1500 || i == 2499 {
			want = engine.Extended
		}
		if r.Err != nil || r.Status != want {
			t.Fatalf("result %d: %+v, want %v", i, r, want)
		}
	}
}

// TestClose: after Close every operation fails with engine.ErrClosed and
// subscriptions are woken.
func TestClose(t *testing.T) {
	mem := memory.New()
	defer mem.Close()
	_, url := startServer(t, mem, server.WithLogger(quietLogger()))
	e, err := remote.New(url)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sub, err := e.Subscribe(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sub.C():
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not wake the subscription")
	}
	sub.Close()
	if _, err := e.Inspect(ctx, "c"); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("Inspect after Close: %v", err)
	}
	if _, err := e.Subscribe(ctx, "c"); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("Subscribe after Close: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if info, _ := mem.Inspect(ctx, "c"); info.Subscribers == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server still has the closed engine's stream")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

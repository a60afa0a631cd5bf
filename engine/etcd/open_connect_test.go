package etcd_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	etcdengine "github.com/distlock/distlock/engine/etcd"
	"github.com/distlock/distlock/engine/etcd/etcdtest"
)

// hangGuard bounds how long a test waits for an Open that should return:
// far above every bound under test, it only turns a hang into a failure.
const hangGuard = 2 * time.Minute

// openWithin opens u in the background and returns its result, failing
// the test when Open has not returned after hangGuard.
func openWithin(t *testing.T, ctx context.Context, u string) (engine.Engine, error) {
	t.Helper()
	type result struct {
		eng engine.Engine
		err error
	}
	done := make(chan result, 1)
	go func() {
		eng, err := engine.Open(ctx, u)
		done <- result{eng, err}
	}()
	select {
	case r := <-done:
		if r.eng != nil {
			t.Cleanup(func() { _ = r.eng.Close() })
		}
		return r.eng, r.err
	case <-time.After(hangGuard):
		t.Fatalf("engine.Open(%q) has not returned after %v", u, hangGuard)
		return nil, nil
	}
}

// TestOpenUserUnreachable: with a user, etcd's client fetches a token at
// Open. A cluster that does not answer is then a *BackendError (not a bad
// URL), met within the context's deadline even when dial_timeout is
// longer; a bad port is a bad URL before any dial.
func TestOpenUserUnreachable(t *testing.T) {
	t.Parallel()
	_, err := openWithin(t, context.Background(), "etcd://root:pw@127.0.0.1:1?dial_timeout=1s")
	var be *etcdengine.BackendError
	if !errors.As(err, &be) || errors.Is(err, engine.ErrBadURL) {
		t.Fatalf("Open of an etcd nobody answers, with a user: %v, want a *BackendError, not ErrBadURL", err)
	}
	if strings.Contains(err.Error(), "pw") {
		t.Errorf("the error shows the password: %v", err)
	}

	// dial_timeout of an hour: only the context's deadline ends the dial.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = openWithin(t, ctx, "etcd://root:pw@127.0.0.1:1?dial_timeout=1h")
	if !errors.As(err, &be) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Open with a 1s context and dial_timeout=1h: %v, want a *BackendError of the deadline", err)
	}

	// A bad port: refused before any dial (a dial would last the hour).
	for _, u := range []string{"etcd://u:pw@127.0.0.1:abc?dial_timeout=1h", "etcd://u:pw@127.0.0.1:99999?dial_timeout=1h", "etcd://u:pw@a:2379,b:x?dial_timeout=1h"} {
		if _, err := openWithin(t, context.Background(), u); !errors.Is(err, engine.ErrBadURL) {
			t.Errorf("Open(%q): %v, want ErrBadURL", u, err)
		}
	}
}

// TestOpenUserAuth: on a cluster with authentication on, the right user
// and password open an engine that works, a wrong password is a bad URL
// (no retry mends it), and neither error shows the password.
func TestOpenUserAuth(t *testing.T) {
	t.Parallel()
	cl := etcdtest.Start(t, 1)
	cli := cl.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cli.UserAdd(ctx, "root", "s3cret"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.UserGrantRole(ctx, "root", "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.AuthEnable(ctx); err != nil {
		t.Fatal(err)
	}
	hosts := strings.Join(cl.Endpoints(), ",")
	hosts = strings.ReplaceAll(hosts, "http://", "")

	eng, err := openWithin(t, ctx, "etcd://root:s3cret@"+hosts)
	if err != nil {
		t.Fatalf("Open with the right password: %v", err)
	}
	if info, err := eng.Inspect(ctx, "auth-open"); err != nil || info.Held {
		t.Fatalf("Inspect on the engine opened with a user: %+v, %v", info, err)
	}

	_, err = openWithin(t, ctx, "etcd://root:wrongpw@"+hosts)
	if !errors.Is(err, engine.ErrBadURL) {
		t.Fatalf("Open with a wrong password: %v, want ErrBadURL", err)
	}
	if strings.Contains(err.Error(), "wrongpw") {
		t.Errorf("the error shows the password: %v", err)
	}
}

// TestOpenMinTTLBound: min_ttl is refused (ErrBadURL, Param min_ttl)
// above the longest ttl distlock takes and when etcd could not keep it as
// it is (not whole seconds); nothing is dialled then.
func TestOpenMinTTLBound(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"25h", "1000h", "24h0m1s", "2500ms", "3.5s"} {
		u := "etcd://127.0.0.1:1?min_ttl=" + v
		_, err := openWithin(t, context.Background(), u)
		var ue *engine.URLError
		if !errors.As(err, &ue) || !errors.Is(err, engine.ErrBadURL) || ue.Param != "min_ttl" {
			t.Errorf("Open(%q): %v, want ErrBadURL with Param min_ttl", u, err)
		}
	}
	for _, v := range []string{"2s", "3s", "24h"} {
		u := "etcd://127.0.0.1:1?min_ttl=" + v
		if _, err := openWithin(t, context.Background(), u); err != nil {
			t.Errorf("Open(%q): %v, want an engine", u, err)
		}
	}
}

// TestWithMinTTLKept: WithMinTTL rounds up to whole seconds and stays
// within the longest ttl, so the ttl a lease reports is the one etcd
// granted its lease.
func TestWithMinTTLKept(t *testing.T) {
	t.Parallel()
	cl := etcdtest.Start(t, 1)
	cli := cl.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range []struct{ set, want time.Duration }{
		{2500 * time.Millisecond, 3 * time.Second},
		{25 * time.Hour, 24 * time.Hour},
		{time.Second, etcdengine.MinTTL},
	} {
		eng := etcdengine.New(cli, etcdengine.WithMinTTL(c.set))
		if got := eng.Capabilities().MinTTL; got != c.want {
			t.Errorf("WithMinTTL(%v): MinTTL %v, want %v", c.set, got, c.want)
		}
		if fit := eng.Capabilities().FitTTL(time.Second); fit%time.Second != 0 {
			t.Errorf("WithMinTTL(%v): a 1s ttl is kept as %v, not whole seconds", c.set, fit)
		}
		_ = eng.Close()
	}

	c := distlock.New(etcdengine.New(cl.Client(t), etcdengine.WithMinTTL(2500*time.Millisecond)))
	defer c.Close()
	lease, err := c.Acquire(ctx, "min-ttl-kept", distlock.WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lease.Release(ctx) }()
	granted := grantedTTLs(ctx, t, cli)
	if len(granted) == 0 {
		t.Fatal("etcd holds no lease after Acquire")
	}
	for _, g := range granted {
		if g != lease.TTL() {
			t.Errorf("etcd granted a lease of %v, the Lease reports a ttl of %v", g, lease.TTL())
		}
	}
}

// grantedTTLs returns the ttl etcd granted each of its leases.
func grantedTTLs(ctx context.Context, t *testing.T, cli *clientv3.Client) []time.Duration {
	t.Helper()
	ls, err := cli.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []time.Duration
	for _, l := range ls.Leases {
		ttl, err := cli.TimeToLive(ctx, l.ID)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, time.Duration(ttl.GrantedTTL)*time.Second)
	}
	return out
}

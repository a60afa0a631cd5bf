package remote_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/remote"
	"github.com/distlock/distlock/server"
)

// requests counts the requests sent through it by path ("/v1/sets/acquire",
// or "acquire" for any lock's acquire, "release" for any lock's release).
type requests struct {
	tr *http.Transport
	mu sync.Mutex
	n  map[string]int
}

func (c *requests) RoundTrip(r *http.Request) (*http.Response, error) {
	key := r.URL.Path
	if rest, ok := strings.CutPrefix(key, "/v1/locks/"); ok {
		_, key, _ = strings.Cut(rest, "/") // the action: "" for inspect
	}
	c.mu.Lock()
	if c.n == nil {
		c.n = make(map[string]int)
	}
	c.n[key]++
	c.mu.Unlock()
	return c.tr.RoundTrip(r)
}

func (c *requests) count(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

// countedRemote returns a remote engine on url whose requests are counted.
//
// The transport is the test's own, its idle connections closed when the
// test ends, before the server shuts down: parallel requests (a set's
// Inspects) can leave a connection dialed and never used, which the
// server's Shutdown waits for (as new) up to 5 s.
func countedRemote(t *testing.T, url string) (*remote.Engine, *requests) {
	c := &requests{tr: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(c.tr.CloseIdleConnections)
	return newRemote(t, url, remote.WithHTTPClient(&http.Client{Transport: c})), c
}

// assertFree checks that nobody holds names.
func assertFree(t *testing.T, ctx context.Context, e engine.Engine, names ...string) {
	t.Helper()
	for _, n := range names {
		if info, err := e.Inspect(ctx, n); err != nil || info.Held {
			t.Errorf("%s: %+v, %v; want free", n, info, err)
		}
	}
}

// testSets: through a server on url, a set is granted in one request (one
// engine step), refused whole when it overlaps a held name, released in
// one request; bad input is typed and changes nothing; a ring of Clients
// whose sets close cycles completes.
func testSets(t *testing.T, url string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, n := countedRemote(t, url)
	mg, err := e.AcquireMulti(ctx, enginetest.SetRequests("s", time.Minute, "a", "b", "c"))
	if err != nil || !mg.Acquired || len(mg.Tokens) != 3 {
		t.Fatalf("AcquireMulti: %+v, %v", mg, err)
	}
	if n.count("/v1/sets/acquire") != 1 || n.count("acquire") != 0 {
		t.Fatalf("requests %v; want one set request, no lock's", n.n)
	}
	for i, name := range []string{"a", "b", "c"} {
		if info, err := e.Inspect(ctx, name); err != nil || info.Owner != "s" || info.Token != mg.Tokens[i] {
			t.Fatalf("%s: %+v, %v; want s's, token %d", name, info, err, mg.Tokens[i])
		}
	}
	refused, err := e.AcquireMulti(ctx, enginetest.SetRequests("o", time.Minute, "d", "b"))
	if err != nil || refused.Acquired || refused.Blocked != 1 || refused.Grant.Holder != "s" || refused.Grant.HolderTTL <= 0 {
		t.Fatalf("a set over held b: %+v, %v; want refused at 1 by s", refused, err)
	}
	assertFree(t, ctx, e, "d")

	var ae *engine.ArgumentError
	for _, bad := range []struct {
		what string
		rs   []engine.AcquireRequest
	}{
		{"a repeated name", enginetest.SetRequests("o", time.Minute, "d", "d")},
		{"an empty name", enginetest.SetRequests("o", time.Minute, "d", "")},
		{"a ttl of 1 ms", append(enginetest.SetRequests("o", time.Minute, "d"), engine.AcquireRequest{Name: "e", Owner: "o", TTL: time.Millisecond})},
	} {
		if _, err := e.AcquireMulti(ctx, bad.rs); !errors.As(err, &ae) {
			t.Errorf("AcquireMulti with %s: %v; want *engine.ArgumentError", bad.what, err)
		}
	}
	if _, err := e.ReleaseMulti(ctx, enginetest.ReleaseRequests([]string{"a", "b"}, "s", "")); !errors.As(err, &ae) {
		t.Errorf("ReleaseMulti with an empty owner: %v; want *engine.ArgumentError", err)
	}
	assertFree(t, ctx, e, "d", "e")

	released := n.count("/v1/sets/release")
	res, err := e.ReleaseMulti(ctx, enginetest.ReleaseRequests([]string{"c", "a", "b", "d"}, "s"))
	if err != nil || len(res) != 4 || res[0].Status != engine.Released || res[1].Status != engine.Released ||
		res[2].Status != engine.Released || res[3].Status != engine.NotHeld {
		t.Fatalf("ReleaseMulti: %+v, %v; want released three times, then not held", res, err)
	}
	if n.count("/v1/sets/release") != released+1 || n.count("release") != 0 {
		t.Fatalf("requests %v; want one set release, no lock's", n.n)
	}
	assertFree(t, ctx, e, "a", "b", "c")

	cs := make([]*distlock.Client, 4)
	for i := range cs {
		cs[i] = distlock.New(newRemote(t, url))
		t.Cleanup(func() { _ = cs[i].Close() })
	}
	enginetest.SetCycles(t, ctx, cs, "cycle/", 6, distlock.WithTTL(5*time.Second))
}

// TestMultiMemory: sets through a server on the embedded engine.
func TestMultiMemory(t *testing.T) {
	_, url := startServer(t, newMemory(t), server.WithLogger(quietLogger()))
	testSets(t, url)
}

// TestMultiRedis: sets through a server on a real redis-server.
func TestMultiRedis(t *testing.T) {
	_, url := startRedisServer(t)
	testSets(t, url)
}

// plain hides the sets of its engine (engine.MultiAcquirer,
// engine.MultiReleaser) and every other optional interface.
type plain struct{ engine.Engine }

// TestMultiFallback: through a server whose engine has no sets, a set is
// engine.ErrNotAtomic, changing nothing, and the Client takes it name by
// name (and releases it through the set endpoint, name by name on the
// server).
func TestMultiFallback(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mem := newMemory(t)
	_, url := startServer(t, plain{mem}, server.WithLogger(quietLogger()))
	e, n := countedRemote(t, url)
	if _, err := e.AcquireMulti(ctx, enginetest.SetRequests("s", time.Minute, "a", "b")); !errors.Is(err, engine.ErrNotAtomic) {
		t.Fatalf("AcquireMulti on an engine without sets: %v; want engine.ErrNotAtomic", err)
	}
	assertFree(t, ctx, mem, "a", "b")
	c := distlock.New(e)
	defer c.Close()
	set, err := c.TryAcquireAll(ctx, []string{"b", "a"})
	if err != nil {
		t.Fatalf("TryAcquireAll: %v; want the set, name by name", err)
	}
	if n.count("acquire") != 2 {
		t.Errorf("requests %v; want two locks' acquires", n.n)
	}
	for _, name := range []string{"a", "b"} {
		if info, err := mem.Inspect(ctx, name); err != nil || info.Owner != set.Owner(name) || info.Token != set.Token(name) {
			t.Fatalf("%s: %+v, %v", name, info, err)
		}
	}
	if err := set.Release(ctx); err != nil {
		t.Fatal(err)
	}
	assertFree(t, ctx, mem, "a", "b")
}

//go:build unix && !lite

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/etcd/etcdtest"
	"github.com/distlock/distlock/engine/postgres/pgtest"
	"github.com/distlock/distlock/engine/zookeeper/zktest"
	"github.com/distlock/distlock/internal/redistest"
)

// leaksBackend is a backend of the cross-backend tests: the CLI's
// environment and the URL a library opens it with.
type leaksBackend struct {
	env       map[string]string
	serveArgs []string // distlock serve's flags for it
	libURL    string
}

// leaksBackends starts a Redis server, an etcd member, a PostgreSQL server
// (schema cli, made by distlock postgres init) and a ZooKeeper server.
func leaksBackends(t *testing.T) map[string]func(t *testing.T) leaksBackend {
	return map[string]func(t *testing.T) leaksBackend{
		"redis": func(t *testing.T) leaksBackend {
			u := redistest.Start(t).URL()
			return leaksBackend{env: map[string]string{"DISTLOCK_REDIS": u}, serveArgs: []string{"--redis", u}, libURL: u}
		},
		"etcd": func(t *testing.T) leaksBackend {
			eps := etcdtest.Start(t, 1).Endpoints()
			return leaksBackend{env: map[string]string{"DISTLOCK_ETCD": strings.Join(eps, ",")}, serveArgs: []string{"--etcd", strings.Join(eps, ",")},
				libURL: "etcd://" + strings.Join(hostsOf(eps), ",")}
		},
		"postgres": func(t *testing.T) leaksBackend {
			srv, err := pgtest.Start()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(srv.Stop)
			b := leaksBackend{env: map[string]string{"DISTLOCK_POSTGRES": srv.URL(), "DISTLOCK_POSTGRES_SCHEMA": "cli"},
				serveArgs: []string{"--postgres", srv.URL()}, libURL: srv.URL("schema=cli")}
			expect(t, cli{env: b.env}.run(t, "postgres", "init"), 0, `"cli" is ready`)
			return b
		},
		"zookeeper": func(t *testing.T) leaksBackend {
			servers := strings.Join(zktest.Start(t, 1).Servers(), ",")
			return leaksBackend{env: map[string]string{"DISTLOCK_ZOOKEEPER": servers}, serveArgs: []string{"--backend", "zookeeper://" + servers},
				libURL: "zookeeper://" + servers}
		},
	}
}

// hostsOf strips the scheme of endpoints ("http://h:p" → "h:p").
func hostsOf(eps []string) []string {
	out := make([]string, len(eps))
	for i, e := range eps {
		out[i] = strings.TrimPrefix(strings.TrimPrefix(e, "http://"), "https://")
	}
	return out
}

// TestLeaksOncePerHolderEveryBackend: distlock leaks reports a mutex, a
// semaphore's holder and a reader-writer lock's holder whose ttl is beyond
// --max-ttl once each, the same on every backend (a holder with its owner
// and weight or mode), and a counting latch as kind "latch" in JSON and
// in the table, on every backend. Before, PostgreSQL and ZooKeeper
// reported each shared holder twice (the engine's row or node, then the
// listing's holder), the JSON gave a latch kind "other", as it gives junk
// keys, and PostgreSQL's search did not report a latch.
func TestLeaksOncePerHolderEveryBackend(t *testing.T) {
	var mu sync.Mutex
	got := make(map[string][]string)
	t.Run("backends", func(t *testing.T) {
		for name, open := range leaksBackends(t) {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				found := leaksOnce(t, open(t))
				mu.Lock()
				defer mu.Unlock()
				got[name] = found
			})
		}
	})
	var want []string
	for name, g := range got {
		if want == nil {
			want = g
		}
		if !slices.Equal(g, want) {
			t.Errorf("%s reports %q; another backend %q", name, g, want)
		}
	}
}

// leaksOnce holds a mutex, a semaphore and a read lock with a 30s ttl,
// and a latch counting, under lk/ on b, and returns the leaks reported
// with --max-ttl 5s, each as "name kind type holder weight mode" (the
// latch left out), after checking the latch's kind.
func leaksOnce(t *testing.T, b leaksBackend) []string {
	ctx := testCtx(t)
	lib, err := distlock.Open(ctx, b.libURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lib.Close() })
	const ttl = 30 * time.Second
	if _, err := lib.Acquire(ctx, "lk/m", distlock.WithTTL(ttl)); err != nil {
		t.Fatal(err)
	}
	sem, err := lib.Semaphore("lk/sem", 3).Acquire(ctx, distlock.WithWeight(2), distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	rd, err := lib.RWMutex("lk/rw").RLock(ctx, distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := lib.CountDownLatch("lk/latch").TrySetCount(ctx, 2); err != nil || !ok {
		t.Fatalf("TrySetCount: %v, %v", ok, err)
	}
	c := cli{env: b.env}
	r := c.run(t, "leaks", "--json", "--max-ttl", "5s", "lk/")
	expect(t, r, exitFailed)
	var leaks []leakJSON
	if err := json.Unmarshal([]byte(r.stdout), &leaks); err != nil {
		t.Fatalf("leaks --json: %v\n%v", err, r)
	}
	var out []string
	latches := 0
	for _, l := range leaks {
		switch {
		case l.Kind == latchKind:
			latches++
		case l.Kind == "other" || strings.Contains(l.Key, "latch") || strings.Contains(l.Key, "c-lk"):
			t.Errorf("a latch or other key not of kind latch: %+v", l)
		default:
			typ := l.Type
			if l.Holder == "" {
				typ = "" // the storage type of a mutex's lock is the backend's
			}
			out = append(out, fmt.Sprintf("%s %s %s %v %d %s", l.Name, l.Kind, typ, l.Holder != "", l.Weight, l.Mode))
		}
		switch l.Holder {
		case "", sem.Owner(), rd.Owner():
		default:
			t.Errorf("a leak of an unknown holder: %+v", l)
		}
	}
	if latches != 1 {
		t.Errorf("%d latches of kind latch in %s; want 1", latches, r.stdout)
	}
	table := c.run(t, "leaks", "--max-ttl", "5s", "lk/latch")
	expect(t, table, exitFailed, "A countdown latch still counting")
	if !strings.Contains(table.stdout, "  latch  ") {
		t.Errorf("the table does not give the latch kind latch:\n%v", table)
	}
	slices.Sort(out)
	if len(out) != 3 {
		t.Errorf("leaks: %q; want the mutex and each shared holder once\n%v", out, r)
	}
	return out
}

// TestListCursorNotIssuedEveryBackend: distlock serve refuses a listing
// cursor it did not give as invalid_argument (arg cursor) on every
// backend, never 503 nor a page, and changes nothing. Before, PostgreSQL
// refused a carried NUL as a bad name, and the embedded engine,
// PostgreSQL and ZooKeeper served a page from a made-up engine cursor.
func TestListCursorNotIssuedEveryBackend(t *testing.T) {
	backends := leaksBackends(t)
	backends["embedded"] = func(t *testing.T) leaksBackend { return leaksBackend{} }
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := open(t)
			s := serveIn(t, b.env, b.serveArgs...)
			lib := serverLibrary(t, s.url)
			ctx := testCtx(t)
			for _, n := range []string{"a", "p/a", "p/b"} {
				if _, err := lib.Acquire(ctx, n, distlock.WithTTL(30*time.Second)); err != nil {
					t.Fatal(err)
				}
			}
			for _, c := range []string{"garbage", "5:abcde0:0:", "3:-120:0:", "0:0:0:0:", "0:0:0:2:}x",
				"0:0:0:1:\x00", "0:0:0:2:\xff\xfe", "0:0:0:1:a", "5:zzzzz0:0:"} {
				for _, prefix := range []string{"", "p/"} {
					resp, err := http.Get(s.url + "/v1/locks?" + url.Values{"prefix": {prefix}, "cursor": {c}}.Encode())
					if err != nil {
						t.Fatal(err)
					}
					var body struct {
						Error struct{ Code, Arg string }
					}
					err = json.NewDecoder(resp.Body).Decode(&body)
					resp.Body.Close()
					if err != nil || resp.StatusCode != http.StatusBadRequest || body.Error.Code != "invalid_argument" || body.Error.Arg != "cursor" {
						t.Errorf("cursor %q prefix %q: HTTP %d %+v (%v); want 400 invalid_argument, arg cursor", c, prefix, resp.StatusCode, body, err)
					}
				}
			}
			r := cli{env: map[string]string{"DISTLOCK_SERVER": s.url}}.run(t, "list", "--json")
			var infos []infoJSON
			if err := json.Unmarshal([]byte(r.stdout), &infos); err != nil || len(infos) != 3 {
				t.Errorf("list after the bad cursors: %+v, %v\n%v", infos, err, r)
			}
		})
	}
}

package redis_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/engine"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// listCtx is a test's context: bounded far beyond any machine's need (a
// test that hangs fails), not a speed. Its tests include a replica's sync
// and a Cluster's slot move, which a loaded machine stretches.
func listCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// listEngine returns an engine with opts on its own client.
func listEngine(t *testing.T, c goredis.UniversalClient, opts ...redisengine.Option) *redisengine.Engine {
	t.Helper()
	e, err := redisengine.New(c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func listGrant(t *testing.T, e engine.Engine, name, owner string, ttl time.Duration) uint64 {
	t.Helper()
	g, err := e.Acquire(listCtx(t), engine.AcquireRequest{Name: name, Owner: owner, TTL: ttl,
		Metadata: "meta of " + name, Attempt: owner + "/" + name})
	if err != nil || !g.Acquired {
		t.Fatalf("acquire %q: %+v, %v", name, g, err)
	}
	return g.Token
}

// listAllNames pages through List to the end and returns the sorted,
// deduplicated names and the number of pages.
func listAllNames(t *testing.T, l engine.Lister, prefix string, limit int) ([]string, int) {
	t.Helper()
	seen := map[string]bool{}
	cursor, pages := "", 0
	for {
		pages++
		if pages > 10_000 {
			t.Fatal("List never ended")
		}
		infos, next, err := l.List(listCtx(t), prefix, cursor, limit)
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range infos {
			if !i.Held {
				t.Errorf("List returned a lock that is not held: %+v", i)
			}
			seen[i.Name] = true
		}
		if next == "" {
			break
		}
		cursor = next
	}
	var out []string
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, pages
}

func TestListLocks(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	e := listEngine(t, srv.Client())
	raw := srv.Client()
	ctx := listCtx(t)
	all := []string{"a*b", "axb", `back\slash`, "br[ack]et", "jobs/a", "jobs/b", "jobs/c", "other", "q?"}
	for _, n := range all {
		listGrant(t, e, n, "owner-"+n, time.Minute)
	}
	// Keys at a lock's place that are not distlock locks, and keys of
	// the application: none is listed.
	raw.Set(ctx, "distlock:{setnx}", "1", 0)
	raw.HSet(ctx, "distlock:{no-owner}", "foo", "bar")
	raw.Set(ctx, "app:{jobs/x}", "1", 0)

	got, _ := listAllNames(t, e, "", 1000)
	if !slices.Equal(got, all) {
		t.Errorf("List(\"\") = %q\nwant %q", got, all)
	}
	for prefix, want := range map[string][]string{
		"jobs/": {"jobs/a", "jobs/b", "jobs/c"},
		"a*":    {"a*b"},
		"a?b":   nil,
		"br[":   {"br[ack]et"},
		`back\`: {`back\slash`},
		"q?":    {"q?"},
		"nope":  nil,
	} {
		if got, _ := listAllNames(t, e, prefix, 10); !slices.Equal(got, want) {
			t.Errorf("List(%q) = %q, want %q", prefix, got, want)
		}
	}

	// One page's Info is what Inspect says.
	infos, _, err := e.List(ctx, "jobs/a", "", 10)
	if err != nil || len(infos) != 1 {
		t.Fatalf("List(jobs/a) = %+v, %v", infos, err)
	}
	want, err := e.Inspect(ctx, "jobs/a")
	if err != nil {
		t.Fatal(err)
	}
	got1 := infos[0]
	if got1.TTL <= 0 || got1.TTL > time.Minute || want.TTL-got1.TTL > 5*time.Second || got1.TTL-want.TTL > 5*time.Second {
		t.Errorf("TTL %v, Inspect says %v", got1.TTL, want.TTL)
	}
	got1.TTL, want.TTL = 0, 0
	if !reflect.DeepEqual(got1, want) || got1.Owner != "owner-jobs/a" || got1.Metadata != "meta of jobs/a" || got1.Token == 0 || got1.HighWater != got1.Token {
		t.Errorf("List info %+v\nInspect     %+v", got1, want)
	}
}

func TestListPages(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	e := listEngine(t, srv.Client())
	const n = 300
	var want []string
	for i := range n {
		name := fmt.Sprintf("job-%03d", i)
		want = append(want, name)
		listGrant(t, e, name, "o", time.Minute)
	}
	got, pages := listAllNames(t, e, "job-", 20)
	if !slices.Equal(got, want) {
		t.Fatalf("paged List found %d of %d names", len(got), n)
	}
	if pages < 2 {
		t.Errorf("List with limit 20 over %d locks took %d page(s)", n, pages)
	}
	if _, _, err := e.List(listCtx(t), "", "not-a-cursor", 10); err == nil {
		t.Error("List with a bad cursor succeeded")
	}
}

func TestListCustomPrefix(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	e := listEngine(t, srv.Client(), redisengine.WithPrefix("my*app:"))
	other := listEngine(t, srv.Client(), redisengine.WithPrefix("myXapp:"))
	listGrant(t, e, "mine", "o", time.Minute)
	listGrant(t, other, "theirs", "o", time.Minute)
	if got, _ := listAllNames(t, e, "", 100); !slices.Equal(got, []string{"mine"}) {
		t.Errorf("List with prefix my*app: = %q, want [mine]", got)
	}
	leaks, _, err := e.Leaks(listCtx(t), "", time.Hour, "", 100)
	if err != nil || len(leaks) != 0 {
		t.Errorf("Leaks = %+v, %v; want none", leaks, err)
	}
}

// allLeaks pages through Leaks and returns them by key.
func allLeaks(t *testing.T, f engine.LeakFinder, prefix string, maxTTL time.Duration) map[string]engine.Leak {
	t.Helper()
	out := map[string]engine.Leak{}
	cursor := ""
	for range 10_000 {
		leaks, next, err := f.Leaks(listCtx(t), prefix, maxTTL, cursor, 5)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range leaks {
			out[l.Key] = l
		}
		if next == "" {
			return out
		}
		cursor = next
	}
	t.Fatal("Leaks never ended")
	return nil
}

func TestLeaks(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	e := listEngine(t, srv.Client())
	raw := srv.Client()
	ctx := listCtx(t)

	// Healthy: held locks with a ttl, and their fencing high-water keys
	// (whose 7-day ttl is beyond --max-ttl but within the fence ttl).
	for i := range 20 {
		listGrant(t, e, fmt.Sprintf("healthy-%d", i), "o", time.Minute)
	}
	// Leaked: what SETNX-then-EXPIRE code leaves behind, of several types.
	raw.Set(ctx, "distlock:{stuck}", "1 dead-process", 0) // token 1, owner dead-process
	raw.Set(ctx, "distlock:{setnx}", "1", 0)
	raw.Set(ctx, "distlock:junk", "1", 0)
	raw.SAdd(ctx, "distlock:{stuck-set}", "x")
	// A lock with a ttl far beyond any distlock grant.
	listGrant(t, e, "long", "o", time.Minute)
	raw.PExpire(ctx, "distlock:{long}", 48*time.Hour)
	// A fencing high-water made permanent.
	listGrant(t, e, "fenced", "o", time.Minute)
	raw.Persist(ctx, "distlock:{fenced}:fence")
	// Not ours.
	raw.Set(ctx, "app:{stuck}", "1", 0)

	got := allLeaks(t, e, "", 24*time.Hour)
	want := map[string]engine.Leak{
		"distlock:{stuck}":        {Key: "distlock:{stuck}", Name: "stuck", Kind: engine.LeakLock, Type: "string", TTL: -1},
		"distlock:{setnx}":        {Key: "distlock:{setnx}", Name: "setnx", Kind: engine.LeakLock, Type: "string", TTL: -1},
		"distlock:junk":           {Key: "distlock:junk", Kind: engine.LeakOther, Type: "string", TTL: -1},
		"distlock:{stuck-set}":    {Key: "distlock:{stuck-set}", Name: "stuck-set", Kind: engine.LeakLock, Type: "set", TTL: -1},
		"distlock:{fenced}:fence": {Key: "distlock:{fenced}:fence", Name: "fenced", Kind: engine.LeakFence, Type: "string", TTL: -1},
	}
	long, ok := got["distlock:{long}"]
	if !ok || long.Kind != engine.LeakLock || long.Name != "long" || long.TTL < 47*time.Hour {
		t.Errorf("lock with a 48h ttl: %+v, found %v", long, ok)
	}
	delete(got, "distlock:{long}")
	if len(got) != len(want) {
		t.Errorf("Leaks found %d keys, want %d: %+v", len(got), len(want), got)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("leak %s = %+v, want %+v", k, got[k], w)
		}
	}

	// A larger bound excuses the long ttl; a name prefix narrows the scan
	// to lock-shaped keys.
	if got := allLeaks(t, e, "", 72*time.Hour); len(got) != len(want) {
		t.Errorf("Leaks(72h) = %d keys, want %d", len(got), len(want))
	}
	got = allLeaks(t, e, "stuck", 24*time.Hour)
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if !slices.Equal(keys, []string{"distlock:{stuck-set}", "distlock:{stuck}"}) {
		t.Errorf("Leaks(stuck) = %q", keys)
	}
}

// TestListCluster runs List and Leaks on a Redis Cluster of three masters,
// where SCAN has to go to every master.
func TestListCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	ctx := listCtx(t)
	cc := cl.Client()
	e := listEngine(t, cc)
	var want []string
	for i := range 12 { // spread over the three masters' slots
		n := fmt.Sprintf("c%02d", i)
		listGrant(t, e, n, "o", time.Minute)
		want = append(want, n)
	}
	if err := cc.Set(ctx, "distlock:{stuck}", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, _ := listAllNames(t, e, "c", 1); !slices.Equal(got, want) {
		t.Errorf("List on Cluster = %q, want %q", got, want)
	}
	if got := allLeaks(t, e, "", time.Hour); len(got) != 1 || got["distlock:{stuck}"].Name != "stuck" {
		t.Errorf("Leaks on Cluster = %+v", got)
	}
}

// TestLeaksSkipsSharedState: a shared lock's state and holders keys live
// as long as its fence (days), by design: Leaks does not report them.
func TestLeaksSkipsSharedState(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	e := listEngine(t, srv.Client())
	ctx := listCtx(t)
	if _, err := e.Acquire(ctx, engine.AcquireRequest{Name: "sem", Owner: "o", TTL: time.Minute, Kind: engine.Semaphore, Limit: 3, Weight: 1}); err != nil {
		t.Fatal(err)
	}
	leaks, _, err := e.Leaks(ctx, "", time.Hour, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(leaks) != 0 {
		t.Fatalf("a held semaphore reported as leaks: %+v", leaks)
	}
}

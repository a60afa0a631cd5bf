package redis_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/redistest"
)

// TestLockValueForms: what the scripts write is what Inspect reads, in the
// short form of the common grant and in the JSON form, with owners and
// metadata that look like the format's own separators, through re-entry,
// the waiters mark, a partial release and its resent copy.
func TestLockValueForms(t *testing.T) {
	srv := redistest.Start(t)
	raw := srv.Client()
	e := listEngine(t, srv.Client())
	ctx := listCtx(t)
	value := func(name string) string { return raw.Get(ctx, "distlock:{"+name+"}").Val() }
	acquire := func(r engine.AcquireRequest) engine.Grant {
		t.Helper()
		r.TTL = time.Minute
		g, err := e.Acquire(ctx, r)
		if err != nil {
			t.Fatalf("acquire %+v: %v", r, err)
		}
		return g
	}
	release := func(name, owner, id string) engine.ReleaseResult {
		t.Helper()
		res, err := e.ReleaseOnce(ctx, engine.ReleaseRequest{Name: name, Owner: owner}, id)
		if err != nil {
			t.Fatalf("release %q by %q: %v", name, owner, err)
		}
		return res
	}
	inspect := func(name string) engine.Info {
		t.Helper()
		info, err := e.Inspect(ctx, name)
		if err != nil {
			t.Fatalf("inspect %q: %v", name, err)
		}
		return info
	}

	t.Run("short form", func(t *testing.T) {
		owner := "12 34*5" // digits, a space and a star: the separators of the short form
		g := acquire(engine.AcquireRequest{Name: "short", Owner: owner, Attempt: owner})
		tok := strconv.FormatUint(g.Token, 10)
		if v := value("short"); v != tok+" "+owner {
			t.Fatalf("value %q, want %q", v, tok+" "+owner)
		}
		if info := inspect("short"); !info.Held || info.Owner != owner || info.Count != 1 || info.Token != g.Token || info.Metadata != "" {
			t.Fatalf("inspect: %+v", info)
		}
		// A waiting request that is refused marks the lock, and keeps its ttl.
		if g := acquire(engine.AcquireRequest{Name: "short", Owner: "w", Attempt: "w", Waiting: true}); g.Acquired || g.Holder != owner {
			t.Fatalf("refused waiter: %+v", g)
		}
		if v := value("short"); v != tok+"*"+owner {
			t.Fatalf("marked value %q", v)
		}
		if ttl := raw.PTTL(ctx, "distlock:{short}").Val(); ttl < 50*time.Second {
			t.Fatalf("the mark cost the lock its ttl: %v", ttl)
		}
		for _, other := range []string{"12", "12 34", "34*5"} {
			if res := release("short", other, "r"); res.Status != engine.NotOwner {
				t.Fatalf("release by %q: %+v", other, res)
			}
		}
		if res := release("short", owner, "r"); res.Status != engine.Released || res.Remaining != 0 {
			t.Fatalf("release: %+v", res)
		}
		if inspect("short").Held {
			t.Fatal("still held after release")
		}
	})

	t.Run("json form", func(t *testing.T) {
		owner := "job-7 \"ü\"\n{x}"
		meta := "he said \"hi\"\t{}\\ ü 1 2*3"
		g := acquire(engine.AcquireRequest{Name: "long", Owner: owner, Attempt: "a1", Metadata: meta})
		if v := value("long"); !strings.HasPrefix(v, "{") {
			t.Fatalf("value %q is not JSON", v)
		}
		check := func(count int) {
			t.Helper()
			info := inspect("long")
			if !info.Held || info.Owner != owner || info.Metadata != meta || info.Count != count || info.Token != g.Token {
				t.Fatalf("inspect: %+v, want %d holds, token %d", info, count, g.Token)
			}
		}
		check(1)
		if g2 := acquire(engine.AcquireRequest{Name: "long", Owner: owner, Attempt: "a2"}); g2.Count != 2 || g2.Token != g.Token {
			t.Fatalf("re-entry: %+v", g2)
		}
		if g2 := acquire(engine.AcquireRequest{Name: "long", Owner: owner, Attempt: "a2"}); g2.Count != 2 {
			t.Fatalf("retry of the re-entry counted again: %+v", g2)
		}
		check(2)
		if res := release("long", owner, "r1"); res.Remaining != 1 {
			t.Fatalf("release r1: %+v", res)
		}
		if res := release("long", owner, "r1"); res.Status != engine.Released || res.Remaining != 1 {
			t.Fatalf("resent release r1 dropped a hold: %+v", res)
		}
		check(1)
		if res := release("long", owner, "r2"); res.Remaining != 0 {
			t.Fatalf("release r2: %+v", res)
		}
		if v := value("long"); v != "" {
			t.Fatalf("freed lock left %q", v)
		}
	})

	t.Run("release ids", func(t *testing.T) {
		// A hold keeps its last releases' ids (rs), and reads the one id
		// an older version wrote (r): a copy of either drops nothing.
		raw.Set(ctx, "distlock:{ids}", `{"o":"own","c":3,"t":"42","r":"old"}`, time.Minute)
		if res := release("ids", "own", "old"); res.Status != engine.Released || res.Remaining != 3 {
			t.Fatalf("a copy of the release the older version recorded: %+v", res)
		}
		if res := release("ids", "own", "n1"); res.Remaining != 2 {
			t.Fatalf("release n1: %+v", res)
		}
		if v := value("ids"); !strings.Contains(v, `"rs":["old","n1"]`) || strings.Contains(v, `"r":`) {
			t.Fatalf("value after n1: %s, want the ids old and n1 in rs", v)
		}
		for _, id := range []string{"old", "n1"} {
			if res := release("ids", "own", id); res.Status != engine.Released || res.Remaining != 2 {
				t.Fatalf("a copy of %s: %+v", id, res)
			}
		}
		if info := inspect("ids"); !info.Held || info.Count != 2 || info.Token != 42 {
			t.Fatalf("inspect: %+v", info)
		}
		// At most engine.KeptReleaseIDs ids, the newest.
		raw.Set(ctx, "distlock:{ids}", `{"o":"own","c":20,"t":"42"}`, time.Minute)
		for i := range 10 {
			release("ids", "own", "k"+strconv.Itoa(i))
		}
		if v := value("ids"); !strings.Contains(v, `"rs":["k2","k3","k4","k5","k6","k7","k8","k9"]`) {
			t.Fatalf("value after 10 releases: %s, want the last %d ids", v, engine.KeptReleaseIDs)
		}
	})

	t.Run("not a lock", func(t *testing.T) {
		// Strings other code left at a lock's key: every script refuses
		// them with WRONGTYPE and changes nothing.
		for _, v := range []string{"1", "owner", "12-x", "{not json", `{"foo":1}`} {
			raw.Set(ctx, "distlock:{foreign}", v, 0)
			_, err := e.Acquire(ctx, engine.AcquireRequest{Name: "foreign", Owner: "o", Attempt: "o", TTL: time.Minute})
			if err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
				t.Errorf("acquire over %q: %v, want WRONGTYPE", v, err)
			}
			if _, err := e.Release(ctx, engine.ReleaseRequest{Name: "foreign", Owner: "o"}); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
				t.Errorf("release over %q: %v, want WRONGTYPE", v, err)
			}
			if _, err := e.Inspect(ctx, "foreign"); err == nil {
				t.Errorf("inspect of %q: no error", v)
			}
			if got := value("foreign"); got != v {
				t.Errorf("value %q became %q", v, got)
			}
		}
	})
}

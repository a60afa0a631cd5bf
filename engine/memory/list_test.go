package memory

import (
	"context"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
)

// listClock is a settable clock for the listing tests.
type listClock struct{ t time.Time }

func (c *listClock) now() time.Time { return c.t }

func newListEngine(t *testing.T) (*Engine, *listClock) {
	t.Helper()
	clock := &listClock{t: time.Unix(1_700_000_000, 0)}
	e := New()
	e.now = clock.now
	t.Cleanup(func() { _ = e.Close() })
	return e, clock
}

// listAcquire grants name to owner; every call is a new attempt (re-entry
// when owner holds name already).
func listAcquire(t *testing.T, e *Engine, name, owner string, ttl time.Duration, meta string) uint64 {
	t.Helper()
	attempt := strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + name + "-" + meta
	g, err := e.Acquire(context.Background(), engine.AcquireRequest{Name: name, Owner: owner, TTL: ttl, Metadata: meta, Attempt: attempt})
	if err != nil || !g.Acquired {
		t.Fatalf("acquire %q: %+v, %v", name, g, err)
	}
	return g.Token
}

// listAll pages through List with the given limit.
func listAll(t *testing.T, e *Engine, prefix string, limit int) []engine.Info {
	t.Helper()
	var all []engine.Info
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatal("List never ended")
		}
		infos, next, err := e.List(context.Background(), prefix, cursor, limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(infos) > max(limit, 1) {
			t.Fatalf("page of %d infos with limit %d", len(infos), limit)
		}
		all = append(all, infos...)
		if next == "" {
			return all
		}
		cursor = next
	}
}

func listNames(infos []engine.Info) []string {
	var out []string
	for _, i := range infos {
		out = append(out, i.Name)
	}
	return out
}

func TestListPrefixAndPages(t *testing.T) {
	e, _ := newListEngine(t)
	for _, n := range []string{"jobs/b", "jobs/a", "jobs/c", "other", "jobs*"} {
		listAcquire(t, e, n, "o-"+n, time.Minute, "meta "+n)
	}
	for _, limit := range []int{0, 1, 2, 100} {
		got := listNames(listAll(t, e, "jobs/", limit))
		if want := []string{"jobs/a", "jobs/b", "jobs/c"}; !slices.Equal(got, want) {
			t.Errorf("limit %d: List(jobs/) = %v, want %v", limit, got, want)
		}
	}
	if got := listNames(listAll(t, e, "", 10)); len(got) != 5 {
		t.Errorf("List(\"\") = %v, want all 5", got)
	}
	// The prefix is a plain string, not a pattern.
	if got := listNames(listAll(t, e, "jobs*", 10)); !slices.Equal(got, []string{"jobs*"}) {
		t.Errorf("List(jobs*) = %v", got)
	}
}

func TestListInfo(t *testing.T) {
	e, clock := newListEngine(t)
	token := listAcquire(t, e, "a", "owner-a", time.Minute, "host=x")
	listAcquire(t, e, "a", "owner-a", time.Minute, "re-entry") // metadata stays
	sub, err := e.Subscribe(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	clock.t = clock.t.Add(10 * time.Second)

	infos := listAll(t, e, "", 10)
	if len(infos) != 1 {
		t.Fatalf("List = %+v", infos)
	}
	want := engine.Info{Name: "a", Held: true, Owner: "owner-a", Count: 2, Metadata: "host=x",
		Token: token, TTL: 50 * time.Second, HighWater: token, Subscribers: 1} // a subscriber is no waiter
	if !reflect.DeepEqual(infos[0], want) {
		t.Fatalf("List info = %+v\nwant        %+v", infos[0], want)
	}
	inspected, err := e.Inspect(context.Background(), "a")
	if err != nil || !reflect.DeepEqual(inspected, want) {
		t.Fatalf("Inspect = %+v, %v; List and Inspect disagree", inspected, err)
	}
}

func TestListSkipsExpiredAndReleased(t *testing.T) {
	e, clock := newListEngine(t)
	listAcquire(t, e, "short", "o1", time.Second, "")
	listAcquire(t, e, "long", "o2", time.Hour, "")
	listAcquire(t, e, "released", "o3", time.Hour, "")
	if _, err := e.Release(context.Background(), engine.ReleaseRequest{Name: "released", Owner: "o3"}); err != nil {
		t.Fatal(err)
	}
	clock.t = clock.t.Add(2 * time.Second)
	if got := listNames(listAll(t, e, "", 10)); !slices.Equal(got, []string{"long"}) {
		t.Fatalf("List = %v, want [long]", got)
	}
}

func TestLeaksMemory(t *testing.T) {
	e, _ := newListEngine(t)
	listAcquire(t, e, "ok", "o1", time.Hour, "")
	listAcquire(t, e, "huge", "o2", 48*time.Hour, "")
	leaks, next, err := e.Leaks(context.Background(), "", 24*time.Hour, "", 100)
	if err != nil || next != "" {
		t.Fatalf("Leaks: next %q, err %v", next, err)
	}
	if len(leaks) != 1 || leaks[0].Name != "huge" || leaks[0].Kind != engine.LeakLock || leaks[0].TTL != 48*time.Hour {
		t.Fatalf("Leaks = %+v, want only huge", leaks)
	}
	if leaks, _, _ := e.Leaks(context.Background(), "", 72*time.Hour, "", 100); len(leaks) != 0 {
		t.Fatalf("Leaks(72h) = %+v, want none", leaks)
	}
}

func TestListClosed(t *testing.T) {
	e, _ := newListEngine(t)
	_ = e.Close()
	if _, _, err := e.List(context.Background(), "", "", 10); err != engine.ErrClosed {
		t.Fatalf("List after Close: %v, want ErrClosed", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e2, _ := newListEngine(t)
	if _, _, err := e2.List(ctx, "", "", 10); err != context.Canceled {
		t.Fatalf("List with cancelled ctx: %v", err)
	}
}

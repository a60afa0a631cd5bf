package server

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
)

// scanLister lists an engine's locks the way a Redis SCAN may under churn,
// which the engine.Lister contract allows (the limit is a hint; a lock held
// throughout is in a complete listing): from the start, its first answer
// leaves out the lock in the "later buckets" (late) and goes on from "x",
// where that lock is; a second listing from the start covers more
// buckets, and answers every lock at once, ending there.
type scanLister struct {
	*memory.Engine
	late   string
	starts int
}

func (s *scanLister) List(ctx context.Context, prefix, cursor string, limit int) ([]engine.Info, string, error) {
	all, _, err := s.Engine.List(ctx, prefix, "", 1000)
	if err != nil {
		return nil, "", err
	}
	pick := func(keep func(string) bool) (out []engine.Info) {
		for _, i := range all {
			if keep(i.Name) {
				out = append(out, i)
			}
		}
		return out
	}
	switch {
	case cursor == "x":
		return pick(func(n string) bool { return n == s.late }), "", nil
	case s.starts == 0:
		s.starts++
		return pick(func(n string) bool { return n != s.late }), "x", nil
	}
	return all, "", nil
}

// TestListPageLongerEnginePage: the server serves an engine page longer
// than the limit over several pages; listing that engine page again from
// its cursor can answer more names (SCAN under churn), one of which sorts
// before those served. Every lock must still be listed: the rest of the
// first engine page is carried in the cursor, not found again by listing.
func TestListPageLongerEnginePage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	mem := memory.New()
	defer mem.Close()
	names := []string{"p/a", "p/b", "p/c", "p/d"}
	for _, n := range names {
		if g, err := mem.Acquire(ctx, engine.AcquireRequest{Name: n, Owner: "o", TTL: time.Minute}); err != nil || !g.Acquired {
			t.Fatalf("acquire %s: %+v, %v", n, g, err)
		}
	}
	l := &scanLister{Engine: mem, late: "p/a"}
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatalf("more than 10 pages: %v", got)
		}
		infos, next, err := listPage(ctx, mem, l, "p/", cursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(infos) > 2 {
			t.Fatalf("a page of limit 2 holds %d locks", len(infos))
		}
		for _, i := range infos {
			got = append(got, i.Name)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	sort.Strings(got)
	if len(got) != len(names) || got[0] != "p/a" || got[3] != "p/d" {
		t.Fatalf("listed %v, want each of %v once", got, names)
	}
}

// TestListPageBadCursor: a cursor the server did not give is refused.
func TestListPageBadCursor(t *testing.T) {
	mem := memory.New()
	defer mem.Close()
	for _, c := range []string{"x", "3:ab", "0:0:", "0:0:1:2", "-1:"} {
		if _, _, err := listPage(context.Background(), mem, mem, "", c, 2); err != errBadCursor {
			t.Errorf("cursor %q: %v, want errBadCursor", c, err)
		}
	}
}

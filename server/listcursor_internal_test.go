package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// TestListCursorPartsChecked: a cursor with the server's seal (forged
// with its key, which is no secret) is still checked part by part: a name
// it carries that is no lock name ("", "}x", a NUL, bad UTF-8), lies
// outside the listing's prefix or out of order, and an engine cursor the
// engine refuses, are each refused with errBadCursor before any name
// reaches the engine; nothing changes. Before, the carried names went to
// Inspect unchecked (Redis Cluster: 503 for "" and "}x"; PostgreSQL: an
// invalid name) or were served outside the prefix, and Redis's refusal
// of its cursor was a plain error (503).
func TestListCursorPartsChecked(t *testing.T) {
	engines := map[string]func(t *testing.T) engine.Engine{
		"embedded": func(t *testing.T) engine.Engine {
			m := memory.New()
			t.Cleanup(func() { _ = m.Close() })
			return m
		},
		"redis": func(t *testing.T) engine.Engine {
			e, err := redisengine.New(redistest.Start(t).Client())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Close() })
			return e
		},
		"cluster": func(t *testing.T) engine.Engine {
			e, err := redisengine.New(redistest.StartCluster(t, 3).Client())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Close() })
			return e
		},
	}
	for backend, open := range engines {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			e := open(t)
			l := e.(engine.Lister)
			for _, n := range []string{"p/a", "q/a"} {
				if g, err := e.Acquire(ctx, engine.AcquireRequest{Name: n, Owner: "o", TTL: time.Minute}); err != nil || !g.Acquired {
					t.Fatalf("acquire %s: %+v, %v", n, g, err)
				}
			}
			bad := []pageCursor{
				{pending: []string{""}},
				{pending: []string{"}x"}},
				{pending: []string{"p/\x00"}},
				{pending: []string{"p/\xff"}},
				{pending: []string{"q/a"}},               // outside the prefix
				{pending: []string{"p/b", "p/a"}},        // out of order
				{after: "p/b", pending: []string{"p/a"}}, // before the one served
				{after: "q/a"},                           // outside the prefix
				{after: "}x"},
				{ended: true}, // ended with nothing to serve: never given
			}
			if backend != "embedded" { // the embedded engine's cursor is any name
				bad = append(bad, pageCursor{from: "-120"}, pageCursor{from: "abcde"})
			}
			for _, c := range bad {
				forged := sealPageCursor("p/", c.String())
				infos, next, err := listPage(ctx, e, l, "p/", forged, 10)
				if !errors.Is(err, errBadCursor) || len(infos) != 0 || next != "" {
					t.Errorf("sealed %+v: %v, %d locks, next %q; want errBadCursor", c, err, len(infos), next)
				}
			}
			// The sealed cursor of a proper part serves it.
			infos, _, err := listPage(ctx, e, l, "p/", sealPageCursor("p/", pageCursor{pending: []string{"p/a"}}.String()), 10)
			if err != nil || len(infos) != 1 || infos[0].Name != "p/a" || !infos[0].Held {
				t.Fatalf("a proper cursor: %+v, %v", infos, err)
			}
			for _, n := range []string{"p/a", "q/a"} {
				if info, err := e.Inspect(ctx, n); err != nil || !info.Held || info.Owner != "o" {
					t.Errorf("%s after the bad cursors: %+v, %v", n, info, err)
				}
			}
		})
	}
}

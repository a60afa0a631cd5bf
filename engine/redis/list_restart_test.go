package redis_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/redistest"
)

// TestListAcrossRestart: a listing whose server restarts between two of
// its pages (persisting every lock: AOF, fsync always) still lists every
// lock held throughout. A restarted redis-server hashes its keys with a
// new seed, so the SCAN cursor of the first page would go on at a place
// that skips some of them; the cursor carries the server's run id and the
// listing starts over on a new one (names come again; none is missed).
func TestListAcrossRestart(t *testing.T) {
	srv := redistest.Start(t, redistest.WithPersistence())
	e := listEngine(t, srv.Client())
	const n = 300
	for i := range n {
		listGrant(t, e, fmt.Sprintf("restart-%03d", i), "holder", time.Minute)
	}
	infos, cursor, err := e.List(listCtx(t), "restart-", "", 20)
	if err != nil || cursor == "" {
		t.Fatalf("the first page: %d locks, next %q, %v; want a page that is not the last", len(infos), cursor, err)
	}
	seen := map[string]bool{}
	for _, info := range infos {
		seen[info.Name] = true
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	for pages := 1; cursor != ""; pages++ {
		if pages > 10_000 {
			t.Fatal("List never ended")
		}
		var page []engine.Info
		if page, cursor, err = e.List(listCtx(t), "restart-", cursor, 20); err != nil {
			t.Fatal(err)
		}
		for _, info := range page {
			seen[info.Name] = true
		}
	}
	var missed []string
	for i := range n {
		if name := fmt.Sprintf("restart-%03d", i); !seen[name] {
			missed = append(missed, name)
		}
	}
	if len(missed) > 0 {
		t.Fatalf("%d of %d locks held throughout were not listed across the restart: %v", len(missed), n, missed)
	}
}

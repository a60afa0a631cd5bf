package redis_test

import (
	"slices"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/redistest"
)

// TestStrangerAdminListSkipsJunkSharedState: keys at a shared lock's
// place that distlock did not write (a hash at distlock:{NAME}:s whose kind
// is not a number; one whose holder's record is not JSON) are not distlock
// locks: List leaves them out, as it leaves out junk at a mutex's place,
// and lists the locks held beside them. Before the fix one such key failed
// the whole listing ("inspect shared: unexpected reply []"), so distlock
// list showed nothing but that error.
func TestStrangerAdminListSkipsJunkSharedState(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	e := listEngine(t, c)
	ctx := listCtx(t)
	cl := distlock.New(e)
	t.Cleanup(func() { _ = cl.Close() })
	m, err := cl.Acquire(ctx, "junk-good")
	if err != nil {
		t.Fatal(err)
	}
	s, err := cl.Semaphore("junk-sem", 2).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Junk, as another program using the prefix might leave it.
	c.Set(ctx, "distlock:{junk-mutex}", "hello world", 0)
	c.HSet(ctx, "distlock:{junk-kind}:s", "k", "zz")
	future := float64(time.Now().Add(time.Hour).UnixMicro())
	c.HSet(ctx, "distlock:{junk-holder}:s", "k", "1", "l", "2", "u", "1", "o:x", "not json")
	c.ZAdd(ctx, "distlock:{junk-holder}:sh", goredis.Z{Score: future, Member: "x"})
	var names []string
	cursor := ""
	for {
		infos, next, err := e.List(ctx, "junk-", cursor, 1)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		for _, i := range infos {
			names = append(names, i.Name)
			if i.Name == "junk-good" && (!i.Held || i.Token != m.Token()) || i.Name == "junk-sem" && (i.Kind != engine.Semaphore || !i.Held || i.Token != s.Token()) {
				t.Errorf("listed %+v", i)
			}
		}
		if next == "" {
			break
		}
		cursor = next
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if want := []string{"junk-good", "junk-sem"}; !slices.Equal(names, want) {
		t.Fatalf("listed %v, want %v", names, want)
	}
}

package remote_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
)

// TestTwoServersListSharedLocks: two servers on one Redis list the same
// locks, of every kind, whichever server the locks were taken through
// (each server lists from the engine's state, not from a book of its own);
// a force-release through the other server frees the shared lock and its
// holder learns it was taken over.
func TestTwoServersListSharedLocks(t *testing.T) {
	_, urls := twoServers(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, b := newRemote(t, urls[0]), newRemote(t, urls[1])
	c := distlock.New(a)
	defer c.Close()
	sem, err := c.Semaphore("jobs", 3).Acquire(ctx, distlock.WithWeight(2), distlock.WithTTL(6*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RWMutex("table").RLock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(ctx, "mutex"); err != nil {
		t.Fatal(err)
	}
	list := func(e engine.Lister) map[string]engine.Info {
		infos, next, err := e.List(ctx, "", "", 100)
		if err != nil || next != "" {
			t.Fatalf("List = %v, %q, %v", infos, next, err)
		}
		out := map[string]engine.Info{}
		for _, i := range infos {
			i.TTL = 0 // times left differ between the two reads
			for j := range i.Holders {
				i.Holders[j].TTL = 0
			}
			out[i.Name] = i
		}
		return out
	}
	la, lb := list(a), list(b)
	if len(la) != 3 || la["jobs"].Kind != engine.Semaphore || la["table"].Kind != engine.RWLock || la["mutex"].Kind != 0 {
		t.Fatalf("the server the locks were taken through lists %+v", la)
	}
	if !reflect.DeepEqual(la, lb) {
		t.Fatalf("the two servers list different locks:\n%+v\n%+v", la, lb)
	}
	held, err := b.ForceRelease(ctx, "jobs")
	if err != nil || !held {
		t.Fatalf("ForceRelease through the other server = %v, %v", held, err)
	}
	if info, err := c.Semaphore("jobs", 3).Inspect(ctx); err != nil || info.Held {
		t.Fatalf("after force-release: %+v, %v", info, err)
	}
	<-sem.Done()
	var lost *distlock.LostError
	if !errors.As(sem.Err(), &lost) || lost.Cause != distlock.TakenOver {
		t.Fatalf("the holder lost its permits with %v, want taken over", sem.Err())
	}
}

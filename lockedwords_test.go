package distlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
)

// TestLockedErrorSaysWhatIsTheCase: a refused try says what the lock's
// state is: a semaphore with permits held but too few free "has fewer than
// N free permits" (not "locked by another owner"); a reader behind a
// queued writer, while two readers hold the lock, is kept for the waiters
// queued first (not "free"); a reader of a write-locked lock is told so;
// a mutex is still "locked by another owner".
func TestLockedErrorSaysWhatIsTheCase(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := distlock.New(memory.New())
	defer c.Close()
	locked := func(what string, err error, kind engine.Kind, queued bool, says string, never ...string) {
		t.Helper()
		var le *distlock.LockedError
		if !errors.As(err, &le) || le.Kind != kind || le.Queued != queued {
			t.Fatalf("%s: %v (%+v), want a *LockedError of kind %v, queued %v", what, err, le, kind, queued)
		}
		if !strings.Contains(err.Error(), says) {
			t.Errorf("%s: %q does not say %q", what, err, says)
		}
		for _, n := range never {
			if strings.Contains(err.Error(), n) {
				t.Errorf("%s: %q says %q", what, err, n)
			}
		}
	}

	// A semaphore of 3 with one permit held: 2 free, 3 asked.
	sem := c.Semaphore("sem", 3)
	held, err := sem.TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx)
	_, err = sem.TryAcquire(ctx, distlock.WithWeight(3))
	locked("3 permits of a half-full semaphore", err, engine.Semaphore, false, `"sem" has fewer than 3 free permits`, "another owner", "free but")
	for range 2 {
		h, err := sem.TryAcquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Release(ctx)
	}
	_, err = sem.TryAcquire(ctx)
	locked("1 permit of a full semaphore", err, engine.Semaphore, false, `"sem" has no free permit`, "another owner", "fewer than 1")

	// Two readers hold the cache; a writer queues; a third reader tries.
	rw := c.RWMutex("cache")
	for range 2 {
		r, err := rw.TryRLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Release(ctx)
	}
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	writer := make(chan error, 1)
	go func() {
		_, err := rw.Lock(wctx)
		writer <- err
	}()
	for {
		info, err := rw.Inspect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.Waiters == 1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the writer did not queue")
		case <-time.After(time.Millisecond):
		}
	}
	_, err = rw.TryRLock(ctx)
	locked("a reader behind a queued writer", err, engine.RWLock, true, `"cache" is kept for the waiters queued first`, "free", "another owner")
	wcancel()
	<-writer

	// A write-locked lock refuses a reader as such.
	wl, err := c.RWMutex("written").TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer wl.Release(ctx)
	_, err = c.RWMutex("written").TryRLock(ctx)
	locked("a reader of a write-locked lock", err, engine.RWLock, false, `"written" is write-locked`)

	// A mutex.
	m, err := c.TryAcquire(ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release(ctx)
	_, err = c.TryAcquire(ctx, "m")
	locked("a held mutex", err, 0, false, `"m" is locked by another owner`)
}

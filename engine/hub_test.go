package engine_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/distlock/distlock/engine"
)

// calls records a Hub's calls to its Watcher; Watch blocks on gate when
// it is set, and fails with fail.
type calls struct {
	mu   sync.Mutex
	log  []string
	gate chan struct{}
	fail error
}

func (c *calls) Watch(ctx context.Context, name string) error {
	if c.gate != nil {
		<-c.gate
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail != nil {
		return c.fail
	}
	c.log = append(c.log, "watch "+name)
	return nil
}

func (c *calls) Unwatch(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log = append(c.log, "unwatch "+name)
}

func (c *calls) got() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.log)
}

func subscribe(t *testing.T, h *engine.Hub, name, waiter string) engine.Subscription {
	t.Helper()
	s, err := h.Subscribe(context.Background(), name, waiter)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func woken(s engine.Subscription) bool {
	select {
	case <-s.C():
		return true
	default:
		return false
	}
}

// TestHubWatchesOnceBeforeReturning: the first subscription of a name
// returns after its Watch, a concurrent one waits for it, and the name is
// watched once.
func TestHubWatchesOnceBeforeReturning(t *testing.T) {
	synctest.Test(t, watchesOnce)
}

func watchesOnce(t *testing.T) {
	c := &calls{gate: make(chan struct{})}
	h := engine.NewHub(c, 0)
	defer h.Close()
	got := make(chan engine.Subscription, 2)
	for range 2 {
		go func() {
			s, err := h.Subscribe(context.Background(), "a", "")
			if err != nil {
				t.Error(err)
			}
			got <- s
		}()
	}
	synctest.Wait() // both blocked
	if len(got) > 0 {
		t.Fatal("Subscribe returned before Watch did")
	}
	close(c.gate)
	a, b := <-got, <-got
	if log := c.got(); !slices.Equal(log, []string{"watch a"}) {
		t.Fatalf("calls %q, want one watch", log)
	}
	if n := h.Count("a"); n != 2 {
		t.Fatalf("Count %d, want 2", n)
	}
	a.Close()
	a.Close() // idempotent
	if log := c.got(); len(log) != 1 {
		t.Fatalf("unwatched with a subscriber left: %q", log)
	}
	b.Close()
	if log := c.got(); !slices.Equal(log, []string{"watch a", "unwatch a"}) {
		t.Fatalf("calls %q, want watch and unwatch", log)
	}
}

// TestHubLingers: a name stays watched for the linger after its last
// subscription left; a subscription meanwhile re-uses the watch.
func TestHubLingers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &calls{}
		h := engine.NewHub(c, 2*time.Second)
		defer h.Close()
		subscribe(t, h, "a", "").Close()
		time.Sleep(time.Second)
		s := subscribe(t, h, "a", "w1") // within the linger
		s.Close()
		time.Sleep(1999 * time.Millisecond)
		synctest.Wait()
		if log := c.got(); !slices.Equal(log, []string{"watch a"}) {
			t.Fatalf("calls %q before the linger passed, want one watch", log)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if log := c.got(); !slices.Equal(log, []string{"watch a", "unwatch a"}) {
			t.Fatalf("calls %q after the linger, want watch and unwatch", log)
		}
		subscribe(t, h, "a", "").Close()
		if log := c.got(); len(log) != 3 || log[2] != "watch a" {
			t.Fatalf("calls %q, want a new watch", log)
		}
	})
}

// TestHubWakes: a waiter's wake-up reaches that waiter alone, a notice the
// plain subscribers alone, WakeAll and Close everyone; wake-ups coalesce.
func TestHubWakes(t *testing.T) {
	h := engine.NewHub(nil, 0)
	plain, w1, w2, other := subscribe(t, h, "a", ""), subscribe(t, h, "a", "w1"), subscribe(t, h, "a", "w2"), subscribe(t, h, "b", "")
	h.WakeWaiter("a", "w1")
	h.WakeWaiter("a", "w1")
	if !woken(w1) || woken(w1) || woken(w2) || woken(plain) || woken(other) {
		t.Fatal("a waiter's wake-up did not reach it alone, once")
	}
	h.Notice("a", engine.Notice{Held: true, Token: 7, Metadata: "v"})
	if !woken(plain) || woken(w1) || woken(w2) || woken(other) {
		t.Fatal("a notice did not reach the plain subscribers alone")
	}
	if n, ok := plain.(engine.Noticer).Notice(); !ok || n.Token != 7 || n.Metadata != "v" {
		t.Fatalf("notice %+v %v, want term 7 value v", n, ok)
	}
	h.Wake("a")
	if !woken(plain) || !woken(w1) || !woken(w2) || woken(other) {
		t.Fatal("Wake did not reach the name's subscribers alone")
	}
	if _, ok := plain.(engine.Noticer).Notice(); ok {
		t.Fatal("a wake-up without a notice left the notice trusted")
	}
	h.WakeAll()
	for _, s := range []engine.Subscription{plain, w1, w2, other} {
		if !woken(s) {
			t.Fatal("WakeAll left a subscriber asleep")
		}
	}
	h.Close()
	h.Close()
	for _, s := range []engine.Subscription{plain, w1, w2, other} {
		if !woken(s) {
			t.Fatal("Close left a subscriber asleep")
		}
		s.Close()
	}
	if _, err := h.Subscribe(context.Background(), "a", ""); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("Subscribe after Close: %v, want ErrClosed", err)
	}
}

// TestHubWatchFails: a failed Watch fails Subscribe and leaves nothing
// registered; the next Subscribe watches again.
func TestHubWatchFails(t *testing.T) {
	c := &calls{fail: errors.New("down")}
	h := engine.NewHub(c, time.Hour)
	defer h.Close()
	if _, err := h.Subscribe(context.Background(), "a", ""); !errors.Is(err, c.fail) {
		t.Fatalf("Subscribe: %v, want the Watch error", err)
	}
	if n := h.Count("a"); n != 0 {
		t.Fatalf("Count %d after a failed Watch, want 0", n)
	}
	c.mu.Lock()
	c.fail = nil
	c.mu.Unlock()
	subscribe(t, h, "a", "").Close()
	if log := c.got(); !slices.Equal(log, []string{"watch a"}) {
		t.Fatalf("calls %q, want a watch", log)
	}
}

package fence_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/fence"
)

var errWrite = errors.New("write failed")

// model is the fencing rule written out plainly, as the oracle for Guard.
type model struct {
	highest uint64
	holder  string
}

// accepts reports whether the rule accepts token from holder.
func (m *model) accepts(token uint64, holder string) bool {
	return token > m.highest || (token == m.highest && holder == m.holder)
}

func TestGuardMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var g fence.Guard
	models := map[string]*model{"a": {}, "b": {}}
	holders := []string{"h1", "h2", "h3"}
	for i := range 5000 {
		res := []string{"a", "b"}[rng.IntN(2)]
		m := models[res]
		token := uint64(i/4 + rng.IntN(8) + 1)
		holder := holders[rng.IntN(len(holders))]
		fail := rng.IntN(5) == 0
		useCheck := !fail && rng.IntN(4) == 0

		want := m.accepts(token, holder)
		ran := false
		var err error
		if useCheck {
			err = g.Check(res, token, holder)
		} else {
			err = g.Do(res, token, holder, func() error {
				ran = true
				if fail {
					return errWrite
				}
				return nil
			})
		}
		switch {
		case !want:
			var se *fence.StaleError
			if !errors.As(err, &se) || !errors.Is(err, fence.ErrStale) {
				t.Fatalf("step %d: %s token %d holder %s (highest %d by %s): got %v, want *StaleError", i, res, token, holder, m.highest, m.holder, err)
			}
			if *se != (fence.StaleError{Resource: res, Token: token, Highest: m.highest, Holder: holder}) {
				t.Fatalf("step %d: got %+v, highest %d", i, *se, m.highest)
			}
			if ran {
				t.Fatalf("step %d: rejected write ran", i)
			}
		case fail:
			if !errors.Is(err, errWrite) || errors.Is(err, fence.ErrStale) {
				t.Fatalf("step %d: got %v, want the write's error", i, err)
			}
		default:
			if err != nil {
				t.Fatalf("step %d: %s token %d holder %s (highest %d by %s): %v", i, res, token, holder, m.highest, m.holder, err)
			}
			if !useCheck && !ran {
				t.Fatalf("step %d: accepted write did not run", i)
			}
			m.highest, m.holder = token, holder
		}
		if got := g.Highest(res); got != m.highest {
			t.Fatalf("step %d: Highest(%s) = %d, want %d", i, res, got, m.highest)
		}
	}
}

// accepted is one write that Guard let through, in the order they ran.
type accepted struct {
	token  uint64
	holder string
}

func TestGuardConcurrentWriters(t *testing.T) {
	var g fence.Guard
	resources := []string{"r0", "r1", "r2"}
	var logMu sync.Mutex
	logs := map[string][]accepted{}

	const writers, steps = 12, 400
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 99))
			holder := fmt.Sprintf("holder-%d", w%4) // several writers share a holder
			for i := range steps {
				res := resources[rng.IntN(len(resources))]
				token := uint64(i*2 + rng.IntN(6) + 1)
				fail := rng.IntN(10) == 0
				if fail && rng.IntN(2) == 0 {
					token += 1_000_000 // a failing write must not raise the mark
				}
				ran := false
				err := g.Do(res, token, holder, func() error {
					ran = true
					if fail {
						return errWrite
					}
					logMu.Lock()
					logs[res] = append(logs[res], accepted{token, holder})
					logMu.Unlock()
					return nil
				})
				var se *fence.StaleError
				switch {
				case errors.As(err, &se):
					if ran {
						t.Errorf("rejected write ran: %v", err)
					}
					if se.Highest < token || se.Token != token || se.Holder != holder || se.Resource != res {
						t.Errorf("stale error %+v for token %d from %s on %s", *se, token, holder, res)
					}
				case fail:
					if !errors.Is(err, errWrite) {
						t.Errorf("failing write: got %v", err)
					}
				case err != nil:
					t.Errorf("Do: %v", err)
				}
			}
		})
	}
	wg.Wait()

	total := 0
	for _, res := range resources {
		log := logs[res]
		total += len(log)
		for i := 1; i < len(log); i++ {
			prev, cur := log[i-1], log[i]
			if cur.token < prev.token {
				t.Fatalf("%s: accepted token %d after %d", res, cur.token, prev.token)
			}
			if cur.token == prev.token && cur.holder != prev.holder {
				t.Fatalf("%s: token %d accepted from %s after %s", res, cur.token, cur.holder, prev.holder)
			}
		}
		var last uint64
		if len(log) > 0 {
			last = log[len(log)-1].token
		}
		if got := g.Highest(res); got != last {
			t.Fatalf("Highest(%s) = %d, want last accepted %d", res, got, last)
		}
	}
	if total < writers*steps/20 {
		t.Fatalf("only %d of %d writes accepted: the test exercises too little", total, writers*steps)
	}
}

func TestGuardTies(t *testing.T) {
	var g fence.Guard
	if err := g.Check("r", 7, "alice"); err != nil {
		t.Fatal(err)
	}
	if err := g.Do("r", 7, "alice", func() error { return nil }); err != nil {
		t.Fatalf("tie from the same holder: %v", err)
	}
	ran := false
	err := g.Do("r", 7, "bob", func() error { ran = true; return nil })
	var se *fence.StaleError
	if !errors.As(err, &se) || se.Highest != 7 || se.Token != 7 || se.Holder != "bob" {
		t.Fatalf("tie from another holder: got %v", err)
	}
	if ran {
		t.Fatal("rejected write ran")
	}
	// bob's rejected tie did not take the token over.
	if err := g.Check("r", 7, "alice"); err != nil {
		t.Fatalf("alice after bob's rejected tie: %v", err)
	}
	if err := g.Check("r", 8, "bob"); err != nil {
		t.Fatal(err)
	}
	if err := g.Check("r", 8, "alice"); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("alice's tie after bob took token 8: got %v", err)
	}
}

func TestGuardFailingWriteDoesNotRaise(t *testing.T) {
	var g fence.Guard
	if err := g.Do("r", 10, "a", func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := g.Do("r", 20, "a", func() error { return errWrite }); !errors.Is(err, errWrite) {
		t.Fatalf("got %v, want the write's error", err)
	}
	if got := g.Highest("r"); got != 10 {
		t.Fatalf("Highest = %d after a failed write with 20, want 10", got)
	}
	if err := g.Do("r", 15, "b", func() error { return nil }); err != nil {
		t.Fatalf("token 15 after a failed write with 20: %v", err)
	}
}

func TestGuardPanickingWrite(t *testing.T) {
	var g fence.Guard
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("panic did not propagate")
			}
		}()
		_ = g.Do("r", 5, "a", func() error { panic("boom") })
	}()
	if got := g.Highest("r"); got != 0 {
		t.Fatalf("Highest = %d after a panicking write, want 0", got)
	}
	done := make(chan error, 1)
	go func() { done <- g.Check("r", 3, "a") }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("resource still locked after a panicking write")
	}
}

func TestGuardInvalidArguments(t *testing.T) {
	var g fence.Guard
	if err := g.Check("r", 5, "a"); err != nil {
		t.Fatal(err)
	}
	ok := func() error { return nil }
	cases := []struct {
		name     string
		resource string
		token    uint64
		holder   string
		write    func() error
	}{
		{"empty resource", "", 9, "a", ok},
		{"token 0", "r", 0, "a", ok},
		{"empty holder", "r", 9, "", ok},
		{"nil write", "r", 9, "a", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ran := false
			write := c.write
			if write != nil {
				write = func() error { ran = true; return nil }
			}
			if err := g.Do(c.resource, c.token, c.holder, write); !errors.Is(err, fence.ErrInvalidArgument) {
				t.Fatalf("Do: got %v, want ErrInvalidArgument", err)
			}
			if ran {
				t.Fatal("write ran")
			}
			if c.write != nil {
				if err := g.Check(c.resource, c.token, c.holder); !errors.Is(err, fence.ErrInvalidArgument) {
					t.Fatalf("Check: got %v, want ErrInvalidArgument", err)
				}
			}
			if got := g.Highest("r"); got != 5 {
				t.Fatalf("Highest(r) = %d, want 5", got)
			}
			if got := g.Highest(""); got != 0 {
				t.Fatalf("Highest(\"\") = %d, want 0", got)
			}
		})
	}
	// Token 5 from holder a is still the mark: a tie from b is rejected.
	if err := g.Check("r", 5, "b"); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("got %v, want ErrStale", err)
	}
}

// TestGuardTokenAboveMax: a token above engine.MaxToken (2^53-1), which no
// grant carries, is refused with ErrInvalidArgument by Do and Check and
// records nothing, so the resource's real holders are not locked out.
// Before, Check("r2", 1<<63, ...) was accepted and every later holder of r2
// was refused as stale. 2^53-1 itself is a token.
func TestGuardTokenAboveMax(t *testing.T) {
	var g fence.Guard
	if err := g.Check("r", 5, "a"); err != nil {
		t.Fatal(err)
	}
	for _, token := range []uint64{engine.MaxToken + 1, 1 << 63, math.MaxUint64} {
		for _, res := range []string{"r", "r2"} {
			ran := false
			err := g.Do(res, token, "typo", func() error { ran = true; return nil })
			if !errors.Is(err, fence.ErrInvalidArgument) || ran {
				t.Fatalf("Do(%s, %d): %v (write ran: %v), want ErrInvalidArgument", res, token, err, ran)
			}
			if err := g.Check(res, token, "typo"); !errors.Is(err, fence.ErrInvalidArgument) {
				t.Fatalf("Check(%s, %d): %v, want ErrInvalidArgument", res, token, err)
			}
		}
	}
	if h, h2 := g.Highest("r"), g.Highest("r2"); h != 5 || h2 != 0 {
		t.Fatalf("Highest after the refusals: r %d, r2 %d; want 5, 0", h, h2)
	}
	if err := g.Check("r2", 7, "b"); err != nil {
		t.Fatalf("r2's holder after the refusals: %v", err)
	}
	if err := g.Check("r2", engine.MaxToken, "c"); err != nil {
		t.Fatalf("token 2^53-1: %v", err)
	}
}

func TestGuardLocksPerResource(t *testing.T) {
	var g fence.Guard
	release := make(chan struct{})
	started := make(chan struct{})
	slowDone := make(chan error, 1)
	go func() {
		slowDone <- g.Do("slow", 1, "a", func() error {
			close(started)
			<-release
			return nil
		})
	}()
	<-started
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()

	// Another resource is not blocked by the slow write.
	other := make(chan error, 1)
	go func() { other <- g.Do("other", 1, "b", func() error { return nil }) }()
	select {
	case err := <-other:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a slow write on one resource blocked another resource")
	}

	// Highest does not wait for the slow write either.
	highest := make(chan uint64, 1)
	go func() { highest <- g.Highest("slow") }()
	select {
	case h := <-highest:
		if h != 0 {
			t.Fatalf("Highest(slow) = %d during the first write, want 0", h)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Highest waited for a write in progress")
	}

	// The same resource waits: the check must see the slow write's token.
	same := make(chan error, 1)
	go func() { same <- g.Check("slow", 1, "b") }()
	select {
	case err := <-same:
		t.Fatalf("a second writer ran during the slow write: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-slowDone; err != nil {
		t.Fatal(err)
	}
	if err := <-same; !errors.Is(err, fence.ErrStale) {
		t.Fatalf("tie from another holder after the slow write: got %v, want ErrStale", err)
	}
}

func TestStaleErrorMatching(t *testing.T) {
	var err error = &fence.StaleError{Resource: "r", Token: 3, Highest: 9, Holder: "h"}
	wrapped := fmt.Errorf("saving: %w", err)
	if !errors.Is(wrapped, fence.ErrStale) {
		t.Fatal("errors.Is(wrapped, ErrStale) = false")
	}
	if errors.Is(wrapped, fence.ErrInvalidArgument) {
		t.Fatal("a StaleError matches ErrInvalidArgument")
	}
	var se *fence.StaleError
	if !errors.As(wrapped, &se) || se.Highest != 9 {
		t.Fatalf("errors.As: %v", se)
	}
	for _, c := range []struct {
		err  *fence.StaleError
		want string
	}{
		{&fence.StaleError{Resource: "r", Token: 3, Highest: 9, Holder: "h"},
			`fence: stale fencing token 3 for "r" from holder "h": highest accepted is 9`},
		{&fence.StaleError{Resource: "r", Token: 9, Highest: 9, Holder: "h"},
			`fence: stale fencing token 9 for "r" from holder "h": token already used by another holder`},
		{&fence.StaleError{Resource: "accounts/1", Token: 1792000000000000},
			`fence: stale fencing token 1792000000000000 for "accounts/1"`},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("Error() = %q, want %q", got, c.want)
		}
	}
}

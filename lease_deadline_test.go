package distlock

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
)

// The tests of this file hold a lease whose deadline has passed while its
// deadline timer has not run (issue 23): the timer is stopped, as if the
// process had been stopped past the deadline and continued, and the
// holder's check ran before the timer goroutine. Every check must report
// the loss all the same. They run in a synctest bubble, so the deadline is
// reached exactly, with no waiting.

// leaseTTL is the ttl of the leases of these tests.
const leaseTTL = time.Second

// stalledLease acquires name on a fresh Client over the memory engine,
// without auto-renewal, and stops the lease's deadline timer (the test
// seam): only the checks themselves can notice the deadline now. The Client
// and the engine are closed when fn returns.
func stalledLease(t *testing.T, name string, fn func(c *Client, l *Lease)) {
	eng := memory.New()
	c := New(eng)
	defer func() {
		_ = c.Close()
		_ = eng.Close()
	}()
	l, err := c.Acquire(t.Context(), name, WithTTL(leaseTTL), WithAutoRenew(false))
	if err != nil {
		t.Fatal(err)
	}
	stopTimer(l)
	fn(c, l)
}

// stopTimer stops l's deadline timer.
func stopTimer(l *Lease) {
	l.mu.Lock()
	l.timer.Stop()
	l.mu.Unlock()
}

// untilDeadline advances the bubble's clock to l's deadline.
func untilDeadline(l *Lease) { time.Sleep(time.Until(l.Deadline())) }

// wantExpired fails t unless err is the loss the deadline timer would have
// reported: a *LostError with cause Expired, matching ErrLeaseLost.
func wantExpired(t *testing.T, what string, err error) {
	t.Helper()
	var lost *LostError
	if !errors.As(err, &lost) || lost.Cause != Expired || !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("%s past the deadline: got %v, want a loss with cause %v", what, err, Expired)
	}
}

// closed reports whether ch is closed, without waiting.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestLeaseChecksPastDeadline: Err, a fresh Done, Context's Err and
// context.Cause, a context derived after the deadline and Extend each
// report the loss when they are the first to look after the deadline;
// just before it, the lease is held.
func TestLeaseChecksPastDeadline(t *testing.T) {
	checks := map[string]func(t *testing.T, l *Lease, ctx context.Context){
		"Err": func(t *testing.T, l *Lease, _ context.Context) { wantExpired(t, "Err", l.Err()) },
		"Done": func(t *testing.T, l *Lease, _ context.Context) {
			if !closed(l.Done()) {
				t.Fatal("a fresh Done channel is open past the deadline")
			}
			wantExpired(t, "Err after Done", l.Err())
		},
		"Context.Err": func(t *testing.T, _ *Lease, ctx context.Context) {
			if !errors.Is(ctx.Err(), context.Canceled) {
				t.Fatalf("Context().Err() past the deadline: %v, want context.Canceled", ctx.Err())
			}
			wantExpired(t, "context.Cause", context.Cause(ctx))
		},
		"context.Cause": func(t *testing.T, _ *Lease, ctx context.Context) {
			wantExpired(t, "context.Cause", context.Cause(ctx))
		},
		"Context.Done": func(t *testing.T, _ *Lease, ctx context.Context) {
			if !closed(ctx.Done()) {
				t.Fatal("Context().Done() is open past the deadline")
			}
		},
		"derived context": func(t *testing.T, _ *Lease, ctx context.Context) {
			child, cancel := context.WithTimeout(ctx, time.Hour)
			defer cancel()
			if child.Err() == nil {
				t.Fatal("a context derived from Context() past the deadline is not cancelled")
			}
			wantExpired(t, "the derived context's cause", context.Cause(child))
		},
		"Extend": func(t *testing.T, l *Lease, _ context.Context) {
			err := l.Extend(t.Context(), leaseTTL)
			if !errors.Is(err, ErrNotHeld) {
				t.Fatalf("Extend past the deadline: %v, want ErrNotHeld", err)
			}
			wantExpired(t, "Extend", err)
			wantExpired(t, "Err after Extend", l.Err())
		},
	}
	for name, check := range checks {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				stalledLease(t, "checked", func(_ *Client, l *Lease) {
					ctx := l.Context() // taken while held, as a holder does
					time.Sleep(time.Until(l.Deadline()) - time.Nanosecond)
					if err := l.Err(); err != nil || ctx.Err() != nil || closed(l.Done()) {
						t.Fatalf("just before the deadline: Err %v, Context().Err() %v, Done closed %v; want held",
							err, ctx.Err(), closed(l.Done()))
					}
					untilDeadline(l)
					check(t, l, ctx)
					if !closed(l.Done()) || ctx.Err() == nil {
						t.Fatal("the loss was reported, but Done is open or Context() is not cancelled")
					}
				})
			})
		})
	}
}

// TestLeaseLateConfirmation: a renewal sent before the deadline and answered
// after it does not keep the lease alive: the lease lapsed in between, and
// it is lost, as a holder that looked meanwhile was told.
func TestLeaseLateConfirmation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stalledLease(t, "late", func(_ *Client, l *Lease) {
			time.Sleep(time.Until(l.Deadline()) - time.Millisecond)
			sent := time.Now() // the renewal leaves 1ms before the deadline
			l.sending()
			untilDeadline(l) // ... and its answer comes at the deadline
			l.apply(engine.ExtendResult{Status: engine.Extended}, sent, leaseTTL, nil)
			var lost *LostError
			if err := l.Err(); !errors.As(err, &lost) {
				t.Fatalf("Err after a renewal answered past the deadline: %v, want a loss", err)
			}
			if !closed(l.Done()) {
				t.Fatal("Done is open after a renewal answered past the deadline")
			}
		})
	})
}

// TestDoContextPastDeadline: the context Do gives fn reports the loss when
// fn looks after the deadline, with the loss as its cause.
func TestDoContextPastDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng := memory.New()
		c := New(eng)
		defer func() {
			_ = c.Close()
			_ = eng.Close()
		}()
		err := c.Do(t.Context(), "do", func(ctx context.Context) error {
			l := onlyLease(t, c)
			stopTimer(l)
			untilDeadline(l)
			if ctx.Err() == nil {
				t.Error("fn's context is not cancelled past the lease's deadline")
			}
			wantExpired(t, "fn's context.Cause", context.Cause(ctx))
			return nil
		}, WithTTL(leaseTTL), WithAutoRenew(false))
		wantExpired(t, "Do", err)
	})
}

// onlyLease returns the one lease c holds.
func onlyLease(t *testing.T, c *Client) *Lease {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.leases) != 1 {
		t.Fatalf("the Client holds %d leases, want 1", len(c.leases))
	}
	for l := range c.leases {
		return l
	}
	return nil
}

// TestLeaseRenewalSentLate: a renewal that a late watchdog sends after the
// deadline (the process was stopped) does not make the loss look like an
// unreachable backend: the lease expired.
func TestLeaseRenewalSentLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stalledLease(t, "sentlate", func(_ *Client, l *Lease) {
			untilDeadline(l)
			l.sending()
			wantExpired(t, "Err with a renewal sent late", l.Err())
		})
	})
}

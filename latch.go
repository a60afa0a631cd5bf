package distlock

import (
	"context"
	"errors"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/waiting"
)

// CountDownLatch is a handle on the countdown latch name, in the style of
// Redisson's RCountDownLatch, across processes: a count stored with the
// name in the lock authority, which anyone counts down, and whose waiters
// are woken by notification when it reaches zero. A latch that reached
// zero is gone: TrySetCount starts it again. Latch names are a namespace
// of their own, beside the locks' (a latch and a lock may have the same
// name). The count has no expiry: a process that dies before its
// CountDown leaves the waiters waiting until their contexts end. Engines
// that keep latches: the embedded engine, Redis, etcd, PostgreSQL,
// ZooKeeper and a distlock server on one of them (engine.Latcher);
// elsewhere (the Redlock quorum: see docs/API.md) every call is an
// *UnsupportedError. A CountDownLatch is cheap; make one per use or keep
// it.
type CountDownLatch struct {
	c    *Client
	name string
}

// CountDownLatch returns a handle on the latch name. Nothing is sent until
// a call.
func (c *Client) CountDownLatch(name string) *CountDownLatch {
	return &CountDownLatch{c: c, name: name}
}

// Name returns the latch's name.
func (l *CountDownLatch) Name() string { return l.name }

// latcher checks the call's input and returns the engine's latches.
func (l *CountDownLatch) latcher(ctx context.Context) (engine.Latcher, error) {
	if err := l.c.check(ctx, l.name); err != nil {
		return nil, err
	}
	lt, ok := l.c.eng.(engine.Latcher)
	if !ok {
		return nil, &UnsupportedError{Feature: "countdown latch", Engine: l.c.node, Reason: "the engine keeps no latches (engine.Latcher)"}
	}
	return lt, nil
}

// failed is the error of a latch call op that the engine failed: an
// *UnsupportedError when it answered that it keeps no latches (a distlock
// server whose engine keeps none), else as Client.backendErr.
// gaveUp is Wait's error when the failure budget's verdict ended it after
// the read that failed with err: that read's *BackendError, which says how
// long the reads kept failing.
func (l *CountDownLatch) gaveUp(ctx context.Context, err, verdict error) error {
	out := l.failed(ctx, "latch-count", err)
	var fe *waiting.FailedError
	var be *BackendError
	if errors.As(verdict, &fe) && errors.As(out, &be) {
		be.Failing = fe.Failing
	}
	return out
}

func (l *CountDownLatch) failed(ctx context.Context, op string, err error) error {
	if errors.Is(err, errors.ErrUnsupported) && ctx.Err() == nil {
		return &UnsupportedError{Feature: "countdown latch", Engine: l.c.node, Reason: err.Error(), Err: err}
	}
	return l.c.backendErr(ctx, op, l.name, err)
}

// TrySetCount sets the latch's count when it is zero (the latch is not
// counting), and reports whether it did; a latch still counting keeps its
// count. count must be 1 to engine.MaxLatchCount (2^53-1; else an
// *ArgumentError, and nothing changes).
func (l *CountDownLatch) TrySetCount(ctx context.Context, count int64) (bool, error) {
	lt, err := l.latcher(ctx)
	if err != nil {
		return false, err
	}
	if err := engine.CheckLatchCount(count); err != nil {
		return false, argumentFrom(err)
	}
	set, err := lt.SetCount(ctx, l.name, count)
	if err != nil {
		return false, l.failed(ctx, "latch-set", err)
	}
	return set, nil
}

// CountDown takes one off the latch's count; when it reaches zero, every
// waiter is woken. On a latch at zero it does nothing. A lost reply is
// resent with the same call id, which the engine applies once.
func (l *CountDownLatch) CountDown(ctx context.Context) error {
	lt, err := l.latcher(ctx)
	if err != nil {
		return err
	}
	if _, err := lt.CountDown(ctx, l.name, l.c.owners.Next()); err != nil {
		return l.failed(ctx, "latch-count-down", err)
	}
	return nil
}

// Count returns the latch's count: zero once it reached zero (or was
// never set).
func (l *CountDownLatch) Count(ctx context.Context) (int64, error) {
	lt, err := l.latcher(ctx)
	if err != nil {
		return 0, err
	}
	n, err := lt.Count(ctx, l.name)
	if err != nil {
		return 0, l.failed(ctx, "latch-count", err)
	}
	return n, nil
}

// latchRecheck is how often a subscribed Wait reads the count again
// without a wake-up (jittered).
const latchRecheck = 5 * time.Second

// Wait returns once it reads the latch's count zero (at once when it is),
// woken by notification: it subscribes to the name's wake-ups first, then
// reads the count, and reads it again at each wake-up (a reconnect wakes
// it too, in case one was missed) and every 5 s or so without one (a
// count deleted by hand publishes nothing). A latch set again
// (TrySetCount) right after it reached zero, before a woken Wait's read,
// keeps that Wait waiting for the new count, as Redisson's RCountDownLatch
// does: the latch keeps no record of its past rounds. Re-arm a latch only
// once its waiters have returned, or use a new name per round. On an engine that cannot subscribe
// (PostgreSQL WithoutListen) it reads the count every 100 ms or so
// instead, as lock waits do. When ctx ends it returns a *WaitError matching ctx's error;
// when the Client is closed, one matching ErrClosed. A read that fails is
// tried again every 100 ms or so, as a waiting Acquire's attempts are: a
// connection cut and back, or a failover, costs the Wait nothing; a
// failure no retry mends (bad input, a schema never migrated) ends it at
// once, and reads that keep failing end it after the Client's backend
// failure budget (WithBackendFailureBudget), each with the last read's
// *BackendError.
func (l *CountDownLatch) Wait(ctx context.Context) error {
	lt, err := l.latcher(ctx)
	if err != nil {
		return err
	}
	if err := l.c.begin(ctx, l.name); err != nil {
		return err
	}
	defer l.c.endCall()
	start := time.Now()
	wctx, stop := l.c.closable(ctx)
	defer stop()
	giveUp := func() error { return &WaitError{Name: l.name, Waited: time.Since(start), Ctx: ctxErr(wctx)} }
	var woken <-chan struct{} // nil: the engine could not subscribe; poll
	if sub, err := l.c.eng.Subscribe(wctx, l.name); err == nil {
		defer sub.Close()
		woken = sub.C()
	} else if wctx.Err() != nil {
		return giveUp()
	}
	// A failed read is tried again, as a waiting Acquire's attempt is:
	// until the Client's backend failure budget runs out (a connection
	// cut and back, a member failing over), at once for an error no retry
	// mends.
	failures := &waiting.Failures{Engine: l.c.eng, Budget: l.c.failureBudget}
	for {
		sent := time.Now()
		actx, cancel := failures.Context(wctx, sent)
		n, err := lt.Count(actx, l.name)
		cancel()
		switch {
		case wctx.Err() != nil:
			return giveUp()
		case err != nil:
			if verdict := failures.Note(sent, err); verdict != nil {
				return l.gaveUp(ctx, err, verdict)
			}
		case n == 0:
			return nil
		default:
			_ = failures.Note(sent, nil)
		}
		// Collected unfired (Go 1.23). Subscribed, the count is read
		// again every latchRecheck too: a count deleted by hand (DEL,
		// FLUSHALL) publishes nothing, and no reconnect tells of it.
		d := waiting.Jitter(latchRecheck)
		if woken == nil || err != nil {
			// After a failure, never past the budget's end.
			d = waiting.Jitter(waiting.PollFallback)
			if left := failures.Left(); err != nil && left >= 0 {
				d = min(d, left)
			}
		}
		poll := time.After(d)
		select {
		case <-woken:
		case <-poll:
		case <-wctx.Done():
			return giveUp()
		}
	}
}

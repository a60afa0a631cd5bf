// Package waiting is distlock's one wait loop: the Client's Acquire and the
// server's held-open HTTP acquires both wait for a lock through it, so the
// two cannot drift apart in how they subscribe, when they try again and how
// they leave an engine's waiter queue.
//
// The loop knows nothing of leases, owners or HTTP: one attempt is a
// function its caller gives (Loop.Try), which also decides whether the wait
// is over. The loop chooses how long to sleep after each answer, listens for
// wake-ups, and cleans up.
package waiting

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/distlock/distlock/engine"
)

// Tunables: the polling interval when no wake-up can be received or the
// engine failed, how long a subscription may take to be confirmed before
// the waiter falls back to polling, and how long a waiter that gives up
// may take to leave the queue.
//
// LeaveTimeout bounds how far a wait overruns its context's deadline: the
// attempt in flight ends with the context (on engines whose commands honour
// deadlines), then leaving the queue takes one round trip, at most
// LeaveTimeout. A leave cut short is harmless: without heartbeats the entry
// is dropped after its ttl.
const (
	PollFallback     = 100 * time.Millisecond
	SubscribeTimeout = time.Second
	LeaveTimeout     = 500 * time.Millisecond
)

// ErrStopped is Run's error when Loop.Stop was closed.
var ErrStopped = errors.New("wait stopped")

// Answer is what one attempt came to, as far as waiting goes.
type Answer struct {
	// Grant is the engine's answer (zero when the attempt failed).
	Grant engine.Grant
	// Failed reports that the attempt failed (a backend error): the waiter
	// polls for the next one, unless Loop.Failures says to stop.
	Failed bool
	// Err is the engine's error, when Failed.
	Err error
	// Done ends the wait: the lock was granted (Grant.Acquired), or the call
	// must end for a reason Try keeps (its context ended, the Client or the
	// engine was closed).
	Done bool
}

// Loop waits for one lock name. Its fields are set before Run and not
// changed during it.
type Loop struct {
	// Engine is the engine waited on.
	Engine engine.Engine
	// Name is the lock name.
	Name string
	// Queue is the engine's waiter queue; nil when it keeps none, and then
	// the loop subscribes to the lock's releases instead.
	Queue engine.Queuer
	// Waiter is the id of the wait's entry in Queue: Try's requests carry
	// it (engine.AcquireRequest.Waiter).
	Waiter string
	// Kind is the kind of lock Try asks for (engine.AcquireRequest.Kind):
	// the entry leaves the queue with it (engine.LeaveRequest.Kind).
	Kind engine.Kind
	// Try makes one attempt, on ctx: the wait's context, bounded by the
	// failure budget (Failures.Context).
	Try func(ctx context.Context) Answer
	// Failures, when set, ends the wait with a *FailedError when an
	// attempt fails for good, or when attempts have kept failing for its
	// budget (counting the failures of the attempts made before Run).
	Failures *Failures
	// Queued, when set, is told after every attempt whose answer said the
	// waiter is queued, with the attempt's send time: its entry's deadline
	// was renewed then, and from now on it needs heartbeats.
	Queued func(sent time.Time)
	// Turn, when set, is waited for before the first attempt (and given
	// back when Run returns): a caller's own queue among its goroutines on
	// an engine without one (the Client's turns).
	Turn func(ctx context.Context) (giveBack func(), err error)
	// Kick, when set, delivers extra wake-ups: the waiter's heartbeat saw
	// that it heads the queue of a free lock, or that it was dropped (or
	// it failed).
	Kick <-chan struct{}
	// Failing, when set, returns the send time of a heartbeat of the
	// waiter's entry that failed since the entry was last confirmed (zero:
	// none): the run of failures that Failures counts begins then, unless
	// an attempt failed earlier (Failures.Began), so a wait that sleeps
	// queued while the engine stops answering ends within its budget of
	// that heartbeat.
	Failing func() time.Time
	// Stop, when set, ends the wait with ErrStopped when closed.
	Stop <-chan struct{}
	// Detached returns the context for leaving the queue once the wait is
	// over (ctx may have ended by then); Run bounds it by LeaveTimeout.
	Detached func(ctx context.Context) (context.Context, context.CancelFunc)
}

// Run waits: it takes the turn (Turn), subscribes (to the waiter's
// wake-ups on a queue, else to the lock's releases), then makes attempts
// until one says Done, sleeping between them until a wake-up, a kick, or
// the time the answer allows (Sleep). It returns nil when an attempt said
// Done, ctx's error when ctx ended first, ErrStopped when Stop was closed,
// and a *FailedError when Failures said to stop trying a failing engine (a
// failing wait polls, and wakes in time for its budget's end). A queued
// waiter that did not get the lock leaves the queue before Run returns,
// even when no answer said it was queued: an attempt cut short may still
// have entered it.
//
// Run is called after a first attempt was refused (or skipped): it starts
// with the subscription, so a release between that attempt and the
// subscription is caught by the attempt that follows it.
func (l *Loop) Run(ctx context.Context) (err error) {
	if l.Turn != nil {
		giveBack, err := l.Turn(ctx)
		if err != nil {
			return ctx.Err()
		}
		defer giveBack()
	}
	sub, err := l.subscribe(ctx)
	if err != nil {
		return err
	}
	var wake <-chan struct{}
	if sub != nil {
		defer sub.Close()
		wake = sub.C()
	}
	sent, granted := false, false
	if l.Queue != nil {
		defer func() {
			if sent && !granted {
				l.leave(ctx)
			}
		}()
	}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		at := time.Now()
		sent = true
		if l.Failing != nil {
			l.Failures.Began(l.Failing())
		}
		actx, cancel := l.Failures.Context(ctx, at)
		a := l.Try(actx)
		cancel()
		if a.Done {
			granted = a.Grant.Acquired
			return nil
		}
		if err := l.Failures.Note(at, failure(a)); err != nil {
			return err
		}
		if a.Grant.Queued && l.Queued != nil {
			l.Queued(at)
		}
		d, w := l.nap(a, wake, sub != nil)
		var fire <-chan time.Time
		if d >= 0 {
			if timer == nil {
				timer = time.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			fire = timer.C
		}
		select {
		case <-w:
		case <-l.Kick:
		case <-fire:
			continue
		case <-l.Stop:
			return ErrStopped
		case <-ctx.Done():
			return ctx.Err()
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// leave takes the waiter out of the queue, bounded by LeaveTimeout and
// detached from ctx's cancellation.
func (l *Loop) leave(ctx context.Context) {
	dctx, cancel := l.Detached(ctx)
	defer cancel()
	lctx, cancelLeave := context.WithTimeout(dctx, LeaveTimeout)
	defer cancelLeave()
	_ = l.Queue.Leave(lctx, engine.LeaveRequest{Name: l.Name, Waiter: l.Waiter, Kind: l.Kind})
}

// nap is how long to sleep after the refused answer a (negative: until a
// wake-up), never past the failure budget's end when a failed, and the
// wake-up channel to listen to meanwhile (wake, or none).
func (l *Loop) nap(a Answer, wake <-chan struct{}, subscribed bool) (time.Duration, <-chan struct{}) {
	d := Sleep(a, l.Queue != nil, subscribed)
	if left := l.Failures.Left(); a.Failed && left >= 0 && (d < 0 || d > left) {
		d = left
	}
	if l.Queue == nil && a.Grant.Retry > 0 {
		// After a split vote, every contender is woken alike: the
		// random pause alone spreads their next attempts.
		wake = nil
	}
	return d, wake
}

// subscribe takes the wait's subscription within SubscribeTimeout. It
// returns nil and no error when the engine could not subscribe (the loop
// then polls), and ctx's error when ctx ended.
func (l *Loop) subscribe(ctx context.Context) (engine.Subscription, error) {
	timeout := SubscribeTimeout
	if left := l.Failures.Left(); left >= 0 && left < timeout {
		timeout = left // a failing engine: not beyond the budget
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var sub engine.Subscription
	var err error
	if l.Queue != nil {
		sub, err = l.Queue.SubscribeWaiter(sctx, l.Name, l.Waiter)
	} else {
		sub, err = l.Engine.Subscribe(sctx, l.Name)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, nil
	}
	return sub, nil
}

// failure is a's error for Failures.Note: nil when the attempt did not fail.
func failure(a Answer) error {
	switch {
	case !a.Failed:
		return nil
	case a.Err == nil:
		return errFailed
	}
	return a.Err
}

// errFailed stands for the error of a failed attempt that gave none.
var errFailed = errors.New("attempt failed")

// Sleep is how long a waiter sleeps after answer a when no wake-up comes;
// negative for "until woken". queued tells whether the wait is in an
// engine's queue, subscribed whether wake-ups can arrive at all.
//
//   - after a failure: a jittered poll;
//   - after a split vote (Grant.Retry): the pause the engine asked for;
//   - queued behind the head: until woken (only the head is woken by a
//     release, and a waiter's heartbeat says when the head before it died);
//   - otherwise (the head, or no queue) until the holder's lease (or the
//     reservation) runs out, at least 1ms: nobody sends a message when a
//     lease expires. A lock without expiry is polled slowly.
//
// Without wake-ups, the sleep is at most a jittered poll.
func Sleep(a Answer, queued, subscribed bool) time.Duration {
	g := a.Grant
	var d time.Duration
	switch {
	case a.Failed:
		d = Jitter(PollFallback)
	case g.Retry > 0:
		d = g.Retry
	case queued && g.Queued && !g.Head:
		d = -1
	case g.HolderTTL < 0: // no expiry on the lock: only a release ends it
		d = Jitter(10 * PollFallback)
	case g.HolderTTL < time.Millisecond:
		d = time.Millisecond
	default:
		d = g.HolderTTL
	}
	if !subscribed && (d < 0 || d > PollFallback) {
		d = Jitter(PollFallback)
	}
	return d
}

// Aged is the time left that an answer reported (a holder's ttl, or a
// reservation's: engine.Grant.HolderTTL), elapsed after the attempt that
// got it was sent: never below 0; a negative ttl (no expiry) stays as it
// is. A wait that gives up reports the last answer's state with it, so
// that a holder's "lease ends in" is not the wait's length too late.
func Aged(ttl, elapsed time.Duration) time.Duration {
	if ttl < 0 {
		return ttl
	}
	return max(0, ttl-max(0, elapsed))
}

// Jitter returns a duration uniformly in [d/2, 3d/2).
func Jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d)
}

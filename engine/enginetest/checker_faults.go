package enginetest

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/distlock/distlock/engine"
)

// Faults are what an engine's test lets the randomized checker do to the
// backend while a concurrent history runs. Every field is optional. The
// operations a fault makes fail are judged as of unknown outcome (they may
// or may not have taken effect); safety (exclusion, token order, no lease
// valid past its deadline) must hold through every fault.
type Faults struct {
	// Stall stalls what the engine e (one the harness returned) sends to
	// and receives from the backend for d, from now: its connections held
	// by a proxy, or the member e talks to paused. Operations of other
	// Clients go on (and may wait for what e's stalled requests hold). It
	// returns when the stall is over: after d, or when ctx ends.
	Stall func(ctx context.Context, e engine.Engine, d time.Duration) error

	// Restart stops the backend (a process killed) and starts it again on
	// the same address, with what the engine's documentation requires to
	// keep leases and tokens across a restart (persistence). It returns
	// when the backend serves again.
	Restart func(ctx context.Context) error

	// Slack is how much longer than its ttl the backend may keep a lease
	// after a fault (etcd's new leader restarts every lease at its full
	// ttl). It widens, in histories with faults, the intervals in which a
	// grant may be live: the checks of answers that may come late
	// (a refusal while free, a view that shows a holder) allow for it;
	// exclusion and tokens, judged on the intervals a grant is surely
	// live, do not change.
	Slack time.Duration

	// Renews says that a fault (a stall or a restart) may restart every
	// live lease at its full ttl, and that each later fault may do it
	// again (etcd: every new leader does): a lease not released may then
	// be live until its ttl, plus Slack, after the end of the last fault
	// that began while it may still have been live. Like Slack, it widens
	// only the intervals in which a grant may be live.
	Renews bool
}

// stall runs a stall of the client's engine, in the background of the
// client's own operations: the returned function waits for its end. The
// event records when the stall was asked for and when it ended.
func (rc *runClient) stall(ctx context.Context, f *Faults, e *event, d time.Duration) (wait func()) {
	e.Inv = time.Since(rc.start)
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Err = f.Stall(ctx, rc.eng, d)
		e.Resp = time.Since(rc.start)
		e.Out = classify(e.Err)
	}()
	return func() { <-done }
}

// restart restarts the backend and records it.
func (rc *runClient) restart(ctx context.Context, f *Faults, e *event) {
	e.Inv = time.Since(rc.start)
	e.Err = f.Restart(ctx)
	e.Resp = time.Since(rc.start)
	e.Out = classify(e.Err)
}

// Stalls keeps how to stall each engine a harness returned; its Stall is a
// Faults.Stall. The zero value is ready to use.
type Stalls struct {
	mu sync.Mutex
	by map[engine.Engine]func(ctx context.Context, d time.Duration)
}

// Add records how to stall e: stall holds what e sends and receives for d
// and returns when that is over (after d, or when ctx ends).
func (s *Stalls) Add(e engine.Engine, stall func(ctx context.Context, d time.Duration)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.by == nil {
		s.by = map[engine.Engine]func(context.Context, time.Duration){}
	}
	s.by[e] = stall
}

// Stall stalls e for d (Faults.Stall); an engine never added is an error.
func (s *Stalls) Stall(ctx context.Context, e engine.Engine, d time.Duration) error {
	s.mu.Lock()
	stall := s.by[e]
	s.mu.Unlock()
	if stall == nil {
		return errors.New("enginetest: no stall for this engine")
	}
	stall(ctx, d)
	return nil
}

// Pauses counts the stalls in force on each thing a harness pauses (an
// etcd member, a Redis node), so that overlapping stalls stop it once and
// let it go on when the last one ends. The zero value is ready to use.
type Pauses struct {
	mu sync.Mutex
	n  map[any]int
}

// Hold stops key (stop) unless a stall already holds it, waits d (or until
// ctx ends), then lets it go on (cont) unless another stall still holds
// it.
func (p *Pauses) Hold(ctx context.Context, key any, d time.Duration, stop, cont func()) {
	p.mu.Lock()
	if p.n == nil {
		p.n = map[any]int{}
	}
	if p.n[key]++; p.n[key] == 1 {
		stop()
	}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.n[key]--; p.n[key] == 0 {
			cont()
		}
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}

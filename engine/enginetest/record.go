package enginetest

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distlock/distlock/engine"
)

// counting wraps an engine and records what the Client asks of it: it
// counts the calls (and acquires and subscriptions apart), the wake-ups
// its subscriptions delivered, the slowest round trip, and every
// extension with its send and answer times. It keeps the engine's waiter
// queue, if it has one.
type counting struct {
	engine.Engine
	calls      atomic.Int64
	acquires   atomic.Int64
	subscribes atomic.Int64
	wakes      atomic.Int64
	slowest    atomic.Int64 // the slowest round trip that answered (ns)

	mu       sync.Mutex
	extends  []*extendCall
	attempts []acquireCall
	woken    []time.Time // when each wake-up was delivered
	releases []time.Time // when each Release was sent
	subbed   time.Time   // when the latest subscription was confirmed
}

// acquireCall is one Acquire as the engine saw it.
type acquireCall struct {
	sent, answered time.Time
	waiter         string // the request's queue entry ("": none)
	owner          string
	grant          engine.Grant
	err            error
}

// extendCall is one Extend as the engine saw it.
type extendCall struct {
	sent, answered time.Time // answered is zero while the call is out
	reqs           []engine.ExtendRequest
	res            []engine.ExtendResult
	err            error
}

// result returns the call's answer for name: ok is false when the call
// did not ask for name or is still out.
func (x *extendCall) result(name string) (r engine.ExtendResult, ok bool) {
	if x.answered.IsZero() {
		return r, false
	}
	for i, q := range x.reqs {
		if q.Name != name {
			continue
		}
		if x.err != nil || i >= len(x.res) {
			return engine.ExtendResult{Err: x.err}, true
		}
		return x.res[i], true
	}
	return r, false
}

// timed records the round trip that started at start.
func (c *counting) timed(start time.Time) {
	d := int64(time.Since(start))
	for s := c.slowest.Load(); d > s && !c.slowest.CompareAndSwap(s, d); s = c.slowest.Load() {
	}
}

// Slowest is the slowest round trip that answered so far.
func (c *counting) Slowest() time.Duration { return time.Duration(c.slowest.Load()) }

// extendsOf returns the extensions that asked for name, in send order.
func (c *counting) extendsOf(name string) []extendCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []extendCall
	for _, x := range c.extends {
		for _, q := range x.reqs {
			if q.Name == name {
				out = append(out, *x)
				break
			}
		}
	}
	return out
}

func (c *counting) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	c.calls.Add(1)
	c.acquires.Add(1)
	sent := time.Now()
	g, err := c.Engine.Acquire(ctx, r)
	c.timed(sent)
	c.mu.Lock()
	c.attempts = append(c.attempts, acquireCall{sent: sent, answered: time.Now(), waiter: r.Waiter, owner: r.Owner, grant: g, err: err})
	c.mu.Unlock()
	return g, err
}

// subscribed records a confirmed subscription.
func (c *counting) subscribed() {
	c.mu.Lock()
	c.subbed = time.Now()
	c.mu.Unlock()
}

// triedAfterSubscribing reports whether, since the marks (attempts
// answered, subscriptions made) taken when a call began, the engine was
// subscribed and then answered an attempt sent after the subscription was
// confirmed: a waiting call that made it sleeps until woken (a release
// before the subscription was caught by that attempt). The call may have
// tried once before subscribing, or not (a Client skips that attempt for
// a name it waited for lately).
func (c *counting) triedAfterSubscribing(answered int, subscribes int64) bool {
	if c.subscribes.Load() <= subscribes {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.subbed.IsZero() {
		return false
	}
	for _, a := range c.attempts[min(answered, len(c.attempts)):] {
		if !a.sent.Before(c.subbed) {
			return true
		}
	}
	return false
}

// wokenBetween counts the wake-ups delivered from from to to.
func (c *counting) wokenBetween(from, to time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, at := range c.woken {
		if !at.Before(from) && !at.After(to) {
			n++
		}
	}
	return n
}

// kickedBetween counts the waiter heartbeats for name answered from from
// to to with word to try now (Wake, or the entry gone): the fallback that
// wakes a waiter whose wake-up was lost, or that merely came first.
func (c *counting) kickedBetween(name string, from, to time.Time) int {
	n := 0
	for _, x := range c.extendsOf(name) {
		if x.answered.Before(from) || x.answered.After(to) {
			continue
		}
		for i, q := range x.reqs {
			if q.Name != name || !q.Waiter || x.err != nil || i >= len(x.res) {
				continue
			}
			if r := x.res[i]; r.Err == nil && (r.Wake || r.Status != engine.Extended) {
				n++
			}
		}
	}
	return n
}

// acquiresLog returns every Acquire so far, in the order they answered.
func (c *counting) acquiresLog() []acquireCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]acquireCall(nil), c.attempts...)
}

func (c *counting) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	c.calls.Add(1)
	x := &extendCall{sent: time.Now(), reqs: rs}
	c.mu.Lock()
	c.extends = append(c.extends, x)
	c.mu.Unlock()
	res, err := c.Engine.Extend(ctx, rs)
	c.timed(x.sent)
	c.mu.Lock()
	x.answered, x.res, x.err = time.Now(), res, err
	c.mu.Unlock()
	return res, err
}

func (c *counting) Release(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	c.calls.Add(1)
	sent := time.Now()
	c.mu.Lock()
	c.releases = append(c.releases, sent)
	c.mu.Unlock()
	defer c.timed(sent)
	return c.Engine.Release(ctx, r)
}

// releasesSent returns when each Release so far was sent.
func (c *counting) releasesSent() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.releases...)
}

func (c *counting) Subscribe(ctx context.Context, name string) (engine.Subscription, error) {
	c.calls.Add(1)
	c.subscribes.Add(1)
	sub, err := c.Engine.Subscribe(ctx, name)
	if err != nil {
		return nil, err
	}
	c.subscribed()
	return c.relay(sub), nil
}

// relay returns sub with its wake-ups counted.
func (c *counting) relay(sub engine.Subscription) engine.Subscription {
	r := &countedSub{inner: sub, sig: engine.NewSignal(), stop: make(chan struct{})}
	go func() {
		for {
			select {
			case <-sub.C():
				c.mu.Lock()
				c.woken = append(c.woken, time.Now())
				c.mu.Unlock()
				c.wakes.Add(1)
				r.sig.Wake()
			case <-r.stop:
				return
			}
		}
	}()
	return r
}

// countedSub is a subscription whose wake-ups a counting engine counts.
type countedSub struct {
	inner engine.Subscription
	sig   engine.Signal
	once  sync.Once
	stop  chan struct{}
}

func (s *countedSub) C() <-chan struct{} { return s.sig.C() }

func (s *countedSub) Close() {
	s.once.Do(func() { close(s.stop); s.inner.Close() })
}

// countingQueuer is counting for an engine with a waiter queue.
type countingQueuer struct {
	*counting
	q engine.Queuer
}

func (c countingQueuer) SubscribeWaiter(ctx context.Context, name, waiter string) (engine.Subscription, error) {
	c.calls.Add(1)
	c.subscribes.Add(1)
	sub, err := c.q.SubscribeWaiter(ctx, name, waiter)
	if err != nil {
		return nil, err
	}
	c.subscribed()
	return c.relay(sub), nil
}

func (c countingQueuer) Leave(ctx context.Context, r engine.LeaveRequest) error {
	c.calls.Add(1)
	return c.q.Leave(ctx, r)
}

// countCalls wraps e to record its calls; the result is a Queuer when e is.
func countCalls(e engine.Engine) (engine.Engine, *counting) {
	c := &counting{Engine: e}
	if q, ok := e.(engine.Queuer); ok {
		return countingQueuer{c, q}, c
	}
	return c, c
}

// Capabilities forwards the counted engine's (see engine.Describer).
func (c *counting) Capabilities() engine.Capabilities { return engine.CapabilitiesOf(c.Engine) }

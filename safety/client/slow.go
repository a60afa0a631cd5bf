package client

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/quorum"
)

// Slow injects delays into a client's engine calls, after the lock service
// answered and before the client sees the answer: a client delayed during
// acquisition or renewal (a GC pause, a slow reply). A delay is armed until
// one call it was meant for completes: a grant that reached a majority
// (even too late) or a renewal. Every node's reply of that call is held
// back, so the quorum's own validity check sees the delay too. It is safe
// for concurrent use.
type Slow struct {
	acquire, extend         atomic.Int64 // armed delays
	heldAcquire, heldExtend atomic.Int64 // replies held back so far
	report                  func(kind string, start, end time.Time)
}

// NewSlow returns a Slow that reports each delay it applied to report.
func NewSlow(report func(kind string, start, end time.Time)) *Slow {
	return &Slow{report: report}
}

// DelayAcquire delays the replies of the next grant by d (0 disarms).
func (s *Slow) DelayAcquire(d time.Duration) { s.acquire.Store(int64(d)) }

// DelayExtend delays the replies of the next renewal by d (0 disarms).
func (s *Slow) DelayExtend(d time.Duration) { s.extend.Store(int64(d)) }

// hold sleeps while v is armed, deaf to the context (the process is
// "stopped"), and counts it in held.
func hold(v, held *atomic.Int64) {
	if d := time.Duration(v.Load()); d > 0 {
		time.Sleep(d)
		held.Add(1)
	}
}

// done reports a call that started at start if replies were held back
// during it (held went past before), and disarms v if the call was the one
// the delay was meant for (counts).
func (s *Slow) done(kind string, v, held *atomic.Int64, before int64, start time.Time, counts bool) {
	if held.Load() == before {
		return
	}
	if counts {
		v.Store(0)
	}
	if s.report != nil {
		s.report(kind, start, time.Now())
	}
}

// slowNode wraps one node engine: its replies are held back while armed.
type slowNode struct {
	engine.Engine
	s    *Slow
	name string
}

func (e slowNode) String() string { return e.name }

func (e slowNode) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	g, err := e.Engine.Acquire(ctx, r)
	if err == nil && g.Acquired {
		hold(&e.s.acquire, &e.s.heldAcquire)
	}
	return g, err
}

func (e slowNode) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	res, err := e.Engine.Extend(ctx, rs)
	if err == nil {
		hold(&e.s.extend, &e.s.heldExtend)
	}
	return res, err
}

// fenceRaiser is engine.FenceRaiser (phase 2 of a quorum grant), which a
// quorum needs of its nodes.
type fenceRaiser interface {
	RaiseFence(ctx context.Context, r engine.RaiseRequest) (bool, error)
}

// errNoRaiseFence: the wrapped engine cannot raise fences.
var errNoRaiseFence = errors.New("lab: the wrapped engine cannot raise fences")

// RaiseFence forwards to the wrapped engine (a slowNode is a quorum's node).
func (e slowNode) RaiseFence(ctx context.Context, r engine.RaiseRequest) (bool, error) {
	if fr, ok := e.Engine.(fenceRaiser); ok {
		return fr.RaiseFence(ctx, r)
	}
	return false, errNoRaiseFence
}

// ForceRelease forwards to the wrapped engine when it supports it.
func (e slowNode) ForceRelease(ctx context.Context, name string) (bool, error) {
	if fr, ok := e.Engine.(engine.ForceReleaser); ok {
		return fr.ForceRelease(ctx, name)
	}
	return false, nil
}

// slowTop wraps the client's whole engine (one node or the quorum): it
// disarms a delay once the call it was meant for is over.
type slowTop struct {
	engine.Engine
	s    *Slow
	name string
}

func (e slowTop) String() string { return e.name }

func (e slowTop) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	start, before := time.Now(), e.s.heldAcquire.Load()
	g, err := e.Engine.Acquire(ctx, r)
	counts := g.Acquired || errors.Is(err, quorum.ErrValidityUsedUp)
	e.s.done("acquire reply delayed", &e.s.acquire, &e.s.heldAcquire, before, start, counts)
	return g, err
}

func (e slowTop) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	start, before := time.Now(), e.s.heldExtend.Load()
	res, err := e.Engine.Extend(ctx, rs)
	e.s.done("renewal reply delayed", &e.s.extend, &e.s.heldExtend, before, start, err == nil)
	return res, err
}

// ForceRelease forwards to the wrapped engine when it supports it.
func (e slowTop) ForceRelease(ctx context.Context, name string) (bool, error) {
	if fr, ok := e.Engine.(engine.ForceReleaser); ok {
		return fr.ForceRelease(ctx, name)
	}
	return false, nil
}

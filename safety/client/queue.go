package client

import (
	"context"
	"sync"
	"time"

	"github.com/distlock/distlock/engine"
)

// queueTop is slowTop that also hands the Client the engine's waiter queue
// (engine.Queuer) and its declared capabilities (engine.Describer: the
// Client accepts WithFair only from an engine that declares Fair), so that
// a waiting Acquire enters the lock's queue in Redis; slowTop alone embeds
// engine.Engine only and hides both. It reports
// each waiting call's entry into the queue: the first attempt of a waiter
// id that the engine answered Queued (a waiter dropped and queued again
// under the same id is not reported again).
type queueTop struct {
	slowTop
	q       engine.Queuer
	d       engine.Describer // nil: none declared
	entered func(waiter string, sent, reply time.Time, head bool)

	mu   sync.Mutex
	last string // the last waiter id reported (a worker's calls are sequential)
}

// Interface checks: the wrapper passes the queue on, slowTop does not.
var (
	_ engine.Queuer    = (*queueTop)(nil)
	_ engine.Describer = (*queueTop)(nil)
	_ engine.Engine    = slowTop{}
)

// Capabilities implements engine.Describer with the wrapped engine's.
func (e *queueTop) Capabilities() engine.Capabilities {
	if e.d == nil {
		return engine.Capabilities{}
	}
	return e.d.Capabilities()
}

func (e *queueTop) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	sent := time.Now()
	g, err := e.slowTop.Acquire(ctx, r)
	if err == nil && r.Waiter != "" && g.Queued && e.entered != nil {
		reply := time.Now()
		e.mu.Lock()
		first := e.last != r.Waiter
		e.last = r.Waiter
		e.mu.Unlock()
		if first {
			e.entered(r.Waiter, sent, reply, g.Head)
		}
	}
	return g, err
}

// SubscribeWaiter implements engine.Queuer.
func (e *queueTop) SubscribeWaiter(ctx context.Context, name, waiter string) (engine.Subscription, error) {
	return e.q.SubscribeWaiter(ctx, name, waiter)
}

// Leave implements engine.Queuer.
func (e *queueTop) Leave(ctx context.Context, r engine.LeaveRequest) error {
	return e.q.Leave(ctx, r)
}

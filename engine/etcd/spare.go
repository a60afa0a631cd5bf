package etcd

import (
	"context"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// spareLease is a reservation lease granted ahead of need: a release that
// reserves the lock for the head of its queue takes it and saves the
// LeaseGrant round trip, and a new one is granted in the background. A
// reservation is not a lease anyone's validity counts on, so the spare is
// used as is, while it has most of its ttl left.
type spareLease struct {
	mu      sync.Mutex
	id      clientv3.LeaseID
	expiry  time.Time
	filling bool
}

// spareMargin is the time a spare must have left to be used: a reservation
// should keep the lock for the head about as long as engine.ReserveTTL at
// least.
const spareMargin = 1200 * time.Millisecond

// reservationLease returns a lease of reserveTTL seconds for a reservation:
// the spare when it is fresh, else a new one.
func (e *Engine) reservationLease(ctx context.Context) (clientv3.LeaseID, error) {
	s := &e.spare
	s.mu.Lock()
	id, fresh := s.id, time.Until(s.expiry) > spareMargin
	s.id = clientv3.NoLease
	e.refillLocked()
	s.mu.Unlock()
	if id != clientv3.NoLease && fresh {
		return id, nil
	}
	sent := time.Now()
	resp, err := e.grant(ctx, "grant a reservation lease", reserveTTL)
	if err != nil {
		return 0, err
	}
	e.noteKept(resp.ID, reserveTTL, sent)
	return resp.ID, nil
}

// refillLocked grants the next spare in the background, unless that runs
// already or the engine is closed; e.spare.mu is held.
func (e *Engine) refillLocked() {
	s := &e.spare
	if s.filling || e.bgCtx.Err() != nil {
		return
	}
	s.filling = true
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		sent := time.Now()
		resp, err := e.grant(e.bgCtx, "grant a reservation lease", reserveTTL)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.filling = false
		if err == nil {
			s.id, s.expiry = resp.ID, sent.Add(reserveTTL*time.Second)
		}
	}()
}

package etcd

import (
	"context"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// spareLease is the reservation lease: every reservation this engine makes
// (on any name) goes on it while it has spareMargin left, so that a
// reservation costs no LeaseGrant of its own (nor a revocation when it
// expires), and the next one is granted in the background before it is
// needed. A reservation is not a lease anyone's validity counts on: it only
// keeps a free lock for the head of its queue for a while, and on a shared
// lease it keeps it between spareMargin and reserveTTL.
type spareLease struct {
	mu      sync.Mutex
	id      clientv3.LeaseID
	expiry  time.Time
	filling bool
}

// spareMargin is the time the reservation lease must have left to be used:
// a reservation should keep the lock for the head well beyond
// engine.ReserveTTL (250 ms).
const spareMargin = 1200 * time.Millisecond

// spareRefill: when the reservation lease has less than spareMargin +
// spareRefill left, its successor is granted in the background.
const spareRefill = 400 * time.Millisecond

// reservationLease returns a lease of reserveTTL seconds for a reservation:
// the current one while it has spareMargin left, else a new one (which
// becomes the current one).
func (e *Engine) reservationLease(ctx context.Context) (clientv3.LeaseID, error) {
	s := &e.spare
	s.mu.Lock()
	id, left := s.id, time.Until(s.expiry)
	fresh := id != clientv3.NoLease && left > spareMargin
	if fresh && left < spareMargin+spareRefill {
		e.refillLocked() // reservations come often: the next lease before it is needed
	}
	s.mu.Unlock()
	if fresh {
		return id, nil
	}
	sent := time.Now()
	resp, err := e.grant(ctx, "grant a reservation lease", reserveTTL)
	if err != nil {
		return 0, err
	}
	e.noteKept(resp.ID, reserveTTL, sent)
	e.spare.offer(resp.ID, sent.Add(reserveTTL*time.Second))
	return resp.ID, nil
}

// offer makes lease id, which expires at expiry, the reservation lease if
// it outlives the current one.
func (s *spareLease) offer(id clientv3.LeaseID, expiry time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if expiry.After(s.expiry) {
		s.id, s.expiry = id, expiry
	}
}

// refillLocked grants the next reservation lease in the background, unless
// that runs already or the engine is closed; e.spare.mu is held.
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
		s.filling = false
		s.mu.Unlock()
		if err == nil {
			s.offer(resp.ID, sent.Add(reserveTTL*time.Second))
		}
	}()
}

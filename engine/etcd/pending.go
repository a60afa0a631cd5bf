package etcd

import (
	"context"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// pending is a lease being obtained while the call goes on. Its goroutine
// never outlives the call: release waits for it.
type pending struct {
	done  chan struct{}
	id    clientv3.LeaseID
	err   error
	taken bool
	// age is how much of its ttl the lease had used when the call took it
	// unrenewed (see agedLease); 0 for a lease granted or renewed for it.
	age time.Duration
}

func newPending(ctx context.Context, f func(context.Context) (clientv3.LeaseID, error)) *pending {
	p := &pending{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.id, p.err = f(ctx)
	}()
	return p
}

// get waits for the lease.
func (p *pending) get() (clientv3.LeaseID, error) {
	<-p.done
	return p.id, p.err
}

// take marks the lease as used by a key.
func (p *pending) take() { p.taken = true }

// adopt takes the lease if it is id (a key found on it is the call's own,
// put by a write whose answer was lost).
func (p *pending) adopt(id clientv3.LeaseID) {
	select {
	case <-p.done:
		if p.err == nil && p.id == id {
			p.taken = true
		}
	default: // not obtained yet: no write named it
	}
}

// release waits for the lease and hands it to unused unless it was taken
// (unused recycles it, which revokes a tainted one: see Engine.taint).
func (p *pending) release(unused func(clientv3.LeaseID)) {
	<-p.done
	if !p.taken && p.err == nil {
		unused(p.id)
	}
}

// both runs f and g concurrently and returns when both returned.
func both(f, g func()) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		f()
	}()
	g()
	wg.Wait()
}

// resolved returns a pending lease that is at hand already.
func resolved(id clientv3.LeaseID) *pending {
	p := &pending{done: make(chan struct{}), id: id}
	close(p.done)
	return p
}

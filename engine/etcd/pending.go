package etcd

import (
	"context"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// pending is a lease being obtained while the call goes on. Its goroutine
// never outlives the call: release waits for it.
type pending struct {
	done  chan struct{}
	id    clientv3.LeaseID
	err   error
	taken bool
	// named: a write that puts a key on the lease may have been applied
	// without an answer (see retry), or may still be, late.
	named bool
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

// name marks the lease as named by a write whose outcome is unknown.
func (p *pending) name() { p.named = true }

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

// release waits for the lease and, unless it was taken, hands it to
// unused, or to revoke when a write whose outcome is unknown named it: a
// key that write put, or puts late, goes with the lease, and no such
// write can put one after it.
func (p *pending) release(unused, revoke func(clientv3.LeaseID)) {
	<-p.done
	switch {
	case p.taken || p.err != nil:
	case p.named:
		revoke(p.id)
	default:
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

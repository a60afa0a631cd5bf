// Package workpool runs calls on goroutines it keeps while calls come: a
// call handed to an idle worker costs no new goroutine and no stack grown
// again (network clients' call paths are deep), which a goroutine started
// per call pays every time. The Client runs its requests in flight on one
// (sendSettled), and the ZooKeeper engine its client library's calls,
// which take no context.
package workpool

import (
	"sync"
	"time"
)

// Pool hands calls to its workers. A worker ends once it has waited the
// pool's idle time for a call, or when stop is closed; the owner's wait
// group counts them, so that the owner's Close, which closes stop and then
// waits for the group, leaves none behind.
type Pool struct {
	jobs chan func()     // unbuffered: a send succeeds only into an idle worker
	stop <-chan struct{} // closed when the owner closes
	wg   *sync.WaitGroup
	idle time.Duration
}

// New returns a pool whose workers end after idle without a call or when
// stop is closed, counted in wg.
func New(stop <-chan struct{}, wg *sync.WaitGroup, idle time.Duration) *Pool {
	return &Pool{jobs: make(chan func()), stop: stop, wg: wg, idle: idle}
}

// Run runs f on an idle worker, or on a new one. The owner must not call
// it once it has begun waiting for its wait group.
func (p *Pool) Run(f func()) {
	select {
	case p.jobs <- f:
		return
	default:
	}
	p.wg.Add(1)
	go p.work(f)
}

// work runs f, then the calls handed to it, until it has been idle for the
// pool's idle time or stop is closed.
func (p *Pool) work(f func()) {
	defer p.wg.Done()
	idle := time.NewTimer(p.idle)
	defer idle.Stop()
	for {
		f()
		idle.Reset(p.idle)
		select {
		case f = <-p.jobs:
		case <-idle.C:
			return
		case <-p.stop:
			return
		}
	}
}

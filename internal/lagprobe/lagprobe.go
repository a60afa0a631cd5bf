// Package lagprobe measures a machine's scheduling delay, for tests that
// check a time bound on another process (a lease's deadline plus a grace, a
// loss signal's lateness): such a test derives its slack from the delay
// measured while it ran, and on a machine measured too slow it skips
// ("machine too slow") rather than fails.
package lagprobe

import (
	"sync"
	"time"
)

// Step is the probe's sleep.
const Step = 5 * time.Millisecond

// Starved is the scheduling delay from which a machine is too slow to judge
// a time bound by: a test that misses its bound after measuring this much
// skips ("machine too slow"); below it, the miss is a failure.
const Starved = 100 * time.Millisecond

// Probe measures how much later than asked a short sleep of this process
// returns, at worst, from Start to Done.
type Probe struct {
	stop chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	lag  time.Duration
}

// Start starts a probe; Done stops it.
func Start() *Probe {
	p := &Probe{stop: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			select {
			case <-p.stop:
				return
			default:
			}
			t := time.Now()
			time.Sleep(Step)
			if late := time.Since(t) - Step; late > 0 {
				p.mu.Lock()
				p.lag = max(p.lag, late)
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// Done stops the probe and returns the worst delay it measured.
func (p *Probe) Done() time.Duration {
	close(p.stop)
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lag
}

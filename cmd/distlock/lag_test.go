//go:build unix

package main

import (
	"sync"
	"time"
)

// patience bounds a test's wait for something that must happen (a process
// to exit, a file to appear, a waiter to subscribe): long enough that a
// starved machine does not fail the test, which asserts what happens, not
// how soon.
const patience = time.Minute

// lagProbe measures the machine's scheduling delay while it runs: how much
// later than asked a short sleep of this process returns, at worst. A time
// bound that a test checks on another process (a lease's deadline plus a
// grace) gets a slack derived from it; a test that misses the bound on a
// machine measured this slow skips ("machine too slow") rather than fails.
type lagProbe struct {
	stop chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	lag  time.Duration
}

// lagStep is the probe's sleep.
const lagStep = 5 * time.Millisecond

func startLagProbe() *lagProbe {
	p := &lagProbe{stop: make(chan struct{})}
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
			time.Sleep(lagStep)
			if late := time.Since(t) - lagStep; late > 0 {
				p.mu.Lock()
				p.lag = max(p.lag, late)
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// done stops the probe and returns the worst delay it measured.
func (p *lagProbe) done() time.Duration {
	close(p.stop)
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lag
}

// Package lagprobe measures a machine's scheduling delay, for tests that
// check a time bound on another process (a lease's deadline plus a grace, a
// loss signal's lateness): such a test derives its slack from the delay
// measured while it ran, and on a machine measured too slow it skips
// ("machine too slow") rather than fails.
package lagprobe

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	// watched: each watched process's run-queue wait, first and latest
	// sample (Watch).
	watched map[int]*[2]time.Duration
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
			late := time.Since(t) - Step
			p.mu.Lock()
			p.lag = max(p.lag, late)
			p.sample()
			p.mu.Unlock()
		}
	}()
	return p
}

// Watch adds processes whose time spent waiting for a CPU the probe sums
// (Waited), sampled every Step while they live: the scheduling delay of
// another process, which this one's sleeps do not see on a machine whose
// run queue is long.
func (p *Probe) Watch(pids ...int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.watched == nil {
		p.watched = map[int]*[2]time.Duration{}
	}
	for _, pid := range pids {
		if w, ok := runDelay(pid); ok {
			p.watched[pid] = &[2]time.Duration{w, w}
		}
	}
}

// Waited returns how long the watched processes' threads waited for a
// CPU, summed, from Watch to their last sample (at most Step before each
// exited; final after Done): an upper bound of how much the scheduler delayed
// them (their threads' waits may overlap). 0 where the kernel keeps no
// such account (/proc/PID/task/*/schedstat).
func (p *Probe) Waited() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var sum time.Duration
	for _, w := range p.watched {
		sum += w[1] - w[0]
	}
	return sum
}

// sample reads the watched processes' run-queue waits; the caller holds
// p.mu.
func (p *Probe) sample() {
	for pid, w := range p.watched {
		if now, ok := runDelay(pid); ok && now > w[1] {
			w[1] = now
		}
	}
}

// runDelay is the time pid's threads spent waiting on a run queue, summed
// (the second field of each /proc/PID/task/TID/schedstat, in ns).
func runDelay(pid int) (time.Duration, bool) {
	tasks, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "schedstat"))
	if err != nil || len(tasks) == 0 {
		return 0, false
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		f := strings.Fields(string(b))
		if err != nil || len(f) < 2 {
			continue
		}
		ns, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		sum += time.Duration(ns)
	}
	return sum, true
}

// Delay returns the worst delay measured so far; the probe goes on.
func (p *Probe) Delay() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lag
}

// Done stops the probe and returns the worst delay it measured.
func (p *Probe) Done() time.Duration {
	close(p.stop)
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lag
}

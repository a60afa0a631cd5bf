package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	etcdengine "github.com/distlock/distlock/engine/etcd"
	"github.com/distlock/distlock/engine/etcd/etcdtest"
)

// waitRenewedAfter waits until l has confirmed a renewal sent after at: its
// local deadline (send time + ttl - drift) is then past at + ttl - drift.
// It returns early when l is lost, which the caller then reports.
func waitRenewedAfter(t *testing.T, l *distlock.Lease, at time.Time) {
	t.Helper()
	ttl := l.TTL()
	waitFor(t, 4*ttl, "a renewal sent after "+at.Format(time.StampMilli), func() bool {
		return l.Err() != nil || l.Deadline().After(at.Add(ttl-engine.Drift(ttl)))
	})
}

// newClient returns a distlock Client on an engine of its own, on an etcd
// client of every member (like a separate process), closed at the end.
func newClient(t *testing.T, cl *etcdtest.Cluster, wrap ...func(engine.Engine) engine.Engine) *distlock.Client {
	t.Helper()
	var e engine.Engine = etcdengine.New(cl.Client(t))
	for _, w := range wrap {
		e = w(e)
	}
	c := distlock.New(e)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// holds records when each holder believed it held a lock, and checks that
// no two of those intervals overlap and that tokens increase in grant order.
type holds struct {
	mu  sync.Mutex
	ivs []interval
}

type interval struct {
	start, end time.Time
	token      uint64
	who        string
}

// hold records that who held the lock from start (its Acquire returned)
// until end (it called Release, or its loss was signalled, or its validity
// deadline passed: the earliest).
func (h *holds) hold(who string, token uint64, start, end time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ivs = append(h.ivs, interval{start, end, token, who})
}

// check fails the test when two holders overlapped or a later grant had a
// token not above an earlier one.
func (h *holds) check(t *testing.T) {
	t.Helper()
	bad := h.violations()
	for _, v := range bad {
		t.Error(v)
	}
	if len(bad) == 0 {
		t.Logf("%d holds checked: no overlap, tokens increasing", len(h.ivs))
	}
}

// violations lists the overlaps and token inversions among the holds.
func (h *holds) violations() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	ivs := slices.Clone(h.ivs)
	slices.SortFunc(ivs, func(a, b interval) int { return a.start.Compare(b.start) })
	var bad []string
	for i := 1; i < len(ivs); i++ {
		a, b := ivs[i-1], ivs[i]
		if b.start.Before(a.end) {
			bad = append(bad, fmt.Sprintf("%s (token %d) held from %v while %s (token %d) held until %v",
				b.who, b.token, b.start.Format(time.StampMicro), a.who, a.token, a.end.Format(time.StampMicro)))
		}
		if b.token <= a.token {
			bad = append(bad, fmt.Sprintf("token %d (%s) granted after token %d (%s)", b.token, b.who, a.token, a.who))
		}
	}
	return bad
}

// work holds l for d (or until its loss), then releases it, and records the
// interval.
func (h *holds) work(ctx context.Context, who string, l *distlock.Lease, start time.Time, d time.Duration) {
	var end time.Time
	select {
	case <-time.After(d):
		end = time.Now()
		_ = l.Release(ctx)
	case <-l.Done():
		end = time.Now()
	}
	if dl := l.Deadline(); dl.Before(end) {
		end = dl
	}
	h.hold(who, l.Token(), start, end)
}

// lossAt returns when l's loss was recorded (LostError.At), or now when l
// ended otherwise: the lease's own record, not when a goroutine watching
// Done got to run.
func lossAt(l *distlock.Lease) time.Time {
	<-l.Done()
	var lost *distlock.LostError
	if errors.As(l.Err(), &lost) {
		return lost.At
	}
	return time.Now()
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pausable is an engine whose calls block while it is paused, as those of
// a process stopped with SIGSTOP: the Client's own timers still run, which
// is the point (a stopped process learns of its loss at the latest when it
// runs again, from the same timers).
type pausable struct {
	engine.Engine
	mu     sync.Mutex
	paused chan struct{} // closed when resumed; nil while running
}

func (p *pausable) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused == nil {
		p.paused = make(chan struct{})
	}
}

func (p *pausable) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused != nil {
		close(p.paused)
		p.paused = nil
	}
}

func (p *pausable) gate(ctx context.Context) error {
	p.mu.Lock()
	ch := p.paused
	p.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *pausable) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	if err := p.gate(ctx); err != nil {
		return nil, err
	}
	return p.Engine.Extend(ctx, rs)
}

func (p *pausable) Release(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	if err := p.gate(ctx); err != nil {
		return engine.ReleaseResult{}, err
	}
	return p.Engine.Release(ctx, r)
}

func (p *pausable) Capabilities() engine.Capabilities { return engine.CapabilitiesOf(p.Engine) }

// usurper is a broken engine for the controls: before every acquire it
// force-releases the lock, so it is granted whoever holds it.
type usurper struct{ engine.Engine }

func (u usurper) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	if fr, ok := u.Engine.(engine.ForceReleaser); ok {
		if _, err := fr.ForceRelease(ctx, r.Name); err != nil {
			return engine.Grant{}, err
		}
	}
	return u.Engine.Acquire(ctx, r)
}

package distlock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/quorum"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// pausing wraps a node engine: the first Acquire's reply is held back for
// pause, as if the client process were stopped while the reply waited.
// placed hears of every node that granted that Acquire before the pause.
type pausing struct {
	engine.Engine
	pause  time.Duration
	once   *sync.Once
	placed chan<- struct{}
}

// RaiseFence forwards phase 2 (engine.FenceRaiser) to the node.
func (p pausing) RaiseFence(ctx context.Context, r engine.RaiseRequest) (bool, error) {
	return p.Engine.(engine.FenceRaiser).RaiseFence(ctx, r)
}

func (p pausing) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	g, err := p.Engine.Acquire(ctx, r)
	p.once.Do(func() {
		if err == nil && g.Acquired {
			p.placed <- struct{}{}
		}
		time.Sleep(p.pause) // the stopped process: a fault, not a wait
	})
	return g, err
}

// pausedAcquire runs the schedule: A's acquisition is paused past the ttl
// while B waits for the lock. It reports whether A was handed a lease while
// B held a valid one (an overlapping grant).
func pausedAcquire(t *testing.T, checks, fencing bool) (overlap bool, errA error) {
	srvs := redistest.StartN(t, 3)
	const ttl = 200 * time.Millisecond
	placed := make(chan struct{}, len(srvs)) // A's keys, node by node
	build := func(pause time.Duration, opts ...quorum.Option) *Client {
		nodes := make([]engine.Engine, len(srvs))
		for i, s := range srvs {
			e, err := redisengine.New(s.Client())
			if err != nil {
				t.Fatal(err)
			}
			nodes[i] = e
			if pause > 0 {
				nodes[i] = pausing{Engine: e, pause: pause, once: new(sync.Once), placed: placed}
			}
		}
		q, err := quorum.New(nodes, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = q.Close() })
		c := New(q)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	// Phase-2 fencing is off in both runs: it would refuse the late grant
	// too (it is conditional on still holding), and this test isolates the
	// validity check.
	// The node timeout is longer than the pause, so that the replies that
	// were held back arrive (after the ttl) rather than time out: a busy
	// machine must not turn the schedule into a plain failure.
	timeout, nofence := quorum.WithNodeTimeout(2*time.Second), quorum.WithoutFencing()
	if fencing {
		nofence = func(*quorum.Engine) {}
	}
	var a *Client
	if checks {
		a = build(ttl+100*time.Millisecond, timeout, nofence)
	} else {
		a = build(ttl+100*time.Millisecond, timeout, nofence, quorum.WithoutValidityCheckForTesting())
		a.skipValidity = true
	}
	b := build(0, timeout)
	ctx := context.Background()
	if fencing {
		// Different high-waters on the nodes, so that phase 1's tokens
		// disagree and phase 2 runs (it is skipped when a majority of the
		// grants carry the grant's token already). They are ahead of the
		// clock by more than engine.MaxProposalLead, so that every node
		// mints its high-water + 1 rather than the token the quorum
		// proposes, whose agreement would skip phase 2 (as it did when the
		// request reached the nodes within the proposal's lead).
		ahead := uint64(time.Now().Add(time.Minute).UnixMicro())
		for i, s := range srvs {
			if err := s.Client().Set(ctx, "distlock:{paused-client}:fence", ahead+uint64(i)*1000, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}

	bLease := make(chan *Lease, 1)
	aDone := make(chan struct{})
	go func() {
		// B asks once A's keys are in place on a majority (or A gave up).
		for n := 0; n <= len(srvs)/2; n++ {
			select {
			case <-placed:
			case <-aDone:
				n = len(srvs)
			}
		}
		l, err := b.Acquire(ctx, "paused-client", WithTTL(10*time.Second))
		if err != nil {
			t.Error(err)
		}
		bLease <- l
	}()
	la, errA := a.TryAcquire(ctx, "paused-client", WithTTL(ttl), WithAutoRenew(false))
	at := time.Now()
	close(aDone)
	lb := <-bLease
	if errA == nil && lb != nil {
		return la.Token() != 0 && lb.Err() == nil && at.Before(lb.Deadline()), nil
	}
	return false, errA
}

// TestValidityCheckPreventsOverlap: with the validity checks on, a grant
// whose replies arrive after the ttl is refused; the negative control, with
// both checks off, hands out an overlapping grant, which the test detects.
func TestValidityCheckPreventsOverlap(t *testing.T) {
	t.Run("checks on", func(t *testing.T) {
		overlap, err := pausedAcquire(t, true, false)
		if overlap {
			t.Fatal("overlapping grant with the validity check on")
		}
		if !errors.Is(err, ErrBackend) || !errors.Is(err, quorum.ErrValidityUsedUp) {
			t.Fatalf("A's late grant: %v, want validity used up", err)
		}
	})
	t.Run("control: checks off", func(t *testing.T) {
		overlap, err := pausedAcquire(t, false, false)
		if err != nil || !overlap {
			t.Fatalf("the schedule did not produce an overlapping grant without the check (err %v): the test has no teeth", err)
		}
	})
	t.Run("phase 2 alone refuses", func(t *testing.T) {
		overlap, err := pausedAcquire(t, false, true)
		if overlap || !errors.Is(err, quorum.ErrValidityUsedUp) {
			t.Fatalf("with phase-2 fencing on, the late grant gave overlap=%v err=%v", overlap, err)
		}
	})
}

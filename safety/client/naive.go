package client

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/distlock/distlock/engine"
)

// The naive leases are the lab's negative controls for properties that
// distlock has no public switch for. They speak to the same engines as
// distlock.Client, but get one rule wrong on purpose:
//
//   - ImplNoValidity trusts a grant however late its reply came, as fresh
//     from the reply (distlock refuses a grant whose reply arrives after
//     send + ttl - drift); renewals are measured from their send.
//   - ImplFromReply checks grants like distlock, but measures the validity
//     of a renewal from its reply instead of its send, so a late renewal
//     reply is taken as proof of ownership.
//
// Both poll instead of waiting by notification, and both treat a passed
// deadline as "not sure yet" while a renewal may still confirm the lease,
// as a reply-driven lease does.
type naiveLocker struct {
	eng        engine.Engine
	ttl        time.Duration
	impl       string
	closeConns func()
	wg         sync.WaitGroup
	stop       chan struct{}
	once       sync.Once
}

func newNaive(eng engine.Engine, cfg Config, closeConns func()) *naiveLocker {
	return &naiveLocker{eng: eng, ttl: cfg.TTL, impl: cfg.Impl, closeConns: closeConns, stop: make(chan struct{})}
}

// errNaiveLocked is the naive locker's "held by another owner".
var errNaiveLocked = errors.New("naive: locked by another owner")

// errNaiveLate is ImplFromReply's refusal of a grant whose reply came after
// its validity (measured, correctly, from the send).
var errNaiveLate = errors.New("naive: grant arrived after its validity")

func randomOwner() string {
	var b [16]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (n *naiveLocker) Acquire(ctx context.Context, name string, wait bool) (Lease, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		owner := randomOwner()
		sent := time.Now()
		g, err := n.eng.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: owner, TTL: n.ttl, Attempt: owner})
		reply := time.Now()
		switch {
		case err != nil:
			n.bgRelease(name, owner)
			if !wait || ctx.Err() != nil {
				return nil, err
			}
			sleepCtx(ctx, jitterDur(n.ttl/20))
			continue
		case !g.Acquired:
			if !wait {
				return nil, errNaiveLocked
			}
			d := min(max(g.HolderTTL, time.Millisecond), n.ttl/20)
			if g.Retry > 0 {
				d = g.Retry
			}
			sleepCtx(ctx, d)
			continue
		}
		base := sent
		switch n.impl {
		case ImplNoValidity:
			base = reply // no check: the late grant is trusted as fresh
		case ImplFromReply:
			if !reply.Before(sent.Add(n.ttl - Drift(n.ttl))) {
				n.bgRelease(name, owner)
				return nil, errNaiveLate
			}
		}
		l := &naiveLease{n: n, name: name, owner: owner, token: g.Token, done: make(chan struct{})}
		l.deadline = base.Add(n.ttl - Drift(n.ttl))
		l.base = base
		n.wg.Add(1)
		go l.renew()
		return l, nil
	}
}

func (n *naiveLocker) bgRelease(name, owner string) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, _ = n.eng.Release(ctx, engine.ReleaseRequest{Name: name, Owner: owner})
	}()
}

func (n *naiveLocker) Close() error {
	n.once.Do(func() { close(n.stop) })
	n.wg.Wait()
	err := n.eng.Close()
	n.closeConns()
	return err
}

// naiveLease is a lease of a naiveLocker.
type naiveLease struct {
	n     *naiveLocker
	name  string
	owner string
	token uint64
	done  chan struct{}

	mu       sync.Mutex
	base     time.Time // start of the current validity
	deadline time.Time
	over     bool
	lostAt   time.Time
	cause    string
}

func (l *naiveLease) Token() uint64         { return l.token }
func (l *naiveLease) Owner() string         { return l.owner }
func (l *naiveLease) Done() <-chan struct{} { return l.done }

func (l *naiveLease) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

func (l *naiveLease) Valid() (ok, over bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.over {
		return false, true
	}
	return time.Now().Before(l.deadline), false
}

func (l *naiveLease) Loss() (time.Time, string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lostAt, l.cause, !l.lostAt.IsZero()
}

// end marks the lease over; lost says whether it was a loss.
func (l *naiveLease) end(lostCause string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.over {
		return
	}
	l.over = true
	if lostCause != "" {
		l.lostAt, l.cause = time.Now(), lostCause
	}
	close(l.done)
}

// renew extends the lease every ttl/3 (measured from the last validity
// start) until it is over.
func (l *naiveLease) renew() {
	defer l.n.wg.Done()
	ttl := l.n.ttl
	for {
		l.mu.Lock()
		next := l.base.Add(ttl / 3)
		over := l.over
		l.mu.Unlock()
		if over {
			return
		}
		t := time.NewTimer(time.Until(next))
		select {
		case <-l.done:
			t.Stop()
			return
		case <-l.n.stop:
			t.Stop()
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*ttl)
		sent := time.Now()
		res, err := l.n.eng.Extend(ctx, []engine.ExtendRequest{{Name: l.name, Owner: l.owner, TTL: ttl}})
		reply := time.Now()
		cancel()
		if err == nil && len(res) == 1 {
			err = res[0].Err
		}
		if err != nil {
			l.mu.Lock()
			l.base = time.Now().Add(-ttl/3 + jitterDur(ttl/10)) // retry soon
			l.mu.Unlock()
			continue
		}
		switch res[0].Status {
		case engine.Extended:
			base := sent
			if l.n.impl == ImplFromReply {
				base = reply
			}
			l.mu.Lock()
			l.base = base
			if d := base.Add(ttl - Drift(ttl)); d.After(l.deadline) {
				l.deadline = d
			}
			l.mu.Unlock()
		case engine.HeldByOther:
			l.end("taken over by another owner")
			return
		default:
			l.end("expired")
			return
		}
	}
}

func (l *naiveLease) Release(ctx context.Context) error {
	l.end("")
	_, err := l.n.eng.Release(ctx, engine.ReleaseRequest{Name: l.name, Owner: l.owner})
	return err
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// jitterDur returns a duration uniformly in [d/2, 3d/2).
func jitterDur(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d)
}

// Package gocronlock runs the jobs of a github.com/go-co-op/gocron/v2
// scheduler under distlock's locks and elections, on any distlock engine
// (Redis, etcd, PostgreSQL, a distlock server, a Redlock quorum):
//
//	s, _ := gocron.NewScheduler(gocron.WithDistributedLocker(gocronlock.NewLocker(client)))
//
// or, for one leader that runs every job,
//
//	el := gocronlock.NewElector(client, "reports", hostname)
//	defer el.Close()
//	s, _ := gocron.NewScheduler(gocron.WithDistributedElector(el))
//
// It is a module of its own, so that distlock's users who do not use gocron
// never download it. (The package is gocronlock, in the directory gocron.)
package gocronlock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/distlock/distlock"
	"github.com/go-co-op/gocron/v2"
)

// DefaultMinHold is how long a job's lock is kept at least, from its grant,
// unless WithMinHold says otherwise.
const DefaultMinHold = 500 * time.Millisecond

// DefaultPrefix is put before a job's name to make its lock's name.
const DefaultPrefix = "gocron/"

// Locker is a gocron.Locker on a distlock Client: before each run of a job
// it tries the lock named prefix + the job's name once (TryAcquire, no
// wait), and the run goes ahead only on the scheduler that got it; the
// others skip that run. The lock's lease renews itself while the job runs,
// so a long run is never overlapped by another scheduler's. It is safe
// for concurrent use.
//
// Schedulers fire the same tick at slightly different instants. So that a
// short job is not run again by a scheduler whose tick comes after the
// first one's run ended, Unlock keeps the lock until the minimum hold time
// (WithMinHold, default 500 ms) has passed since the grant, and lets it
// expire then. Choose it above the skew between the schedulers' clocks
// and ticks, and below the job's interval (a scheduler whose tick finds the
// lock held skips that run).
type Locker struct {
	c       *distlock.Client
	prefix  string
	minHold time.Duration
	opts    []distlock.Option
}

// Option configures a Locker or an Elector.
type Option func(*config)

type config struct {
	prefix  string
	minHold time.Duration
	opts    []distlock.Option
}

// WithPrefix sets the prefix of the locks' names (default DefaultPrefix).
func WithPrefix(p string) Option { return func(c *config) { c.prefix = p } }

// WithMinHold sets how long a Locker keeps a job's lock at least, from its
// grant (default DefaultMinHold; 0 releases it as soon as the run ends).
func WithMinHold(d time.Duration) Option { return func(c *config) { c.minHold = d } }

// WithLockOptions passes options to every acquire (WithTTL, WithMetadata,
// WithMaxHold, WithFair for an Elector's campaign). WithOwner is not for
// a Locker: it sets the owner of each lock itself.
func WithLockOptions(opts ...distlock.Option) Option {
	return func(c *config) { c.opts = append(c.opts, opts...) }
}

func newConfig(opts []Option) config {
	c := config{prefix: DefaultPrefix, minHold: DefaultMinHold}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

// NewLocker returns a gocron.Locker on c. The Client stays the caller's
// to close, after the scheduler's Shutdown.
func NewLocker(c *distlock.Client, opts ...Option) *Locker {
	cfg := newConfig(opts)
	return &Locker{c: c, prefix: cfg.prefix, minHold: cfg.minHold, opts: cfg.opts}
}

var _ gocron.Locker = (*Locker)(nil)

// Lock tries the job's lock once. When another scheduler holds it, the
// error matches distlock.ErrLocked, and gocron skips the run; a negative
// minimum hold time is an *distlock.ArgumentError.
func (lk *Locker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	if lk.minHold < 0 {
		return nil, &distlock.ArgumentError{Arg: "min hold", Reason: "negative: " + lk.minHold.String()}
	}
	owner, err := newOwner()
	if err != nil {
		return nil, err
	}
	name := lk.prefix + key
	opts := append(lk.opts[:len(lk.opts):len(lk.opts)], distlock.WithOwner(owner))
	l, err := lk.c.TryAcquire(ctx, name, opts...)
	if err != nil {
		return nil, err
	}
	return &jobLock{lk: lk, lease: l, granted: time.Now()}, nil
}

// newOwner mints the owner token of one run's lock, its own: no other hold
// shares it, so Unlock's minimum hold sets this run's ttl alone.
func newOwner() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("gocronlock: owner token: %w", err)
	}
	return "gocron-" + hex.EncodeToString(b[:]), nil
}

// jobLock is the lock of one run of a job.
type jobLock struct {
	lk      *Locker
	lease   *distlock.Lease
	granted time.Time
}

// Unlock ends the run's hold. Before the minimum hold time has passed, it
// keeps the lock until then and lets it expire (Lease.ReleaseAfter: the
// hold's ttl set to the rest of the minimum hold time, no renewals, no
// release), so that a scheduler whose tick comes a moment later skips the
// run, even if this scheduler's Client is closed meanwhile; after it, it
// releases the lock. A backend error is tried again, with the rest of the
// minimum hold, until the minimum hold has passed; then the lock is
// released, and a release that fails too leaves it held no longer than its
// ttl (Lease.Release drops the lease all the same). A failed ReleaseAfter
// leaves the lease renewed, so stopping there would keep the job's lock for
// as long as the Client lives.
func (j *jobLock) Unlock(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx) // the job's context ends with the scheduler
	pause := unlockRetryFirst
	for {
		rest := max(j.lk.minHold-time.Since(j.granted), 0)
		err := j.lease.ReleaseAfter(ctx, rest)
		if err == nil || rest < distlock.MinTTL || !errors.Is(err, distlock.ErrBackend) {
			return err // answered, or released (ReleaseAfter below MinTTL)
		}
		t := time.NewTimer(min(pause, rest))
		<-t.C
		pause = min(2*pause, unlockRetryMax)
	}
}

// The pauses between an Unlock's tries after a backend error: from
// unlockRetryFirst, doubling to unlockRetryMax.
const (
	unlockRetryFirst = 100 * time.Millisecond
	unlockRetryMax   = time.Second
)

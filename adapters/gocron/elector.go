package gocronlock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/distlock/distlock"
	"github.com/go-co-op/gocron/v2"
)

// ErrNotLeader is IsLeader's answer while this Elector does not lead.
var ErrNotLeader = errors.New("gocronlock: not the leader")

// Elector is a gocron.Elector on a distlock election: from NewElector on,
// it campaigns for the election in the background, holds the leadership
// while it can, and campaigns again when it ends (lost, or the term limit
// of distlock.WithMaxHold), until Close. IsLeader answers from the
// leadership held, with no round trip: nil while it leads (its lease is
// proven, so no other scheduler leads at once, given distlock's clock
// assumptions), ErrNotLeader otherwise. A job that runs long should
// watch Leadership's Context. It is safe for concurrent use.
type Elector struct {
	c     *distlock.Client
	name  string
	value string
	opts  []distlock.Option

	stop context.CancelFunc
	done chan struct{} // closed when the campaign loop has ended

	mu     sync.Mutex
	ld     *distlock.Leadership // the current leadership, or nil
	failed error                // what ended the campaign for good
}

var _ gocron.Elector = (*Elector)(nil)

// retryPause is how long the campaign loop waits after a failed campaign
// (the backend down) before it campaigns again.
const retryPause = time.Second

// NewElector starts campaigning for the election prefix + name (prefix:
// WithPrefix, default DefaultPrefix) with value as the leader's value
// (for example the host name; see distlock.Client.Campaign). Close ends
// the campaign and resigns. Campaign's errors that no retry mends (bad
// input, an engine without elections) end the campaign: Err reports them.
func NewElector(c *distlock.Client, name, value string, opts ...Option) *Elector {
	cfg := newConfig(opts)
	ctx, stop := context.WithCancel(context.Background())
	e := &Elector{c: c, name: cfg.prefix + name, value: value, opts: cfg.opts, stop: stop, done: make(chan struct{})}
	go e.run(ctx)
	return e
}

// run campaigns until ctx ends or a campaign fails for good.
func (e *Elector) run(ctx context.Context) {
	defer close(e.done)
	for ctx.Err() == nil {
		ld, err := e.c.Campaign(ctx, e.name, e.value, e.opts...)
		if err != nil {
			if errors.Is(err, distlock.ErrInvalidArgument) || errors.Is(err, distlock.ErrClosed) {
				e.set(nil, err)
				return
			}
			select { // the backend failed: campaign again a little later
			case <-ctx.Done():
			case <-time.After(retryPause):
			}
			continue
		}
		e.set(ld, nil)
		select {
		case <-ld.Done():
			e.set(nil, nil)
		case <-ctx.Done():
			e.set(nil, nil)
			_ = ld.Resign(context.Background())
		}
	}
}

// set records the current leadership, or the error that ended the
// campaign (as a leadership-less state).
func (e *Elector) set(ld *distlock.Leadership, failed error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ld = ld
	if failed != nil {
		e.failed = failed
	}
}

// IsLeader returns nil while this Elector leads, ErrNotLeader otherwise
// (or the error that ended its campaign).
func (e *Elector) IsLeader(context.Context) error {
	e.mu.Lock()
	ld, failed := e.ld, e.failed
	e.mu.Unlock()
	switch {
	case failed != nil:
		return failed
	case ld == nil || ld.Err() != nil:
		return ErrNotLeader
	}
	return nil
}

// Leadership returns the leadership held, or nil while not leading.
func (e *Elector) Leadership() *distlock.Leadership {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ld
}

// Err returns the error that ended the campaign for good, or nil.
func (e *Elector) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.failed
}

// Close ends the campaign, resigns a leadership held, and returns once
// the campaign loop has ended. Call it before closing the Client.
func (e *Elector) Close() error {
	e.stop()
	<-e.done
	return nil
}

package distlock

import (
	"context"
	"time"

	"github.com/distlock/distlock/internal/waiting"
)

// Leader is the state of an election as observers see it.
type Leader struct {
	// Name is the election's name.
	Name string
	// Value is the leader's value (Campaign, Proclaim).
	Value string
	// Term is the leader's term (its fencing token); 0 when nobody leads.
	Term uint64
	// TTL is the leader's lease time left when it was read.
	TTL time.Duration
}

// Elected reports whether somebody leads.
func (l Leader) Elected() bool { return l.Term != 0 }

// Leader returns the current leader of the election name, or ErrNoLeader
// when nobody leads it.
func (c *Client) Leader(ctx context.Context, name string) (Leader, error) {
	info, err := c.Inspect(ctx, name)
	if err != nil {
		return Leader{}, err
	}
	if !info.Held {
		return Leader{Name: name}, ErrNoLeader
	}
	return Leader{Name: name, Value: info.Metadata, Term: info.Token, TTL: info.TTL}, nil
}

// Observe follows the leader of the election name: the channel receives
// the current state at once, then every change (a new leader, a new value,
// or no leader), until ctx ends or the Client is closed, when it is closed.
//
// Changes arrive by notification (the engine's subscription), not by
// polling; a leader whose lease runs out without a release is noticed when
// its ttl has passed. The channel holds one state and coalesces: a slow
// reader skips intermediate states but always gets the latest one, never a
// stale one. After the subscription reconnects, the state is read again, so
// the final state is never missed. Without a subscription, the observer
// polls (waiting.PollFallback, jittered).
func (c *Client) Observe(ctx context.Context, name string) (<-chan Leader, error) {
	if err := c.begin(ctx, name); err != nil {
		return nil, err
	}
	octx, stop := c.closable(ctx)
	ch := make(chan Leader, 1)
	go func() {
		defer c.endCall()
		defer stop()
		defer close(ch)
		c.observe(octx, name, ch)
	}()
	return ch, nil
}

// observe is Observe's loop.
func (c *Client) observe(ctx context.Context, name string, ch chan Leader) {
	sctx, cancel := context.WithTimeout(ctx, waiting.SubscribeTimeout)
	sub, err := c.eng.Subscribe(sctx, name)
	cancel()
	var wake <-chan struct{}
	if err == nil {
		defer sub.Close()
		wake = sub.C()
	}
	var last Leader
	first := true
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		st, err := c.Leader(ctx, name)
		switch {
		case ctx.Err() != nil:
			return
		case err == nil || err == ErrNoLeader:
			if first || st.Term != last.Term || st.Value != last.Value {
				offer(ch, st)
				last, first = st, false
			}
		}
		d := time.Duration(-1) // until a change is signalled
		switch {
		case err != nil && err != ErrNoLeader:
			d = waiting.Jitter(waiting.PollFallback)
		case st.Elected() && st.TTL >= 0:
			d = st.TTL + time.Millisecond // an expiry sends no message
		}
		if wake == nil && (d < 0 || d > waiting.PollFallback) {
			d = waiting.Jitter(waiting.PollFallback)
		}
		var fire <-chan time.Time
		if d >= 0 {
			timer.Reset(d)
			fire = timer.C
		}
		select {
		case <-wake:
			timer.Stop()
		case <-fire:
		case <-ctx.Done():
			return
		}
	}
}

// offer puts st in ch (capacity 1), replacing a state the reader has not
// taken yet. Only the observer sends on ch, so it cannot block.
func offer(ch chan Leader, st Leader) {
	for {
		select {
		case ch <- st:
			return
		default:
		}
		select {
		case <-ch:
		default:
		}
	}
}

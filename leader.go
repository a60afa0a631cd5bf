package distlock

import (
	"context"
	"errors"
	"time"

	"github.com/distlock/distlock/engine"
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
// when nobody leads it, or nobody leads it yet: on a quorum, a leader is
// reported only once its term is settled (phase 2 raised it on a majority
// of the nodes and its value is set there), so the term reported is always
// the leader's own (Leadership.Term), never the token one node minted.
func (c *Client) Leader(ctx context.Context, name string) (Leader, error) {
	info, err := c.Inspect(ctx, name)
	if err != nil {
		return Leader{}, err
	}
	return LeaderOf(name, info.Held, info.Token, info.Metadata, info.TTL)
}

// LeaderOf reads an election's state from its lock's (Inspect): a leader
// when the lock is held with a term (token) and a value (metadata), and
// ErrNoLeader otherwise. A quorum reports the token 0 (no majority has
// one yet) and no value until the term is settled: nobody leads yet.
func LeaderOf(name string, held bool, token uint64, value string, ttl time.Duration) (Leader, error) {
	if !held || token == 0 || value == "" {
		return Leader{Name: name}, ErrNoLeader
	}
	return Leader{Name: name, Value: value, Term: token, TTL: ttl}, nil
}

// Observe follows the leader of the election name: the channel receives
// the current state at once, then every change (a new leader, a new value,
// or no leader), until ctx ends or the Client is closed, when it is closed.
//
// Changes arrive by notification (the engine's subscription), not by
// polling; a leader whose lease runs out without a release is noticed when
// its ttl has passed. Where the notification carries the new state
// (engine.Noticer: Redis, the embedded engine), it is reported without
// reading the election, unless it is older than what the observer knows
// (then, and after a reconnect, the observer reads). The channel holds one state and coalesces: a slow
// reader skips intermediate states but always gets the latest one, never a
// stale one. After the subscription reconnects, the state is read again, so
// the final state is never missed. Without a subscription, the observer
// polls (waiting.PollFallback, jittered).
//
// Terms only go up: a state whose term is below one the channel already
// carried is never sent (the observer reads again). Each state is Leader's:
// on a quorum, a leader appears once its term is settled.
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

// observe is Observe's loop. A wake-up that carries the lock's state
// (engine.Noticer: Redis, the embedded engine) is reported without reading
// the lock, when it is newer than what the observer knows (track.fresh);
// anything else (a reconnect, a message without a state, a stale or
// reordered notice, an expiry's timer, an engine without notices) reads.
func (c *Client) observe(ctx context.Context, name string, ch chan Leader) {
	sctx, cancel := context.WithTimeout(ctx, waiting.SubscribeTimeout)
	sub, err := c.eng.Subscribe(sctx, name)
	cancel()
	var wake <-chan struct{}
	var notices engine.Noticer
	if err == nil {
		defer sub.Close()
		wake = sub.C()
		notices, _ = sub.(engine.Noticer)
	}
	var last Leader
	var tr track
	first, noticed := true, false
	var n engine.Notice
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		var st Leader
		if noticed && tr.fresh(n) {
			st, err = tr.apply(name, n)
		} else {
			var hw uint64
			st, hw, err = c.readLeader(ctx, name)
			tr.read(st, hw, err)
		}
		switch {
		case ctx.Err() != nil:
			return
		case st.Elected() && st.Term < tr.highest:
			// A term below one already sent: a read that straddled a
			// change (a node read before it, another after). Never sent:
			// terms only go up; read again shortly.
			err = errStaleTerm
		case err == nil || err == ErrNoLeader:
			if first || st.Term != last.Term || st.Value != last.Value {
				offer(ch, st)
				last, first = st, false
				tr.highest = max(tr.highest, st.Term)
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
		noticed = false
		select {
		case <-wake:
			timer.Stop()
			if notices != nil {
				n, noticed = notices.Notice()
			}
		case <-fire:
		case <-ctx.Done():
			return
		}
	}
}

// errStaleTerm marks an observer's read that found a term below one it
// had sent already.
var errStaleTerm = errors.New("distlock: a term below one already observed")

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

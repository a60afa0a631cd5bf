package distlock

import (
	"context"

	"github.com/distlock/distlock/engine"
)

// track is what an observer knows of an election's terms, to tell a
// notice that is news from one that is stale (reordered, duplicated, or
// sent before a read that the observer already reported).
type track struct {
	highest uint64 // the highest term the observer sent
	ended   uint64 // every term up to it is known to have ended
}

// fresh reports whether notice n may be reported as it is: a term below
// one sent, or a leader of a term known to have ended, is not (the
// observer reads the lock instead).
func (t *track) fresh(n engine.Notice) bool {
	if n.Token < t.highest {
		return false
	}
	return !n.Held || n.Token > t.ended
}

// apply turns notice n into the state it reports, and records an ended
// term.
func (t *track) apply(name string, n engine.Notice) (Leader, error) {
	if !n.Held {
		t.ended = max(t.ended, n.Token)
		return Leader{Name: name}, ErrNoLeader
	}
	return LeaderOf(name, true, n.Token, n.Metadata, n.TTL)
}

// read records what a read found: when nobody leads, every term up to
// the high-water hw and every term sent has ended, so a notice of one of
// them sent before the read (delivered after it) is stale.
func (t *track) read(hw uint64, err error) {
	if err == ErrNoLeader {
		t.ended = max(t.ended, t.highest, hw)
	}
}

// readLeader reads the election name as Leader does, with the name's
// high-water (0 when the engine reports none).
func (c *Client) readLeader(ctx context.Context, name string) (Leader, uint64, error) {
	info, err := c.Inspect(ctx, name)
	if err != nil {
		return Leader{}, 0, err
	}
	st, err := LeaderOf(name, info.Held, info.Token, info.Metadata, info.TTL)
	return st, info.HighWater, err
}

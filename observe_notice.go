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
	// readTerm is the term a read of the observer found elected: a value
	// of that term that a notice carries may be older than the one the
	// read found (a notice sent before the read, delivered after it), and
	// nothing in a notice orders two values of one term but its arrival.
	readTerm uint64
}

// fresh reports whether notice n may be reported as it is: a term below
// one sent, a leader of a term known to have ended, or a value of the term
// a read found, is not (the observer reads the lock instead, and reads
// only go forward). A later term's notices are trusted again: they come
// in the order their changes were made.
func (t *track) fresh(n engine.Notice) bool {
	if n.Token < t.highest {
		return false
	}
	if n.Held && n.Token == t.readTerm {
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
// them sent before the read (delivered after it) is stale; when st's term
// leads, its values that notices carry are judged by reading (see fresh).
func (t *track) read(st Leader, hw uint64, err error) {
	switch {
	case err == ErrNoLeader:
		t.ended = max(t.ended, t.highest, hw)
	case err == nil && st.Elected():
		t.readTerm = st.Term
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

package distlock

import "context"

// A Client lets one goroutine at a time wait for a given lock name on the
// backend; the others queue locally, in arrival order, for their turn. So a
// release wakes one contender per Client instead of a herd, which matters
// most for a quorum, where simultaneous contenders split the vote.
//
// A turn is taken after a first attempt failed, or before it when others of
// the Client already wait (no barging: a goroutine that just released cannot
// overtake them). A holder re-entering with its explicit owner id never
// queues, so it cannot wait behind a waiter for its own lock.
type turn struct {
	ch   chan struct{} // holds one token while someone has the turn
	refs int
}

// takeTurn waits for the turn on name, or for ctx to end.
func (c *Client) takeTurn(ctx context.Context, name string) (release func(), err error) {
	c.mu.Lock()
	t := c.turns[name]
	if t == nil {
		t = &turn{ch: make(chan struct{}, 1)}
		c.turns[name] = t
	}
	t.refs++
	c.mu.Unlock()
	select {
	case t.ch <- struct{}{}:
		return func() { <-t.ch; c.dropTurn(name, t) }, nil
	case <-ctx.Done():
		c.dropTurn(name, t)
		return nil, ctx.Err()
	}
}

func (c *Client) dropTurn(name string, t *turn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.refs--; t.refs == 0 {
		delete(c.turns, name)
	}
}

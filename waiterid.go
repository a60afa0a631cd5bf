package distlock

// waiterSep separates a waiter id's random token from its owner.
const waiterSep = ':'

// waiterID is the id of a waiting call's entry in an engine's waiter queue
// (engine.AcquireRequest.Waiter): a fresh random token (32 hex digits),
// then ':' and the call's explicit owner (WithOwner) when there is one and
// the whole fits in MaxOwnerLen, so that an operator's wait-for graph can
// tell who waits (WaiterOwner). Random owners are never written into it:
// they change at every attempt and name nobody.
func (c *Client) waiterID(owner string) string {
	id := c.owners.next()
	if owner == "" || len(id)+1+len(owner) > MaxOwnerLen {
		return id
	}
	return id + string(waiterSep) + owner
}

// WaiterOwner returns the owner that a Client wrote into the id of a
// waiter queue entry (engine.Info.Queue), "" when it wrote none: the
// explicit owner (WithOwner) of the waiting call, which the server's
// wait-for graph (GET /v1/waitfor) matches against holders' owners.
func WaiterOwner(id string) string {
	if len(id) < 34 || id[32] != waiterSep {
		return ""
	}
	for i := range 32 {
		if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return ""
		}
	}
	return id[33:]
}

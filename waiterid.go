package distlock

// waiterSep separates a waiter id's random token from its owner.
const waiterSep = ':'

// waiterID is the id of a waiting call's entry in an engine's waiter queue
// (engine.AcquireRequest.Waiter): WaiterID of a fresh random token and the
// call's explicit owner (WithOwner). Random owners are never written into
// it: they change at every attempt and name nobody.
func (c *Client) waiterID(owner string) string { return WaiterID(c.owners.Next(), owner) }

// WaiterID is the waiter id that names owner, so that an operator's
// wait-for graph can tell who waits (WaiterOwner): token (32 lowercase hex
// digits, fresh for each waiter), ':' and owner; token alone when owner is
// empty, when the whole would not fit in MaxOwnerLen (the limit of a waiter
// id), or when token is not 32 hex digits. The Client and the server's
// held-open acquires use it.
func WaiterID(token, owner string) string {
	if owner == "" || len(token)+1+len(owner) > MaxOwnerLen || !isToken(token) {
		return token
	}
	return token + string(waiterSep) + owner
}

// WaiterOwner returns the owner that a Client wrote into the id of a
// waiter queue entry (engine.Info.Queue), "" when it wrote none: the
// explicit owner (WithOwner) of the waiting call, which the server's
// wait-for graph (GET /v1/waitfor) matches against holders' owners.
func WaiterOwner(id string) string {
	if len(id) < 34 || id[32] != waiterSep || !isToken(id[:32]) {
		return ""
	}
	return id[33:]
}

// isToken reports whether s is 32 lowercase hex digits (a random token).
func isToken(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

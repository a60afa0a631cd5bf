package api

// WaitFor is GET /v1/waitfor and the dashboard's wait-for graph: who holds
// and who waits for the locks the engine lists, across names, from the
// engine's own holders and waiter queues, with the cycles found in it (a
// distributed deadlock: A holds x and waits for y while B holds y and
// waits for x).
//
// A party is an owner: a holder's owner token, or the explicit owner
// (WithOwner) that a Client writes into its waiter id
// (distlock.WaiterOwner). A waiter without one (a random owner) is counted
// in Unnamed and takes part in no edge. Owners are shown as the admin role
// sees them; every role sees their fingerprints (ID, as LockInfo.HolderID).
type WaitFor struct {
	Locks  []WaitForLock `json:"locks"`
	Edges  []WaitForEdge `json:"edges"`
	Cycles []WaitCycle   `json:"cycles"`
	// Truncated: more locks exist than were read (MaxWaitForLocks).
	Truncated bool `json:"truncated,omitempty"`
	// QueueUnknown: the engine does not list its waiters (engine.Info.Queue
	// nil while Waiters > 0: a quorum's shared locks), so no
	// edge can be drawn for those locks.
	QueueUnknown bool `json:"queue_unknown,omitempty"`
}

// WaitForLock is one lock of the graph.
type WaitForLock struct {
	Name    string         `json:"name"`
	Holders []WaitForParty `json:"holders"`
	// Waiters are the queue's entries whose owner is known, in arrival
	// order; Unnamed counts the others.
	Waiters []WaitForParty `json:"waiters"`
	Unnamed int            `json:"unnamed,omitempty"`
}

// WaitForParty is a holder or a waiter of one lock.
type WaitForParty struct {
	// ID is the owner's fingerprint (HolderID); Owner the owner itself,
	// for the admin role only.
	ID    string `json:"id"`
	Owner string `json:"owner,omitempty"`
	// TTLMs is a holder's time left; WaitedMs how long a waiter has been
	// in the queue.
	TTLMs    int64 `json:"ttl_ms,omitempty"`
	WaitedMs int64 `json:"waited_ms,omitempty"`
}

// WaitForEdge: From waits (for WaitedMs) for Lock, which To holds.
type WaitForEdge struct {
	From      WaitForParty `json:"from"`
	Lock      string       `json:"lock"`
	To        WaitForParty `json:"to"`
	WaitedMs  int64        `json:"waited_ms"`
	HolderTTL int64        `json:"holder_ttl_ms,omitempty"`
}

// WaitCycle is a cycle of edges: each edge's To is the next edge's From,
// the last's To the first's From. Nobody in it can be granted until a
// lease in it expires or is released.
type WaitCycle struct {
	Edges []WaitForEdge `json:"edges"`
}

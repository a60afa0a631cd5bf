// Package zookeeper is the distlock engine on a ZooKeeper ensemble (3.5 or
// later; tested on Debian's 3.8): the lock authority is ZooKeeper's
// replicated tree, so a grant survives the loss of a minority of members.
//
// It is built on today's engine contract (package engine and its optional
// interfaces), as engine/etcd is; contract v3 (one request per operation,
// URL openers) is not done yet.
//
// Each lock name is a container node under the engine's root. A waiter
// takes its place in line as an ephemeral sequential child with a protected
// name (a random GUID in it, as Curator's withProtection, so that a create
// whose answer was lost is found again instead of left behind) and watches
// only the place before its own (FIFO, no herd), re-checking the whole line
// after every wake-up. A grant is one multi-op that creates the holder's
// ephemeral child and writes the name node at the version read with the
// line, so two grants decided on one reading cannot both take effect. The
// fencing token is the holder child's creation zxid (czxid), strictly
// increasing across the ensemble and across the name being cleared.
//
// A lock's ttl is kept in its child's data and judged against the
// ensemble's own clock: a child is expired once a later write's mtime is
// past its mtime plus its ttl; the next contender deletes it (by version).
// The session adds the backstop: a process that dies leaves no child
// behind once its session expires, and a holder cut off from the ensemble
// loses its children no earlier than a session timeout after the last
// request the ensemble answered, so a lease ttl may not exceed the session
// timeout (Acquire refuses a longer one).
//
// Semaphores and reader-writer locks (engine.Sharer) live on the same
// line of children: each shared holder's child carries its weight, and a
// grant is the same multi-op, with the name's stored kind and limit (a
// persistent node beside the name's container) checked at the version
// read.
//
// See docs/ZOOKEEPER.md for the design, its costs and the guarantees.
package zookeeper

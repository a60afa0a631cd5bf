// Package etcd is the distlock engine on an etcd v3 cluster: the lock
// authority is a Raft-replicated key space, so a grant survives the loss of
// a minority of members and no clock takes part in fencing.
//
// Each lock name owns a key prefix. The holder is one key on an etcd lease of
// its own (one lease per grant, so every lock keeps exactly the ttl it was
// given); the fencing token is that key's CreateRevision, which is unique and
// strictly increasing across the whole cluster and survives leader changes.
// Waiters are keys under the same prefix on leases of their own, in arrival
// order by CreateRevision; a release wakes the head only, through a watch.
// Every change is one etcd transaction that compares what it read, so no two
// clients can both believe they were granted the lock.
//
// Semaphores and reader-writer locks (engine.Sharer) keep one key per holder,
// each on its own lease, with the kind and limit in a key of their own, and
// a strict FIFO queue with weights.
//
// etcd leases are whole seconds and at least about 2 s: the engine declares
// that (engine.Describer), and distlock rounds every ttl up to fit.
//
// See docs/ETCD.md for the design, its costs and the guarantees.
package etcd

package wire

import (
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/server/api"
)

// Inspect's wire form, one pair for every kind: LockInfo renders an
// engine.Info as the server answers GET /v1/locks/{name}, its listings and
// its dashboard, and Info reads it back in the remote engine. A mutex (an
// election's lock too: its value is the holder's metadata, its term the
// token) describes its one holder in the top-level fields; a shared lock
// (semaphore, RW lock) lists its holders in Holders, with Token the
// highest holder token, a semaphore's Limit and an RW lock's Mode. The
// queue's entries travel as the engine listed them (none: nil, as from an
// engine that does not list them), each waiter's id to the admin role
// only, a fingerprint to every role. A holder's metadata travels apart
// from the trace context a traced client stored with it
// (distlock.TraceMetadata): metadata and traceparent.

// LockInfo is the wire form of i. owners says whether the caller may see
// owner tokens (the admin role, or a server without authentication:
// whoever knows an owner token can extend or release its lock); every
// caller sees each holder's fingerprint (api.HolderID).
func LockInfo(i engine.Info, owners bool) api.LockInfo {
	j := api.LockInfo{Name: i.Name, Held: i.Held, HighWater: i.HighWater, Waiters: i.Waiters, Subscribers: i.Subscribers,
		Kind: KindName(i.Kind), Partial: Partial(i.Partial), Queue: queue(i.Queue, owners)}
	if !i.Kind.Shared() {
		if i.Held {
			j.HolderID, j.Count, j.Token, j.TTLMs = api.HolderID(i.Owner), i.Count, i.Token, HolderTTLMs(i.TTL)
			j.Metadata, j.Traceparent = distlock.TraceMetadata(i.Metadata)
			if owners {
				j.Owner = i.Owner
			}
		}
		return j
	}
	j.Token = i.Token
	if i.Kind == engine.Semaphore {
		j.Limit = i.Limit
	}
	for _, h := range i.Holders {
		hi := api.HolderInfo{HolderID: api.HolderID(h.Owner), Weight: h.Weight, Count: h.Count, Token: h.Token,
			TTLMs: HolderTTLMs(h.TTL)}
		hi.Metadata, hi.Traceparent = distlock.TraceMetadata(h.Metadata)
		if owners {
			hi.Owner = h.Owner
		}
		if i.Kind == engine.RWLock {
			hi.Mode = ModeOf(h.Weight)
			if j.Mode != api.ModeWrite {
				j.Mode = hi.Mode
			}
		}
		j.Holders = append(j.Holders, hi)
	}
	return j
}

// Info is the engine.Info a wire LockInfo stands for (LockInfo's inverse).
// A holder whose owner token the server withheld is named "holder:" and
// its fingerprint (HolderOwner). A kind this side does not know reads as a
// mutex's, its holders kept.
func Info(l api.LockInfo) engine.Info {
	i := engine.Info{Name: l.Name, Held: l.Held, HighWater: l.HighWater, Waiters: l.Waiters, Subscribers: l.Subscribers,
		Token: l.Token, Partial: PartialOf(l.Partial)}
	i.Kind, _ = ParseKind(l.Kind)
	switch i.Kind {
	case engine.Semaphore:
		i.Limit = l.Limit
	case engine.RWLock:
		i.Limit = engine.RWPermits
	}
	if l.Held && l.Kind == "" {
		i.Owner, i.Count, i.TTL = HolderOwner(l.Owner, l.HolderID), l.Count, HolderTTL(l.TTLMs)
		i.Metadata = distlock.JoinTraceMetadata(l.Metadata, l.Traceparent)
	}
	for _, h := range l.Holders {
		i.Holders = append(i.Holders, engine.Holder{Owner: HolderOwner(h.Owner, h.HolderID), Count: h.Count, Token: h.Token,
			TTL: HolderTTL(h.TTLMs), Metadata: distlock.JoinTraceMetadata(h.Metadata, h.Traceparent), Weight: h.Weight})
	}
	for _, w := range l.Queue {
		i.Queue = append(i.Queue, engine.Waiter{ID: WaiterID(w.Waiter, w.WaiterID), Waited: time.Duration(w.WaitedMs) * time.Millisecond})
	}
	return i
}

// queue is the wire form of an engine's queue listing: nil when it lists
// none; each waiter's id when owners says the caller may see it.
func queue(q []engine.Waiter, owners bool) []api.QueueEntry {
	var out []api.QueueEntry
	for _, w := range q {
		e := api.QueueEntry{WaiterID: api.HolderID(w.ID), WaitedMs: w.Waited.Milliseconds()}
		if owners {
			e.Waiter = w.ID
		}
		out = append(out, e)
	}
	return out
}

// WaiterID is the waiter id a wire queue entry stands for: its id when
// the server showed it, else "waiter:" and its fingerprint (an id that
// names no owner: distlock.WaiterOwner reads none from it).
func WaiterID(id, fingerprint string) string {
	if id == "" && fingerprint != "" {
		return "waiter:" + fingerprint
	}
	return id
}

// HolderOwner is the owner a wire holder stands for: its owner token when
// the server showed it, else "holder:" and its fingerprint id ("" when
// there is neither).
func HolderOwner(owner, id string) string {
	if owner == "" && id != "" {
		return "holder:" + id
	}
	return owner
}

// HolderTTLMs is a holder's time left on the wire: whole milliseconds, -1
// for a lock that never expires (a negative engine ttl).
func HolderTTLMs(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return d.Milliseconds()
}

// HolderTTL reads a holder's time left from the wire (HolderTTLMs' inverse
// to the millisecond): -1 for a lock that never expires.
func HolderTTL(ms int64) time.Duration {
	if ms < 0 {
		return -1
	}
	return time.Duration(ms) * time.Millisecond
}

// Partial is the wire mark of an answer built from some of the engine's
// parts (a Redlock quorum's nodes that answered); nil for a whole answer.
func Partial(p *engine.PartialError) *api.Partial {
	if p == nil {
		return nil
	}
	return &api.Partial{Unanswered: p.Unanswered}
}

// PartialOf is the *engine.PartialError a wire "partial" field stands for
// (Partial's inverse); nil when it has none.
func PartialOf(p *api.Partial) *engine.PartialError {
	if p == nil {
		return nil
	}
	return &engine.PartialError{Unanswered: p.Unanswered}
}

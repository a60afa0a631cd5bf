package engine

import (
	"context"
	"time"
)

// The optional administration interfaces below serve operators (the
// distlock CLI's list and leaks commands, a dashboard), not the lock path:
// an engine that cannot implement them efficiently simply does not.

// Lister is implemented by engines that can enumerate the locks they hold.
type Lister interface {
	// List returns the locks currently held, of every kind, whose names
	// start with prefix: a mutex as Inspect describes it, a shared lock
	// (held or waited for) as Sharer.InspectShared does (Kind, Limit,
	// Holders); every lock for "". It returns them one page at a time. cursor is "" for the first
	// page and the next of the previous page afterwards; the listing is
	// complete when next is "". limit is a hint of how many locks one page
	// should hold (at most about limit; an engine may return fewer, even
	// none, on a page that is not the last).
	//
	// A listing is not a snapshot: a lock acquired or released while it runs
	// may or may not be listed, and on some engines (Redis SCAN) a lock may
	// be listed twice; callers deduplicate by Info.Name. Listing must never
	// block the lock service (no Redis KEYS).
	List(ctx context.Context, prefix, cursor string, limit int) (infos []Info, next string, err error)
}

// Leak is a stored item of a lock engine that will not go away by itself in
// time: it has no expiry, or an expiry beyond what the engine would ever
// set. Such items are what code that takes a lock in two steps (SETNX, then
// EXPIRE) leaves behind when it dies between the two: a lock nobody can ever
// acquire again.
type Leak struct {
	// Key is the item as the engine stores it (on Redis, the key).
	Key string
	// Name is the lock name when Key is the lock of a name or its fencing
	// high-water, "" for any other item under the engine's prefix.
	Name string
	// Kind is "lock" (the lock itself), "fence" (its fencing high-water)
	// or "other".
	Kind string
	// Type is the storage type of the item (on Redis: hash, string, ...).
	Type string
	// TTL is the time the item has left; negative when it never expires.
	TTL time.Duration
}

// LeakKinds name Leak.Kind values.
const (
	LeakLock  = "lock"
	LeakFence = "fence"
	LeakOther = "other"
)

// LeakFinder is implemented by engines that can find leaked items: items
// under the engine's prefix that have no expiry, or whose expiry is later
// than maxTTL from now (for a fencing high-water: later than the engine's
// own high-water lifetime, when that is longer than maxTTL).
type LeakFinder interface {
	// Leaks reports leaked items whose lock names start with prefix (with
	// prefix "": every item under the engine's prefix, including items that
	// are not shaped like a lock's), one page at a time, with the same
	// cursor and limit conventions as Lister.List. Reading changes nothing.
	Leaks(ctx context.Context, prefix string, maxTTL time.Duration, cursor string, limit int) (leaks []Leak, next string, err error)
}

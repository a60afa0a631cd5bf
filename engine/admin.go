package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The optional administration interfaces below serve operators (the
// distlock CLI's list and leaks commands, a dashboard), not the lock path:
// an engine that cannot implement them efficiently simply does not.

// Lister is implemented by engines that can enumerate the locks they hold.
type Lister interface {
	// List returns the locks currently held, of every kind, whose names
	// start with prefix: a mutex as Inspect describes it, a shared lock
	// (held or waited for) as Inspect describes it too (Kind, Limit,
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
	// cursor and limit conventions as Lister.List. Reading changes no live
	// lock: an engine whose ended entries go with the next reading of their
	// name (ZooKeeper's expired holder nodes) may sweep them, as that
	// reading would, and does not report them.
	Leaks(ctx context.Context, prefix string, maxTTL time.Duration, cursor string, limit int) (leaks []Leak, next string, err error)
}

// PartialError marks an answer of an engine made of parts (a quorum's
// nodes) that comes from the parts that answered in time only: the parts
// named in Unanswered did not answer (Err joins their errors). It is a
// view of the parts that answered, not a proof: a lock held on a majority
// that includes a silent part may be missing from it.
//
// Read-only and admin answers carry it instead of failing: Inspect in
// Info.Partial (nil when every part answered),
// Lister.List and LeakFinder.Leaks as their error, returned together with
// the page of the parts that answered (errors.As tells it from a failure;
// a caller that does not look for it treats the page as failed, as
// before).
type PartialError struct {
	// Unanswered names the parts that did not answer, in the engine's
	// order of its parts.
	Unanswered []string
	// Err joins the parts' errors.
	Err error
}

// Error says which parts did not answer.
func (e *PartialError) Error() string {
	msg := fmt.Sprintf("partial answer: no answer from %s", strings.Join(e.Unanswered, ", "))
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the parts' errors.
func (e *PartialError) Unwrap() error { return e.Err }

// AsPartial reports whether err is (or wraps) a *PartialError, the mark
// of a partial answer rather than a failure, and returns it.
func AsPartial(err error) (*PartialError, bool) {
	var p *PartialError
	return p, errors.As(err, &p) && p != nil
}

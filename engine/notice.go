package engine

import (
	"sync"
	"time"
)

// Notice is a lock's state as a notification carried it: an election's
// new leader or new value (Held, with the term and value), or the end of
// a term (not Held). It was true when the engine sent it; later changes
// send later notices, except an expiry, which sends none.
type Notice struct {
	// Held: Token's holder holds the lock, with Metadata and TTL left
	// when the notice was sent. Not Held: the term Token ended.
	Held bool
	// Token is the term (the grant's fencing token), never 0.
	Token uint64
	// Metadata is the holder's metadata (an election's value).
	Metadata string
	// TTL is the holder's lease time left when the notice was sent.
	TTL time.Duration
}

// After reports whether n supersedes m: a higher term, or the same term
// ended, or (same term, both held) a later value, which only its arrival
// order can tell.
func (n Notice) After(m Notice) bool {
	switch {
	case n.Token != m.Token:
		return n.Token > m.Token
	case !m.Held:
		return false // an ended term stays ended
	}
	return true
}

// Noticer is an optional interface of a Subscription whose wake-ups can
// carry the lock's state, so that an election's observer need not read
// the lock again (Redis and the embedded engine). A Subscription without
// it, or a wake-up without a notice, means: read the lock.
type Noticer interface {
	// Notice returns the latest notice since the previous call, and ok
	// true only when every wake-up since then carried one: a wake-up
	// without a notice (a reconnect, after which messages may have been
	// lost; a message that carries no state) makes it false until the
	// next call, and the caller must read the lock.
	Notice() (n Notice, ok bool)
}

// NoticeBox is the state behind a Noticer: the latest notice (by
// Notice.After) and whether a wake-up came without one. The zero value is
// empty. Engines call Put or Doubt before waking the subscription.
type NoticeBox struct {
	mu    sync.Mutex
	n     Notice
	has   bool
	doubt bool
}

// Put records n, unless the box holds a notice that supersedes it.
func (b *NoticeBox) Put(n Notice) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.has || n.After(b.n) {
		b.n, b.has = n, true
	}
}

// Doubt records a wake-up without a notice: the next Notice reports ok
// false.
func (b *NoticeBox) Doubt() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.doubt = true
}

// Notice implements Noticer, and empties the box.
func (b *NoticeBox) Notice() (Notice, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, ok := b.n, b.has && !b.doubt
	b.n, b.has, b.doubt = Notice{}, false, false
	return n, ok
}

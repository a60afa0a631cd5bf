package distlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Weighted is a view of a Semaphore shaped like
// golang.org/x/sync/semaphore.Weighted (Acquire(ctx, n), TryAcquire(n),
// Release(n)), for code written against that interface. Semaphore.Weighted
// makes one. It is safe for concurrent use; it is no sync.Locker.
//
// Permits are held per lease: each Acquire or TryAcquire that takes n > 0
// permits is one lease of weight n (its own owner token, renewals and ttl).
// Release(n) counts n permits off the leases the view holds, in grant
// order (leases already lost first); a lease goes back to the lock
// authority once all its permits were counted off. A lease partly
// released keeps its whole weight in the authority until then, so the
// authority never holds fewer permits than the code believes it holds (it
// may hold more). Releasing more permits than the view holds panics, as
// x/sync's does, and changes nothing.
//
// A lease can be lost (its renewals failed, a force-release, WithMaxHold):
// its permits may then be granted to others while the code still counts
// them. Done is closed and Err returns the loss while a lost lease is
// counted as held; once the code has released every lost lease's permits,
// Err is nil again and Done returns a fresh channel. Code that must stop
// its work on a loss watches Done (or uses Semaphore.Acquire's *Lease,
// whose Context is cancelled).
type Weighted struct {
	s    *Semaphore
	opts []Option

	mu    sync.Mutex
	holds []*weightedHold // in grant order
	held  int64           // permits counted as held
	lost  chan struct{}   // closed while a lost lease is counted
	err   error           // the first loss among the counted leases
}

// weightedHold is one lease of a Weighted and its permits still counted.
type weightedHold struct {
	l    *Lease
	n    int64
	lost bool
	stop func() bool // stops the loss watch
}

// Weighted returns a view of the semaphore shaped like x/sync's
// semaphore.Weighted. opts are Acquire's for every lease it takes
// (WithTTL, WithMetadata, WithAutoRenew, WithMaxHold); the weight is the n
// of each call, and WithOwner is ignored: every grant is a lease of its own.
func (s *Semaphore) Weighted(opts ...Option) *Weighted {
	return &Weighted{s: s, opts: opts, lost: make(chan struct{})}
}

// Acquire waits until n permits are granted as one lease, or ctx ends
// (its error then matches ctx's, as a *WaitError), or an error ends the
// wait (a *BackendError, an *ArgumentError). It takes nothing and returns
// nil for n = 0, as x/sync's does; a negative n, or one above the stored
// limit, is an *ArgumentError.
func (w *Weighted) Acquire(ctx context.Context, n int64) error {
	if err := w.check(ctx, n); err != nil || n == 0 {
		return err
	}
	l, err := w.s.Acquire(ctx, w.options(n)...)
	if err != nil {
		return err
	}
	w.add(l, n)
	return nil
}

// TryAcquire makes one attempt to take n permits as one lease, bounded by
// the Client's release timeout (x/sync's TryAcquire has no context), and
// reports whether it got them. Refusals, backend errors and bad input all
// read false. n = 0 takes nothing and reports true.
func (w *Weighted) TryAcquire(n int64) bool {
	if w.check(context.Background(), n) != nil {
		return false
	}
	if n == 0 {
		return true
	}
	ctx, cancel := w.s.c.releaseContext(context.Background())
	defer cancel()
	l, err := w.s.TryAcquire(ctx, w.options(n)...)
	if err != nil {
		return false
	}
	w.add(l, n)
	return true
}

// check refuses a nil context and a negative weight.
func (w *Weighted) check(ctx context.Context, n int64) error {
	switch {
	case ctx == nil:
		return &ArgumentError{Arg: "context", Reason: "nil"}
	case n < 0:
		return &ArgumentError{Arg: "weight", Reason: fmt.Sprintf("%d is negative", n)}
	}
	return nil
}

// options are the view's, with the weight n and a fresh owner per lease.
func (w *Weighted) options(n int64) []Option {
	return append(w.opts[:len(w.opts):len(w.opts)], func(o *options) {
		o.owner = ""
		o.weight, o.weightSet = int(min(n, int64(1)<<31)), true
	})
}

// add counts a granted lease, and watches it for a loss.
func (w *Weighted) add(l *Lease, n int64) {
	h := &weightedHold{l: l, n: n}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.holds = append(w.holds, h)
	w.held += n
	// The watch runs once the lease ends; it waits for w.mu.
	h.stop = context.AfterFunc(l.Context(), func() { w.lose(h) })
}

// lose records the loss of h, unless h was released (by Release).
func (w *Weighted) lose(h *weightedHold) {
	err := h.l.Err()
	if errors.Is(err, ErrReleased) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if h.n == 0 || h.lost {
		return // counted off meanwhile
	}
	h.lost = true
	if w.err == nil {
		w.err = err
		close(w.lost)
	}
}

// Release counts n permits off the view's leases (lost ones first, then
// in grant order) and releases, in the lock authority, each lease whose
// permits were all counted off; it returns once those releases were
// answered (each bounded by the Client's release timeout; one that fails
// leaves the hold to run out with its ttl). It panics when n is negative
// or above the permits held, and then changes nothing.
func (w *Weighted) Release(n int64) {
	w.mu.Lock()
	if n < 0 || n > w.held {
		held := w.held
		w.mu.Unlock()
		panic(fmt.Sprintf("distlock: Weighted(%q).Release(%d): released more than held (%d)", w.s.name, n, held))
	}
	w.held -= n
	var done []*Lease
	for _, lostFirst := range []bool{true, false} {
		for _, h := range w.holds {
			if n == 0 {
				break
			}
			if h.lost != lostFirst || h.n == 0 {
				continue
			}
			k := min(n, h.n)
			h.n -= k
			n -= k
			if h.n == 0 {
				h.stop()
				done = append(done, h.l)
			}
		}
	}
	w.compact()
	w.mu.Unlock()
	for _, l := range done {
		_ = l.Release(context.Background()) // a lost one's answer is ErrNotHeld
	}
}

// compact drops the leases counted off, and ends the loss signal once no
// lost lease is counted; w.mu is held.
func (w *Weighted) compact() {
	kept := w.holds[:0]
	lost := false
	for _, h := range w.holds {
		if h.n > 0 {
			kept = append(kept, h)
			lost = lost || h.lost
		}
	}
	clear(w.holds[len(kept):])
	w.holds = kept
	if !lost && w.err != nil {
		w.err, w.lost = nil, make(chan struct{})
	}
}

// Held returns the permits the view counts as held.
func (w *Weighted) Held() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.held
}

// Done returns a channel that is closed while a lease the view counts as
// held is lost (see Err). Once the lost permits are released, it returns
// a new, open channel.
func (w *Weighted) Done() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lost
}

// Err returns nil, or the loss (a *LostError, matching ErrLeaseLost) of a
// lease the view still counts as held: its permits may have been granted
// to others.
func (w *Weighted) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

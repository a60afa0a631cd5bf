package client

import (
	"sync"
	"time"

	"github.com/distlock/distlock"
)

// lateLease is ImplLateLoss's lease: distlock's, but its holder hears of a
// loss late after the library signalled it. Until then Valid says the
// lease is valid (the holder goes on writing past its deadline) and Done
// stays open; Loss reports the late moment, also after a release (a holder
// stopped by the fence releases before its late signal).
type lateLease struct {
	libLease
	late time.Duration
	done chan struct{}

	mu    sync.Mutex
	at    time.Time // the library's loss signal (zero: none seen)
	cause string
}

// newLateLease wraps l; its goroutine ends when l is over (release, or
// late after its loss).
func newLateLease(l *distlock.Lease, late time.Duration) *lateLease {
	w := &lateLease{libLease: libLease{l}, late: late, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		<-l.Done()
		at, cause, lost := w.libLease.Loss()
		if !lost {
			return
		}
		w.mu.Lock()
		w.at, w.cause = at, cause
		w.mu.Unlock()
		t := time.NewTimer(time.Until(at.Add(late)))
		defer t.Stop()
		<-t.C
	}()
	return w
}

// Valid says valid until Done closes, when the lease was lost.
func (l *lateLease) Valid() (ok, over bool) {
	if _, _, lost := l.Loss(); lost {
		select {
		case <-l.done:
		default:
			return true, false
		}
	}
	return l.libLease.Valid()
}

func (l *lateLease) Done() <-chan struct{} { return l.done }

func (l *lateLease) Loss() (time.Time, string, bool) {
	l.mu.Lock()
	at, cause := l.at, l.cause
	l.mu.Unlock()
	if at.IsZero() {
		var lost bool
		if at, cause, lost = l.libLease.Loss(); !lost {
			return time.Time{}, "", false
		}
	}
	return at.Add(l.late), cause, true
}

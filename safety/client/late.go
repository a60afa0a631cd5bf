package client

import (
	"time"

	"github.com/distlock/distlock"
)

// lateLease is ImplLateLoss's lease: distlock's, but its holder hears of a
// loss late after the library signalled it. Until then Valid says the
// lease is valid (the holder goes on writing past its deadline) and Done
// stays open; Loss reports the late moment. A release ends it at once.
type lateLease struct {
	libLease
	late time.Duration
	done chan struct{}
}

// newLateLease wraps l; its goroutine ends when l is over (release, or
// late after its loss).
func newLateLease(l *distlock.Lease, late time.Duration) *lateLease {
	w := &lateLease{libLease: libLease{l}, late: late, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		<-l.Done()
		if at, _, lost := w.libLease.Loss(); lost {
			t := time.NewTimer(time.Until(at.Add(late)))
			defer t.Stop()
			<-t.C
		}
	}()
	return w
}

// Valid says valid until Done closes, when the lease was lost.
func (l *lateLease) Valid() (ok, over bool) {
	if _, _, lost := l.libLease.Loss(); lost {
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
	at, cause, lost := l.libLease.Loss()
	if lost {
		at = at.Add(l.late)
	}
	return at, cause, lost
}

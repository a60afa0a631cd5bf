package engine

import "time"

// Drift is the clock-drift allowance of a lease of ttl: ttl/100 + 2ms. A
// grant or extension sent at t is valid until t + ttl - Drift(ttl) on the
// sender's monotonic clock (the Client's leases, a quorum's validity).
func Drift(ttl time.Duration) time.Duration { return ttl/100 + 2*time.Millisecond }

// Signal is a coalescing wake-up: Wake never blocks, and any number of
// wake-ups before the receiver looks are one. Engines build their
// Subscriptions on it.
type Signal struct{ c chan struct{} }

// NewSignal returns a Signal with nothing pending.
func NewSignal() Signal { return Signal{c: make(chan struct{}, 1)} }

// C receives once after one or more wake-ups.
func (s Signal) C() <-chan struct{} { return s.c }

// Wake signals, unless a wake-up is pending already.
func (s Signal) Wake() {
	select {
	case s.c <- struct{}{}:
	default:
	}
}

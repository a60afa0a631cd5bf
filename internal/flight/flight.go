// Package flight sends a request whose caller may stop waiting for it
// before it is answered, without cutting it short on the wire: the rule
// the Client's acquires (distlock's sendSettled) and the server's
// held-open acquires (server's flightAcquire) share.
//
// A request cut short can still be run by the backend later (it sits in a
// socket's buffer, or behind others on a pipelined connection), after the
// release that was meant to undo it; so the request runs to its answer on
// its own goroutine, and the caller either takes the answer or leaves it
// to a settle function that undoes what it granted.
package flight

import (
	"context"
	"sync/atomic"
)

// The states of a request in flight.
const (
	waiting  int32 = iota // the caller waits for the answer
	answered              // the answer is the caller's
	left                  // the caller left: settle takes the answer
)

// answer is what a request in flight got back.
type answer[T any] struct {
	v   T
	err error
}

// Send runs call on a goroutine that start starts (start(f) runs f), and
// returns its answer; when wait ends first, it returns at once with gone
// true, and settle gets the answer when it comes, on call's goroutine.
// Exactly one of the caller and settle takes the answer: one that comes
// as wait ends is the caller's.
func Send[T any](wait context.Context, start func(func()), call func() (T, error), settle func(T, error)) (v T, gone bool, err error) {
	got := make(chan answer[T], 1)
	var state atomic.Int32
	start(func() {
		v, err := call()
		if !state.CompareAndSwap(waiting, answered) {
			settle(v, err)
			return
		}
		got <- answer[T]{v, err}
	})
	select {
	case a := <-got:
		return a.v, false, a.err
	case <-wait.Done():
	}
	if !state.CompareAndSwap(waiting, left) {
		a := <-got // answered as wait ended: the caller takes it
		return a.v, false, a.err
	}
	var zero T
	return zero, true, nil
}

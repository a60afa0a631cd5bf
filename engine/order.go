package engine

import "fmt"

// Order is how an acquire request stands toward the waiters queued for its
// name (Queuer): one field for what used to be three flags, so that only
// the combinations an engine can honour are expressible. Engines without a
// queue ignore it; a shared request is always first come, first served
// (AcquireByKind sets OrderDefault for it).
type Order uint8

const (
	// OrderDefault: no herd, no starvation. The request may take a free
	// lock ahead of a queued head that has waited less than
	// StarvationBound; once the head has waited longer, releases reserve
	// the lock for it.
	OrderDefault Order = iota
	// OrderBehind: the request never takes a free lock ahead of the
	// waiters queued for it (it queues behind them instead), without
	// making its own waiter fair. A Client sends it when its own
	// goroutines already wait for the name, so that one that just released
	// cannot overtake them.
	OrderBehind
	// OrderFair: strict FIFO. The request stays behind every queued
	// waiter, and while its waiter heads the queue only it can take the
	// lock (a release reserves the lock for it). A Client sends it only to
	// an engine whose Capabilities say Fair (WithFair is refused
	// otherwise); a quorum refuses it itself.
	OrderFair
	// OrderNoReserve: the lock is never reserved for this waiter. It is
	// woken as the head, but nobody is kept from taking the lock for it
	// (no starvation hand-off). A quorum sends it to its nodes: per-node
	// reservations for different heads would split the vote.
	OrderNoReserve
)

// Yields reports whether a request of this order stays behind the queued
// waiters of a free lock: OrderBehind and OrderFair.
func (o Order) Yields() bool { return o == OrderBehind || o == OrderFair }

// String returns the order's name.
func (o Order) String() string {
	switch o {
	case OrderDefault:
		return "default"
	case OrderBehind:
		return "behind"
	case OrderFair:
		return "fair"
	case OrderNoReserve:
		return "no-reserve"
	}
	return fmt.Sprintf("order(%d)", uint8(o))
}

// checkOrder refuses an Order that is none of the constants above.
func checkOrder(o Order) error {
	if o > OrderNoReserve {
		return &ArgumentError{Arg: "order", Reason: fmt.Sprintf("%s is not default, behind, fair or no-reserve", o)}
	}
	return nil
}

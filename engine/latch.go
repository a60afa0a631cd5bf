package engine

import (
	"context"
	"fmt"
)

// Latcher is implemented by engines that keep countdown latches (Redisson's
// RCountDownLatch): a count stored with a name, counted down by anyone,
// whose waiters are woken by notification when it reaches zero. Latch
// names are a namespace of their own, beside the locks' names; a latch
// shares the wake-ups of the lock of the same name (Subscribe), so its
// waiters may be woken for nothing and then read the count again.
type Latcher interface {
	// SetCount sets the latch's count to count (at least 1) when it is
	// zero (the latch does not exist), and reports whether it did.
	SetCount(ctx context.Context, name string, count int64) (bool, error)
	// CountDown takes one off the latch's count, unless it is zero, and
	// returns the count after it. When it reaches zero the latch is
	// removed and the name's subscribers (Subscribe) are woken. id
	// identifies the call: a resent copy of the call just applied (a
	// client library resends a command whose reply was lost) counts
	// nothing.
	CountDown(ctx context.Context, name, id string) (int64, error)
	// Count returns the latch's count: zero when it does not exist.
	Count(ctx context.Context, name string) (int64, error)
}

// MaxLatchCount is the largest count a latch may be set to: MaxToken, the
// largest integer every engine's store keeps exactly (Redis scripts count
// in doubles, the HTTP API in JSON numbers).
const MaxLatchCount = MaxToken

// CheckLatchCount refuses a latch count outside 1 to MaxLatchCount with an
// *ArgumentError (arg count): the rule of SetCount on every engine, of the
// Client and of the server.
func CheckLatchCount(count int64) error {
	if count < 1 || count > MaxLatchCount {
		return &ArgumentError{Arg: "count", Reason: fmt.Sprintf("%d is not between 1 and %d", count, int64(MaxLatchCount))}
	}
	return nil
}

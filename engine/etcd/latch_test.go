package etcd_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/etcd/etcdtest"
)

// TestLatch runs the countdown latch cases on one etcd member, every
// engine on an etcd client of its own.
func TestLatch(t *testing.T) {
	enginetest.RunLatch(t, harness(etcdtest.Start(t, 1)))
}

// TestLatchLostAnswers: a latch write applied by etcd whose answer is lost
// is sent again (after its attempt's deadline) and never applied twice,
// and the call answers what happened: a SetCount is set (true), each
// CountDown counts once, and the one to zero answers 0. (Seen failing
// with CountDown's id check removed: the resent copy counted again; and
// without SetCount's mark: false.)
func TestLatchLostAnswers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e, _, faults := lostAnswerEngine(t)
	name := lockName(t)
	faults.arm()
	if set, err := e.SetCount(ctx, name, 3); !set || err != nil {
		t.Fatalf("SetCount whose answer was lost: %v %v, want set", set, err)
	}
	for i, want := range []int64{2, 1, 0} {
		faults.arm()
		if n, err := e.CountDown(ctx, name, fmt.Sprint("call-", i)); n != want || err != nil {
			t.Fatalf("CountDown %d whose answer was lost: %d %v, want %d", i, n, err, want)
		}
		if n, err := e.Count(ctx, name); n != want || err != nil {
			t.Fatalf("Count after CountDown %d: %d %v, want %d", i, n, err, want)
		}
	}
	if faults.lost != 4 {
		t.Fatalf("%d answers lost, want 4: the fault did not apply where the test meant it", faults.lost)
	}
}

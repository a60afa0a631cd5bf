package etcdtest

import (
	"context"
	"errors"
	"github.com/distlock/distlock/internal/procstop"
	"sync"
	"testing"
	"time"
)

// TestStopStopsEveryThread: when Stop returns, every thread of the member's
// process is stopped and a request sent then gets no answer, also while
// clients keep the member busy (its threads running when the signal comes).
// The fault tests count on it: a leader that still runs for a few
// milliseconds after Stop commits a write or confirms a read that the test
// takes for an answer without a quorum.
func TestStopStopsEveryThread(t *testing.T) {
	c := Start(t, 1)
	m := c.Members[0]
	busy := c.Client(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				rctx, rcancel := context.WithTimeout(ctx, 100*time.Millisecond)
				_, _ = busy.Put(rctx, "busy", "x")
				rcancel()
			}
		}()
	}
	defer wg.Wait()
	defer cancel()
	probe := c.Client(t)
	for i := range 20 {
		m.Stop()
		if ok, running, err := procstop.Stopped(m.Pid()); err != nil || !ok {
			t.Fatalf("stop %d: threads still running when Stop returned:%s (%v)", i, running, err)
		}
		if i%4 == 0 {
			rctx, rcancel := context.WithTimeout(ctx, 200*time.Millisecond)
			_, err := probe.Get(rctx, "busy")
			rcancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("stop %d: the stopped member answered a read (error %v)", i, err)
			}
		}
		m.Cont()
	}
}

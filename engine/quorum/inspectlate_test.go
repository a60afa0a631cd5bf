package quorum_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/engine/quorum"
)

// unread is a node that grants but does not answer reads (a hung node, as
// an admin view sees it).
type unread struct{ *memory.Engine }

func (unread) Inspect(context.Context, string) (engine.Info, error) {
	return engine.Info{}, errors.New("no answer")
}

// TestInspectAfterLateGrant: an Acquire returns once a majority granted;
// an Inspect after it asks the node whose answer was still out only after
// that answer, so it sees the grant. Here the lock is held on two nodes of
// three, one of which does not answer reads: read before the late node's
// grant landed, the view would say "free" to the caller that just acquired.
func TestInspectAfterLateGrant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gates := make(chan gate, 1)
		late := newGate()
		gates <- late
		nodes := []engine.Engine{memory.New(), unread{memory.New()}, queuedAcquire{memory.New(), gates}}
		q, err := quorum.New(nodes, quorum.WithoutFencing(), quorum.WithNodeTimeout(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		opened := false
		defer func() {
			if !opened {
				close(late.open) // a failed run's gated grant goes on, so Close does not wait forever
			}
		}()
		ctx := context.Background()
		g, err := q.Acquire(ctx, engine.AcquireRequest{Name: "m", Owner: "o", Attempt: "o", OneOff: true, TTL: time.Hour})
		if err != nil || !g.Acquired {
			t.Fatalf("acquire: %+v, %v", g, err)
		}
		type answer struct {
			info engine.Info
			err  error
		}
		got := make(chan answer, 1)
		go func() {
			info, err := q.Inspect(ctx, "m")
			got <- answer{info, err}
		}()
		synctest.Wait()
		select {
		case a := <-got:
			t.Fatalf("Inspect answered before the late node's grant landed: %+v, %v", a.info, a.err)
		default:
		}
		close(late.open)
		opened = true
		a := <-got
		if a.err != nil || !a.info.Held || a.info.Owner != "o" {
			t.Fatalf("Inspect after the late grant landed: %+v, %v; want held by o", a.info, a.err)
		}
	})
}

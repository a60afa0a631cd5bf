package distlock_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/fence"
)

// A leader loop: campaign, work under the leadership's context with the
// term as the fencing token, and step down. The resource's guard rejects a
// deposed leader's late write, because a later leader's term is higher.
func ExampleClient_Campaign() {
	ctx := context.Background()
	eng := memory.New()
	a, b := distlock.New(eng), distlock.New(eng) // two processes, one election
	defer a.Close()
	defer b.Close()
	var config fence.Guard // where the leader writes

	old, _ := a.Campaign(ctx, "scheduler", "node-a")
	fmt.Println("leader:", old.Value())
	// node-a stalls; its leadership is taken from it (here by an operator).
	_, _ = a.ForceRelease(ctx, "scheduler")
	now, _ := b.Campaign(ctx, "scheduler", "node-b")
	_ = config.Do("config", now.Term(), "node-b", func() error { return nil })

	// node-a wakes up and writes with its old term: refused.
	err := config.Do("config", old.Term(), "node-a", func() error { return nil })
	var stale *fence.StaleError
	fmt.Println("stale write refused:", errors.As(err, &stale))

	l, _ := b.Leader(ctx, "scheduler")
	fmt.Println("leader:", l.Value, "term increased:", l.Term > old.Term())
	_ = now.Resign(ctx)
	_, err = b.Leader(ctx, "scheduler")
	fmt.Println(errors.Is(err, distlock.ErrNoLeader))
	// Output:
	// leader: node-a
	// stale write refused: true
	// leader: node-b term increased: true
	// true
}

// Observe follows an election by notification: the current state first,
// then every change; a slow reader gets the latest state, never a stale one.
func ExampleClient_Observe() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := distlock.New(memory.New())
	defer c.Close()
	changes, _ := c.Observe(ctx, "scheduler")
	fmt.Println("elected:", (<-changes).Elected())
	l, _ := c.Campaign(ctx, "scheduler", "node-a")
	fmt.Println("leader:", (<-changes).Value)
	_ = l.Proclaim(ctx, "node-a (draining)")
	fmt.Println("leader:", (<-changes).Value)
	_ = l.Resign(ctx)
	fmt.Println("elected:", (<-changes).Elected())
	// Output:
	// elected: false
	// leader: node-a
	// leader: node-a (draining)
	// elected: false
}

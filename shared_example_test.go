package distlock_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/memory"
)

// A semaphore bounds how many workers run at once across processes; each
// permit is a lease of its own, and WithWeight takes several.
func ExampleClient_Semaphore() {
	ctx := context.Background()
	c := distlock.New(memory.New())
	defer c.Close()
	exports := c.Semaphore("exports", 3) // at most 3 permits, stored with the lock

	small, _ := exports.Acquire(ctx)
	big, _ := exports.Acquire(ctx, distlock.WithWeight(2))
	_, err := exports.TryAcquire(ctx)
	fmt.Println("a fourth permit:", errors.Is(err, distlock.ErrLocked))

	info, _ := exports.Inspect(ctx)
	fmt.Println("holders:", len(info.Holders), "limit:", info.Limit)

	// A client that still declares another limit is served under the
	// stored one: here, no permit is free.
	_, err = c.Semaphore("exports", 5).TryAcquire(ctx)
	fmt.Println("another limit:", errors.Is(err, distlock.ErrLocked))

	_ = small.Release(ctx)
	_ = big.Release(ctx)
	// Output:
	// a fourth permit: true
	// holders: 2 limit: 3
	// another limit: true
}

// Readers share an RWMutex; a writer excludes them, and readers that come
// after a waiting writer queue behind it, so writers are never starved.
func ExampleClient_RWMutex() {
	ctx := context.Background()
	c := distlock.New(memory.New())
	defer c.Close()
	catalog := c.RWMutex("catalog")

	r1, _ := catalog.RLock(ctx)
	r2, _ := catalog.RLock(ctx)
	_, err := catalog.TryLock(ctx)
	fmt.Println("write while reading:", errors.Is(err, distlock.ErrLocked))
	_ = r1.Release(ctx)
	_ = r2.Release(ctx)

	w, _ := catalog.Lock(ctx)
	fmt.Println("writer's token above the readers':", w.Token() > r2.Token())
	_ = w.Release(ctx)

	me, _ := catalog.RLock(ctx, distlock.WithOwner("job-42"))
	_, err = catalog.Lock(ctx, distlock.WithOwner("job-42"))
	fmt.Println("upgrade:", errors.Is(err, distlock.ErrUpgrade))
	_ = me.Release(ctx)
	// Output:
	// write while reading: true
	// writer's token above the readers': true
	// upgrade: true
}

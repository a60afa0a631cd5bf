package distlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/memory"
)

// TestNoBargingInsideClient: goroutines of one Client that contend for one
// name get it in turn; one that releases and asks again at once does not
// overtake those already waiting.
func TestNoBargingInsideClient(t *testing.T) {
	c := distlock.New(memory.New())
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const workers, rounds = 8, 25
	var (
		mu     sync.Mutex
		order  []int
		counts [workers]int
		wg     sync.WaitGroup
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				l, err := c.Acquire(ctx, "turns")
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				order = append(order, w)
				counts[w]++
				mu.Unlock()
				time.Sleep(100 * time.Microsecond)
				_ = l.Release(ctx)
			}
		}()
	}
	wg.Wait()
	// Count immediate re-acquisitions by the same goroutine.
	again := 0
	for i := 1; i < len(order); i++ {
		if order[i] == order[i-1] {
			again++
		}
	}
	t.Logf("%d grants, %d immediate re-acquisitions by the same goroutine", len(order), again)
	if again > len(order)/10 {
		t.Fatalf("%d of %d grants went back to the goroutine that just released: barging", again, len(order))
	}
}

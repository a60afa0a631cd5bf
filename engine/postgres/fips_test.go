package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/fipstest"
)

// TestFIPSOnly: under GODEBUG=fips140=only, where crypto/md5 panics, the
// engine starts (its channel's name) and a waiter subscribed to a lock's
// wake-ups (its name's address) gets it when the holder releases it. Both
// are MD5s, as PostgreSQL's md5() computes them. It runs in a copy of the
// test binary (fipstest.Run).
func TestFIPSOnly(t *testing.T) { fipstest.Run(t, fipsChild) }

// fipsChild is TestFIPSOnly in the copy run under GODEBUG=fips140=only.
func fipsChild(t *testing.T) {
	const schema = "fips"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	holder := distlock.New(newEngine(t, newPool(t), schema))
	defer holder.Close()
	waiter := distlock.New(newEngine(t, newPool(t), schema))
	defer waiter.Close()
	name := uniqueName(t)
	h, err := holder.Acquire(ctx, name, distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l, err := waiter.Acquire(ctx, name, distlock.WithFair())
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	waitFor(t, "the waiter", func() bool {
		info, err := holder.Inspect(ctx, name)
		return err == nil && info.Waiters == 1
	})
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

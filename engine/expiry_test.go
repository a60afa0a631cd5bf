package engine_test

import (
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
)

// TestHoldExpiry: one hold takes the ttl from now, shorter too; with more
// holds the expiry only moves later.
func TestHoldExpiry(t *testing.T) {
	now := time.Unix(1000, 0)
	later, sooner := now.Add(30*time.Second), now.Add(time.Second)
	for _, tc := range []struct {
		holds   int
		current time.Time
		ttl     time.Duration
		want    time.Time
	}{
		{1, later, 3 * time.Second, now.Add(3 * time.Second)},
		{1, sooner, 3 * time.Second, now.Add(3 * time.Second)},
		{2, later, 3 * time.Second, later},
		{2, sooner, 3 * time.Second, now.Add(3 * time.Second)},
		{3, later, time.Minute, now.Add(time.Minute)},
	} {
		if got := engine.HoldExpiry(tc.holds, tc.current, now, tc.ttl); !got.Equal(tc.want) {
			t.Errorf("HoldExpiry(%d holds, expiring in %v, ttl %v) = +%v, want +%v",
				tc.holds, tc.current.Sub(now), tc.ttl, got.Sub(now), tc.want.Sub(now))
		}
	}
}

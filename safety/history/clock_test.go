package history

import (
	"testing"
	"time"
)

// TestCalibrateSkipsAPause: a pause between the readings of an attempt (a
// process descheduled) does not shift the pair: calibrate keeps a tight
// attempt. Reading the two clocks once, one after the other (the old way),
// would have put every converted time 5 ms late.
func TestCalibrateSkipsAPause(t *testing.T) {
	var clock int64 = 1_000_000_000 // the fake CLOCK_MONOTONIC, ns
	start := time.Now()
	calls := 0
	now := func() time.Time {
		calls++
		if calls == 1 {
			clock += int64(5 * time.Millisecond) // descheduled right after the first reading
		}
		return start.Add(time.Duration(clock))
	}
	mono := func() int64 {
		clock += 100 // 100 ns a reading
		return clock
	}
	b := calibrate(now, mono)
	got := b.mono + int64(start.Add(time.Duration(clock)).Sub(b.wall))
	if d := got - clock; d < -b.err || d > b.err || b.err > 100 {
		t.Fatalf("converted %d, want %d within the pair's error %d (at most 100 ns)", got, clock, b.err)
	}
}

// TestNowBracketed: Now lies between two CLOCK_MONOTONIC readings taken
// around it, within the calibration's error.
func TestNowBracketed(t *testing.T) {
	for range 1000 {
		a := clockMono()
		n := Now()
		b := clockMono()
		if n < a-base.err || n > b+base.err {
			t.Fatalf("Now %d outside [%d, %d] by more than the calibration's error %d ns", n, a, b, base.err)
		}
	}
}

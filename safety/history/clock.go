package history

import (
	"time"

	"golang.org/x/sys/unix"
)

// The one clock of a history: CLOCK_MONOTONIC, which every process on the
// machine reads alike (it also runs while a process is SIGSTOPped). Go's own
// monotonic readings come from the same clock on Linux, so a time.Time taken
// in this process converts exactly.
var (
	baseWall = time.Now()
	baseMono = clockMono()
)

func clockMono() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic("history: clock_gettime(CLOCK_MONOTONIC): " + err.Error())
	}
	return ts.Nano()
}

// Now returns the current time in nanoseconds on CLOCK_MONOTONIC.
func Now() int64 { return Mono(time.Now()) }

// Mono converts a time.Time taken in this process (with its monotonic
// reading, as time.Now returns) to nanoseconds on CLOCK_MONOTONIC. The zero
// time converts to 0.
func Mono(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return baseMono + int64(t.Sub(baseWall))
}

package history

import (
	"time"

	"golang.org/x/sys/unix"
)

// The one clock of a history: CLOCK_MONOTONIC, which every process on the
// machine reads alike (it also runs while a process is SIGSTOPped). Go's own
// monotonic readings come from the same clock on Linux, but a time.Time
// holds them relative to the process's start: a time.Time is converted
// through one pair of readings (base) taken at the same moment.
var base = calibrate(time.Now, clockMono)

// clockBase pairs a time.Time with the CLOCK_MONOTONIC reading of the same
// moment, within err nanoseconds.
type clockBase struct {
	wall time.Time
	mono int64
	err  int64
}

// calibrationTries bounds calibrate's attempts; tightEnough ends them early.
const (
	calibrationTries = 1000
	tightEnough      = 2 * time.Microsecond
)

// calibrate pairs a reading of now with one of mono: each attempt reads
// mono, now, mono, and the pair is now's reading with the middle of the
// two mono readings, off by at most half their distance. The tightest
// attempt is kept. A process descheduled between two readings (a loaded
// machine, a process just started) would otherwise shift every time it
// records by the length of that pause: two readings taken one after the
// other, as before, put a restarted client's events 1-3 ms late beside
// the others' under load, and the checker saw overlaps and stale writes
// that its own resource's order contradicted.
func calibrate(now func() time.Time, mono func() int64) clockBase {
	best := clockBase{err: -1}
	for range calibrationTries {
		a := mono()
		w := now()
		b := mono()
		if err := (b - a + 1) / 2; best.err < 0 || err < best.err {
			best = clockBase{wall: w, mono: a + (b-a)/2, err: err}
		}
		if best.err <= int64(tightEnough) {
			break
		}
	}
	return best
}

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
	return base.mono + int64(t.Sub(base.wall))
}

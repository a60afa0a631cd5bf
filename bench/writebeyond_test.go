package main

import (
	"testing"
	"time"
)

// TestWriteBeyond: a write's wait loses the time other writers held the
// lock during it, and no more; a write outside the window counts as a
// holder but is not measured.
func TestWriteBeyond(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	spans := []writeSpan{
		{call: at(0), got: at(0), end: at(4)},              // before the window: held 0-4
		{call: at(1), got: at(5), end: at(6), in: true},    // waited 4, of which 3 behind the first
		{call: at(2), got: at(9), end: at(10), in: true},   // waited 7: 2 + 1 behind the two writers
		{call: at(20), got: at(21), end: at(22), in: true}, // waited 1, nobody ahead
	}
	beyond, ahead := writeBeyond(spans)
	if beyond != 4*time.Millisecond || ahead != 2 {
		t.Fatalf("writeBeyond = %v, %d writers; want 4ms, 2", beyond, ahead)
	}
	if _, ahead := writeBeyond(spans[:1]); ahead != -1 {
		t.Fatalf("no write in the window: %d writers, want -1", ahead)
	}
}

package server

import (
	"sync"
	"time"
)

// The dashboard's chart: counts of acquisitions, waits and losses in 5s
// buckets over the last 10 minutes.
const (
	timelineBucket  = 5 * time.Second
	timelineBuckets = 120
)

// The series of the timeline.
const (
	seriesAcquired = iota
	seriesWaits
	seriesLost
	seriesCount
)

// timeline is a ring of buckets of counts.
type timeline struct {
	mu     sync.Mutex
	width  time.Duration
	counts [][seriesCount]int64
	last   int64 // index (time / width) of the newest bucket
	now    func() time.Time
}

func newTimeline(width time.Duration, n int) *timeline {
	return &timeline{width: width, counts: make([][seriesCount]int64, n), now: time.Now}
}

// advance moves the ring to the bucket of now, clearing the buckets skipped;
// t.mu is held.
func (t *timeline) advance(now time.Time) int64 {
	idx := now.UnixNano() / int64(t.width)
	if t.last == 0 {
		t.last = idx
	}
	if n := int64(len(t.counts)); idx-t.last >= n {
		clear(t.counts)
		t.last = idx
	}
	for t.last < idx {
		t.last++
		t.counts[t.last%int64(len(t.counts))] = [seriesCount]int64{}
	}
	return idx
}

func (t *timeline) add(series int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	idx := t.advance(t.now())
	t.counts[idx%int64(len(t.counts))][series]++
}

// timelineJSON is the chart's data: the start of the oldest bucket (Unix
// milliseconds), the bucket width, and one count per bucket per series,
// oldest first.
type timelineJSON struct {
	StartMs  int64   `json:"start_ms"`
	BucketMs int64   `json:"bucket_ms"`
	Acquired []int64 `json:"acquired"`
	Waits    []int64 `json:"waits"`
	Lost     []int64 `json:"lost"`
}

func (t *timeline) snapshot() timelineJSON {
	t.mu.Lock()
	defer t.mu.Unlock()
	idx := t.advance(t.now())
	n := int64(len(t.counts))
	out := timelineJSON{
		StartMs:  (idx - n + 1) * int64(t.width) / int64(time.Millisecond),
		BucketMs: t.width.Milliseconds(),
		Acquired: make([]int64, n),
		Waits:    make([]int64, n),
		Lost:     make([]int64, n),
	}
	for i := int64(0); i < n; i++ {
		c := t.counts[(idx-n+1+i)%n]
		out.Acquired[i], out.Waits[i], out.Lost[i] = c[seriesAcquired], c[seriesWaits], c[seriesLost]
	}
	return out
}

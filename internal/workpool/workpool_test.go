package workpool

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// goid is the id of the calling goroutine, read from its stack header.
func goid() int {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	f := bytes.Fields(bytes.TrimPrefix(buf, []byte("goroutine ")))
	n, _ := strconv.Atoi(string(f[0]))
	return n
}

// TestPoolReuseAndEnd: a request handed to a pool while one is idle
// runs on that goroutine (no goroutine per request); two at once run on
// two; an idle worker ends after the idle time, and every worker ends when
// stop is closed, so none outlives its owner.
func TestPoolReuseAndEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var wg sync.WaitGroup
		stop := make(chan struct{})
		const idle = time.Second
		s := New(stop, &wg, idle)
		ids := make(chan int, 4)
		job := func() { ids <- goid() }

		s.Run(job)
		synctest.Wait() // the worker is idle
		s.Run(job)
		if a, b := <-ids, <-ids; a != b {
			t.Fatalf("second request ran on goroutine %d, want the idle worker %d", b, a)
		}

		release := make(chan struct{})
		s.Run(func() { ids <- goid(); <-release }) // keeps the worker busy
		s.Run(job)
		a, b := <-ids, <-ids
		close(release)
		if a == b {
			t.Fatal("two requests at once ran on one goroutine")
		}

		time.Sleep(idle + time.Millisecond)
		synctest.Wait()
		wg.Wait() // both workers ended when idle

		s.Run(job)
		synctest.Wait()
		close(stop)
		wg.Wait() // and a waiting one ends with its owner
	})
}

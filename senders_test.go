package distlock

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

// TestSendersReuseAndEnd: a request handed to senders while one is idle
// runs on that goroutine (no goroutine per request); two at once run on
// two; an idle sender ends after senderIdle, and every sender ends when the
// Client closes (stop), so none outlives it.
func TestSendersReuseAndEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var wg sync.WaitGroup
		stop := make(chan struct{})
		s := senders{jobs: make(chan func()), stop: stop, wg: &wg}
		ids := make(chan int, 4)
		job := func() { ids <- goid() }

		s.run(job)
		synctest.Wait() // the sender is idle
		s.run(job)
		if a, b := <-ids, <-ids; a != b {
			t.Fatalf("second request ran on goroutine %d, want the idle sender %d", b, a)
		}

		release := make(chan struct{})
		s.run(func() { ids <- goid(); <-release }) // keeps the sender busy
		s.run(job)
		a, b := <-ids, <-ids
		close(release)
		if a == b {
			t.Fatal("two requests at once ran on one goroutine")
		}

		time.Sleep(senderIdle + time.Millisecond)
		synctest.Wait()
		wg.Wait() // both senders ended when idle

		s.run(job)
		synctest.Wait()
		close(stop)
		wg.Wait() // and a waiting one ends with the Client
	})
}

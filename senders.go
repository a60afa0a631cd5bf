package distlock

import (
	"sync"
	"time"
)

// senderIdle is how long a sender goroutine waits for its next request
// before it ends.
const senderIdle = time.Second

// senders runs the requests in flight of sendSettled on goroutines it keeps
// while requests come: a request handed to an idle sender costs no new
// goroutine and no stack growth (the network clients' call paths are deep),
// which a goroutine started per request pays on every call. A sender ends
// after senderIdle without work or when the Client closes; wg (the
// Client's bg, which Close waits for) counts them, so none outlives its
// Client.
type senders struct {
	jobs chan func()     // unbuffered: a send succeeds only into an idle sender
	stop <-chan struct{} // closed when the Client closes
	wg   *sync.WaitGroup
}

// run runs job on an idle sender, or on a new one. It is called only
// within a Client call (c.calls), so never after Close has begun waiting
// for wg.
func (s *senders) run(job func()) {
	select {
	case s.jobs <- job:
		return
	default:
	}
	s.wg.Add(1)
	go s.loop(job)
}

// loop runs job, then the jobs handed to it, until it has been idle for
// senderIdle or the Client closes.
func (s *senders) loop(job func()) {
	defer s.wg.Done()
	idle := time.NewTimer(senderIdle)
	defer idle.Stop()
	for {
		job()
		idle.Reset(senderIdle)
		select {
		case job = <-s.jobs:
		case <-idle.C:
			return
		case <-s.stop:
			return
		}
	}
}

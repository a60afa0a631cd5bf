package server

import (
	"fmt"
	"net/http"
	"sync"

	"github.com/distlock/distlock/server/api"
)

// limits bounds the waiting requests: held-open acquires and release-event
// streams, per lock name and in total. A request beyond them is answered
// too_many_waiters at once, so waiters can never exhaust the server's
// memory.
type limits struct {
	mu         sync.Mutex
	total      int
	maxTotal   int
	perName    map[string]int
	maxPerName int
}

func newLimits(total, perName int) *limits {
	return &limits{maxTotal: total, maxPerName: perName, perName: make(map[string]int)}
}

// enter admits one more waiter on name, or says why not. leave must be
// called exactly once when the waiter is done.
func (l *limits) enter(name string) (leave func(), _ *apiError) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total >= l.maxTotal {
		return nil, tooManyWaiters(fmt.Sprintf("this server has %d waiting requests, its limit", l.total))
	}
	if l.perName[name] >= l.maxPerName {
		return nil, tooManyWaiters(fmt.Sprintf("%d requests wait for this lock already, the server's limit per name", l.perName[name]))
	}
	l.total++
	l.perName[name]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.total--
			if l.perName[name]--; l.perName[name] <= 0 {
				delete(l.perName, name)
			}
		})
	}, nil
}

// waiting returns the number of waiters in total.
func (l *limits) waiting() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

func tooManyWaiters(msg string) *apiError {
	e := newError(http.StatusTooManyRequests, api.CodeTooManyWaiters, msg+"; retry later")
	e.detail.RetryMs = 1000
	return e
}

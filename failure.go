package distlock

import "time"

// DefaultBackendFailureBudget is how long the attempts of one wait (Acquire,
// Semaphore.Acquire, RWMutex.Lock and RLock, Campaign, Do) may keep failing
// with backend errors before the wait gives up, unless
// WithBackendFailureBudget says otherwise. It outlasts the usual outages a
// wait should ride out (a Redis restart, a Redis Cluster failover after
// its default 15 s node timeout, an etcd leader election, a PostgreSQL
// restart), and turns an address where nothing listens into an error in
// seconds instead of a wait that never returns.
const DefaultBackendFailureBudget = 20 * time.Second

// WithBackendFailureBudget bounds how long the attempts of one wait may keep
// failing with backend errors (default DefaultBackendFailureBudget): once
// they have failed for d without an answer in between, the wait ends with
// the last attempt's *BackendError (its Failing field says how long),
// whatever is left of the wait's context. An attempt that gets no answer
// within what is left of d is cut off and counts as failed. A queued
// waiter's heartbeat that fails counts too, from its send time: the wait
// makes an attempt at once rather than sleeping until a wake-up. Errors that no
// retry can mend end a wait at once, whatever d is. Set d well above one
// round trip to the backend; d <= 0 keeps the default.
func WithBackendFailureBudget(d time.Duration) ClientOption {
	return func(c *Client) {
		if d > 0 {
			c.failureBudget = d
		}
	}
}

package etcd

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// DefaultAttemptTimeout is how long one request to etcd may take unless
// WithAttemptTimeout says otherwise: far above a request's round trip and
// Raft commit, far below distlock's default ttl (30 s) and the gRPC
// keepalive (at least 10 s) that would otherwise be the only end of a
// request sent to a stopped member.
const DefaultAttemptTimeout = 2 * time.Second

// minAttempt is the least time an attempt is given, however close the
// caller's deadline.
const minAttempt = 100 * time.Millisecond

// Backoff between attempts that failed at once (a member without a leader
// answers "no leader" in a moment, many times during an election).
const (
	backoffBase = 25 * time.Millisecond
	backoffMax  = 250 * time.Millisecond
)

// WithAttemptTimeout sets how long one request to etcd may take (default
// DefaultAttemptTimeout; d <= 0 keeps it). A request that takes longer (its
// member is stopped, or lost the leader) is abandoned and sent again, while
// the caller's context allows: the etcd client balances requests
// round-robin, so the next attempt goes to another member. After three
// attempts in a row ran out of time, each further one gets twice as long (up
// to 8 times d), so that a cluster that is slow rather than stopped still
// answers. A caller's
// deadline caps it too: an attempt gets at most a third of the time left
// (at least 100 ms), so that a call can still be sent twice more.
func WithAttemptTimeout(d time.Duration) Option {
	return func(e *Engine) {
		if d > 0 {
			e.attempt = d
		}
	}
}

// attemptContext returns the context of an attempt of a request made under
// ctx after timedOut attempts of it ran out of time: attemptDeadline.
func (e *Engine) attemptContext(ctx context.Context, timedOut int) (context.Context, context.CancelFunc) {
	d := e.attemptDeadline(timedOut)
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, max(time.Until(dl)/3, minAttempt))
	}
	return context.WithTimeout(ctx, d)
}

// patientAfter is how many attempts in a row may run out of time before the
// next gets longer: with three members, at least one of them went to a
// member that answers, if slowly.
const patientAfter = 3

// attemptDeadline is the deadline of an attempt after timedOut attempts of
// the request ran out of time: the configured one for the first
// patientAfter attempts (each goes to another member), then twice as long
// for each further one, up to 8 times, so that a request that every member
// answers slowly (a loaded cluster) still gets its answer.
func (e *Engine) attemptDeadline(timedOut int) time.Duration {
	return e.attempt << min(max(timedOut-patientAfter+1, 0), 3)
}

// retry runs f, one request to etcd, until it answers, fails for a reason
// another attempt cannot mend, or ctx ends. Each attempt has a deadline of
// its own (attemptContext); an attempt that runs out of it or finds its
// member unavailable (no leader, leader changed, request timed out, no
// connection) is sent again, at once after a timeout and after a short
// jittered backoff otherwise. unsure reports that an attempt failed after
// it may have reached etcd: a write may have been applied without an
// answer.
//
// Every request of the engine goes through retry, writes too: each write
// transaction compares a key that its own operations change, or does only
// what is the same done twice (deletes; a wake-up put again), so an attempt
// applied without an answer makes the next attempt's comparison fail, and
// the caller reads again and decides again (see docs/ETCD.md, "Stopped
// members").
func (e *Engine) retry(ctx context.Context, f func(ctx context.Context) error) (unsure bool, err error) {
	slow := 0 // attempts that ran out of time
	for n := 0; ; n++ {
		actx, cancel := e.attemptContext(ctx, slow)
		err = f(actx)
		timedOut := actx.Err() != nil
		cancel()
		if err == nil || !(timedOut || unavailable(err)) {
			return unsure, err
		}
		unsure = true
		if ctx.Err() != nil {
			return unsure, cutShort(ctx, err)
		}
		if timedOut {
			slow++
			continue
		}
		wait := min(backoffBase<<min(n, 4), backoffMax)
		wait = wait/2 + rand.N(wait/2+1)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return unsure, cutShort(ctx, err)
		case <-t.C:
		}
	}
}

// cutShort is the error of a request whose retries ctx ended: ctx's error,
// with the last attempt's when that says more.
func cutShort(ctx context.Context, err error) error {
	if errors.Is(err, ctx.Err()) {
		return err
	}
	return fmt.Errorf("%w (last attempt: %w)", ctx.Err(), err)
}

// unavailable reports an error that another attempt, on another member or
// after an election, can mend.
func unavailable(err error) bool {
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return ee.Code() == codes.Unavailable
	}
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		return se.GRPCStatus().Code() == codes.Unavailable
	}
	return errors.Is(err, errStreamEnded)
}

// errStreamEnded reports a keepalive stream that ended before it answered.
var errStreamEnded = errors.New("keepalive stream ended early")

// txn runs one transaction through retry: if every comparison holds, the
// operations then, else the operations els. unsure: see retry.
func (e *Engine) txn(ctx context.Context, op string, cmps []clientv3.Cmp, then []clientv3.Op, els ...clientv3.Op) (resp *clientv3.TxnResponse, unsure bool, err error) {
	unsure, err = e.retry(ctx, func(ctx context.Context) error {
		var err error
		resp, err = e.cli.Txn(ctx).If(cmps...).Then(then...).Else(els...).Commit()
		return err
	})
	if err != nil {
		return nil, unsure, backendErr(op, err)
	}
	return resp, unsure, nil
}

// request runs f, a request that changes nothing (or whose lost answer
// leaves nothing that matters behind), through retry; its error is a
// BackendError for op.
func request[T any](ctx context.Context, e *Engine, op string, f func(context.Context) (T, error)) (T, error) {
	var out T
	_, err := e.retry(ctx, func(ctx context.Context) error {
		var err error
		out, err = f(ctx)
		return err
	})
	if err != nil {
		var zero T
		return zero, backendErr(op, err)
	}
	return out, nil
}

// get reads key (with opts) through retry.
func (e *Engine) get(ctx context.Context, op, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	return request(ctx, e, op, func(ctx context.Context) (*clientv3.GetResponse, error) { return e.cli.Get(ctx, key, opts...) })
}

// grant grants a lease of ttl seconds through retry. An attempt granted
// without an answer leaves a lease nobody uses, which expires on its own.
func (e *Engine) grant(ctx context.Context, op string, ttl int64) (*clientv3.LeaseGrantResponse, error) {
	return request(ctx, e, op, func(ctx context.Context) (*clientv3.LeaseGrantResponse, error) { return e.cli.Grant(ctx, ttl) })
}

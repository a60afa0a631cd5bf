package distlock

import (
	"context"
	"errors"
	"time"

	"github.com/distlock/distlock/engine"
)

// release sends r, the release of lease l's hold, within ctx. Where a copy
// of it cannot drop a second hold, it is sent again after a backend error
// that may pass, until answered or ctx ends (resend): a failover's refused
// dials (go-redis refuses new connections for a second after a pool's
// worth of failed dials), a connection reset.
//   - On an engine whose releases apply once (engine.OnceReleaser: every
//     engine of this module, and a server whose engine is one) every copy
//     carries one release id, so a copy of a count-down that did apply
//     drops no second hold of a re-entrant owner.
//   - Elsewhere, for a one-off owner's hold (the Client's random owners,
//     which never re-enter), a copy of a release that did apply finds the
//     lock free.
//
// Either way a copy of a release that freed the lock finds it free:
// settled takes a later copy's "not held" for the first copy's release.
// Any other release (an explicit owner's on an engine that cannot release
// once) is sent once.
func (c *Client) release(ctx context.Context, l *Lease, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	if once, ok := c.eng.(engine.OnceReleaser); ok {
		id := c.owners.Next()
		res, err := c.resendRelease(ctx, l, func(ctx context.Context) (engine.ReleaseResult, error) {
			return once.ReleaseOnce(ctx, r, id)
		})
		if !errors.Is(err, errors.ErrUnsupported) {
			return res, err
		}
	}
	if !l.oneOff {
		return c.eng.Release(ctx, r)
	}
	return c.resendRelease(ctx, l, func(ctx context.Context) (engine.ReleaseResult, error) {
		return c.eng.Release(ctx, r)
	})
}

// resendRelease sends a copy of l's release with send until answered
// (resend), and answers a later copy's "not held" as settled says.
func (c *Client) resendRelease(ctx context.Context, l *Lease, send func(ctx context.Context) (engine.ReleaseResult, error)) (engine.ReleaseResult, error) {
	var res engine.ReleaseResult
	err := c.resend(ctx, func(ctx context.Context, copy int) (err error) {
		sent := time.Now()
		res, err = send(ctx)
		if err == nil && copy > 0 {
			res = l.settled(res, sent)
		}
		return err
	})
	return res, err
}

// resend calls send (copy: 0 for the first call) until it returns nil or
// an error that will not pass (bad input, the engine's permanent errors,
// errors.ErrUnsupported), or ctx ends; it returns send's last error.
// The pause between two copies doubles from undoRetryFirst to
// releaseRetryMax.
func (c *Client) resend(ctx context.Context, send func(ctx context.Context, copy int) error) error {
	pause := undoRetryFirst
	for copy := 0; ; copy++ {
		err := send(ctx, copy)
		if err == nil || isArgument(err) || engine.IsPermanent(c.eng, err) || errors.Is(err, errors.ErrUnsupported) {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		pause = min(2*pause, releaseRetryMax)
	}
}

// settled is the answer res to a copy of l's release sent at sent, after
// an earlier copy failed without an answer: "not held" while l was still
// valid (sent before its deadline, which the lock service keeps the hold
// past) means the earlier copy was applied, and is Released. Any other
// answer stands: another owner may hold the lock after the earlier copy
// freed it, or after a force-release freed it, and the two are told
// apart by nothing; it is reported taken over.
func (l *Lease) settled(res engine.ReleaseResult, sent time.Time) engine.ReleaseResult {
	l.mu.Lock()
	valid := sent.Before(l.deadline)
	l.mu.Unlock()
	if res.Status == engine.NotHeld && valid {
		res.Status = engine.Released
	}
	return res
}

// releaseRetryMax is the longest pause between two copies of a release
// (Client.resend): a second, the time go-redis waits before it dials a
// refused server again.
const releaseRetryMax = time.Second

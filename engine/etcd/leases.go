package etcd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// poolCap is how many unused leases of one ttl an engine keeps for reuse.
const poolCap = 8

// leasePool keeps leases this engine granted and no longer uses (a refused
// attempt's, a released lock's), so that the next grant of the same ttl
// skips a LeaseGrant round trip. A pooled lease is always renewed before it
// carries a key again: its expiry then counts from a time after the call
// that uses it began.
type leasePool struct {
	mu   sync.Mutex
	free map[int64][]pooled // by ttl in seconds
}

type pooled struct {
	id     clientv3.LeaseID
	expiry time.Time // local estimate, from the send time of its last renewal
}

// take returns a pooled lease of ttl seconds that should still be alive.
func (p *leasePool) take(ttl int64) (clientv3.LeaseID, bool) {
	l, ok := p.takeLease(ttl)
	return l.id, ok
}

// takeLease is take that also returns the lease's expiry.
func (p *leasePool) takeLease(ttl int64) (pooled, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	list := p.free[ttl]
	for len(list) > 0 {
		last := list[len(list)-1]
		list = list[:len(list)-1]
		if now.Add(500 * time.Millisecond).Before(last.expiry) {
			p.free[ttl] = list
			return last, true
		}
	}
	delete(p.free, ttl)
	return pooled{}, false
}

// agedShare: a pooled lease that has used at most 1/agedShare of its ttl
// carries a grant without being renewed first, for a caller that counts
// the lease's age (engine.AcquireRequest.Aged).
const agedShare = 10

// age returns how much of its ttl of ttl seconds lease p had used at now,
// as the engine knows it (its expiry counts from the send time of its last
// renewal), and whether that is little enough to grant on it unrenewed.
func (p pooled) age(ttl int64, now time.Time) (time.Duration, bool) {
	full := time.Duration(ttl) * time.Second
	age := max(full-p.expiry.Sub(now), 0)
	return age, age <= full/agedShare
}

// put offers a lease with no key attached for reuse.
func (p *leasePool) put(id clientv3.LeaseID, ttl int64, expiry time.Time) {
	if id == clientv3.NoLease || time.Until(expiry) < time.Second {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.free == nil {
		p.free = make(map[int64][]pooled)
	}
	if len(p.free[ttl]) < poolCap {
		p.free[ttl] = append(p.free[ttl], pooled{id, expiry})
	}
}

// leaseSeconds returns the etcd lease ttl that keeps d: whole seconds,
// rounded up (etcd raises ttls under its minimum itself).
func leaseSeconds(d time.Duration) int64 {
	s := int64((d + time.Second - 1) / time.Second)
	return max(s, 1)
}

// obtain returns a lease of ttl seconds whose expiry is at least ttl after
// the moment obtain was called: a pooled lease renewed now, or a new one.
func (e *Engine) obtain(ctx context.Context, ttl int64) (clientv3.LeaseID, error) {
	sent := time.Now()
	if id, ok := e.pool.take(ttl); ok {
		ttls, err := e.keepAlive(ctx, []clientv3.LeaseID{id})
		if err == nil && ttls[0] > 0 {
			e.noteKept(id, ttl, sent)
			return id, nil
		}
	}
	resp, err := e.grant(ctx, "grant a lease", ttl)
	if err != nil {
		return 0, err
	}
	e.noteKept(resp.ID, ttl, sent)
	return resp.ID, nil
}

// noteKept records that lease id was granted or renewed by a request sent
// at sent: it lives until at least sent + ttl.
func (e *Engine) noteKept(id clientv3.LeaseID, ttl int64, sent time.Time) {
	e.leaseMu.Lock()
	defer e.leaseMu.Unlock()
	if len(e.kept) >= 1024 && len(e.kept)%1024 == 0 {
		for k, exp := range e.kept { // leases that expired on their own
			if exp.Before(sent) {
				delete(e.kept, k)
			}
		}
	}
	e.kept[id] = sent.Add(time.Duration(ttl) * time.Second)
}

// keep records again the expiry of a pooled lease taken for a key without
// a renewal (see agedAcquire), so that it goes back to the pool with it.
func (e *Engine) keep(id clientv3.LeaseID, expiry time.Time) {
	e.leaseMu.Lock()
	defer e.leaseMu.Unlock()
	e.kept[id] = expiry
}

// recycle offers lease id, which no key uses any more, to the pool; a
// tainted lease is revoked instead.
func (e *Engine) recycle(id clientv3.LeaseID, ttl int64) {
	e.leaseMu.Lock()
	expiry, ok := e.kept[id]
	delete(e.kept, id)
	tainted := e.tainted[id]
	delete(e.tainted, id)
	e.leaseMu.Unlock()
	switch {
	case tainted:
		e.revokeLater(id)
	case ok:
		e.pool.put(id, ttl, expiry)
	}
}

// taint marks lease id as named by a write whose outcome was unknown (see
// retry) and that the call then found applied, or applied again: an
// abandoned attempt of that write may still be applied late, after the
// key is gone, and put it again. Such a lease is never pooled: when its
// key goes (a release, a move to a new ttl), it is revoked, and the late
// write with it.
func (e *Engine) taint(id clientv3.LeaseID) {
	e.leaseMu.Lock()
	defer e.leaseMu.Unlock()
	if e.tainted == nil {
		e.tainted = make(map[clientv3.LeaseID]bool)
	}
	e.tainted[id] = true
}

// forget drops what the engine knows of lease id (its key is gone).
func (e *Engine) forget(id clientv3.LeaseID) {
	e.leaseMu.Lock()
	defer e.leaseMu.Unlock()
	delete(e.kept, id)
	delete(e.tainted, id)
}

// keepAlive renews every lease of ids in one round trip (pipelined on one
// keepalive stream, sent again on a new stream when it hangs: see retry)
// and returns each lease's ttl in seconds as the leader renewed it, 0 for
// a lease that no longer exists.
func (e *Engine) keepAlive(ctx context.Context, ids []clientv3.LeaseID) ([]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return request(ctx, e, "keepalive", func(ctx context.Context) ([]int64, error) { return e.keepAliveOnce(ctx, ids) })
}

// keepAliveOnce is one attempt of keepAlive.
func (e *Engine) keepAliveOnce(ctx context.Context, ids []clientv3.LeaseID) ([]int64, error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := pb.NewLeaseClient(e.cli.ActiveConnection()).LeaseKeepAlive(sctx)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if err := stream.Send(&pb.LeaseKeepAliveRequest{ID: int64(id)}); err != nil {
			return nil, err
		}
	}
	if err := stream.CloseSend(); err != nil {
		return nil, err
	}
	got := make(map[int64]int64, len(ids))
	for range ids {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w after %d of %d answers", errStreamEnded, len(got), len(ids))
		}
		if err != nil {
			return nil, err
		}
		got[resp.ID] = resp.TTL
	}
	out := make([]int64, len(ids))
	for i, id := range ids {
		out[i] = got[int64(id)]
	}
	return out, nil
}

// timeLeft returns the time lease id has left, as etcd reports it (whole
// seconds, rounded down; one second is added, capped at the granted ttl),
// and -1 when the lease is gone.
func (e *Engine) timeLeft(ctx context.Context, id clientv3.LeaseID) (time.Duration, error) {
	resp, err := request(ctx, e, "lease time to live", func(ctx context.Context) (*clientv3.LeaseTimeToLiveResponse, error) {
		return e.cli.TimeToLive(ctx, id)
	})
	if err != nil {
		return 0, err
	}
	if resp.TTL < 0 {
		return -1, nil
	}
	return time.Duration(min(resp.TTL+1, resp.GrantedTTL)) * time.Second, nil
}

// revokeLater revokes lease id in the background (within a few attempt
// deadlines; the engine's Close ends it): it was named by a write whose
// outcome is unknown and the call did not use it, so that a key such a
// write put, or puts late, goes at once.
func (e *Engine) revokeLater(id clientv3.LeaseID) {
	e.forget(id)
	if e.bgCtx.Err() != nil {
		return // closed: the lease expires on its own
	}
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		ctx, cancel := context.WithTimeout(e.bgCtx, 4*e.attempt)
		defer cancel()
		_, _ = request(ctx, e, "revoke a lease", func(ctx context.Context) (*clientv3.LeaseRevokeResponse, error) {
			return e.cli.Revoke(ctx, id)
		})
	}()
}

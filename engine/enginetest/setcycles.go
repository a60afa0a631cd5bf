package enginetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
)

// CycleSets are the sets of the deadlock schedule, a ring: client i asks
// for names i and i+1 (mod n) in that order, so the last client asks in
// the opposite order to the others (n-1, then 0), and taking the names in
// the caller's order closes a cycle once each client holds its first.
func CycleSets(p string, n int) [][]string {
	sets := make([][]string, n)
	for i := range sets {
		sets[i] = []string{fmt.Sprintf("%s%d", p, i), fmt.Sprintf("%s%d", p, (i+1)%n)}
	}
	return sets
}

// SetCycles has clients[i] take CycleSets(p, len(clients))[i] with DoAll,
// rounds times each, all at once, and fails t when a name is held twice
// at once or a set is not taken (a deadlock ends with ctx).
func SetCycles(t *testing.T, ctx context.Context, clients []*distlock.Client, p string, rounds int, opts ...distlock.Option) {
	t.Helper()
	sets := CycleSets(p, len(clients))
	var inUse sync.Map
	var wg sync.WaitGroup
	errs := make(chan error, len(clients))
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				err := c.DoAll(ctx, sets[i], func(context.Context) error {
					for _, n := range sets[i] {
						if _, busy := inUse.LoadOrStore(n, i); busy {
							return fmt.Errorf("%q held twice", n)
						}
					}
					time.Sleep(time.Millisecond)
					for _, n := range sets[i] {
						inUse.Delete(n)
					}
					return nil
				}, opts...)
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// SetRequests are the requests of a set of names taken by owner for ttl,
// as Client.AcquireAll sends them to engine.MultiAcquirer: one-off mutex
// requests, the owner its own attempt id.
func SetRequests(owner string, ttl time.Duration, names ...string) []engine.AcquireRequest {
	rs := make([]engine.AcquireRequest, len(names))
	for i, n := range names {
		rs[i] = engine.AcquireRequest{Name: n, Owner: owner, Attempt: owner, OneOff: true, TTL: ttl}
	}
	return rs
}

// ReleaseRequests is the ReleaseMulti of names by owners[i] (one owner for
// all when owners has one), of any grant (token 0).
func ReleaseRequests(names []string, owners ...string) []engine.ReleaseRequest {
	rs := make([]engine.ReleaseRequest, len(names))
	for i, n := range names {
		rs[i] = engine.ReleaseRequest{Name: n, Owner: owners[min(i, len(owners)-1)]}
	}
	return rs
}

package server

import (
	"context"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/expiring"
)

// endedWaits remembers, for the grant's ttl, the server's queue entry of
// each held-open wait that ended with a grant, by name and owner: a client
// that sends its own owner may take the grant back with an undo (its answer
// came too late, or never), which puts back in the queue the entry the
// grant took out; the wait is over, so the release handler leaves the
// queue again after such an undo (leaveEndedWait). At most maxEndedWaits
// are remembered; past that, an entry put back lapses at its heartbeat
// deadline.
type endedWaits = expiring.Map[holdKey, string]

// maxEndedWaits bounds endedWaits.
const maxEndedWaits = 10000

// waitEndedGranted records that the held-open wait with queue entry
// waiter ended with a grant of name to owner, for ttl (and holdGrace).
func (s *Server) waitEndedGranted(name, owner, waiter string, ttl time.Duration) {
	if waiter != "" {
		s.endedWaits.Put(holdKey{name, owner}, waiter, ttl+holdGrace)
	}
}

// leaveEndedWait takes out of name's queue the entry of the held-open wait
// whose grant to owner the undo r took back, if the server remembers one.
func (s *Server) leaveEndedWait(ctx context.Context, r engine.ReleaseRequest) {
	if waiter, ok := s.endedWaits.Take(holdKey{r.Name, r.Owner}); ok {
		s.leaveQueue(ctx, engine.AcquireRequest{Name: r.Name, Kind: r.Kind}, waiter)
	}
}

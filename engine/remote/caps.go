package remote

import (
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/server/api"
)

// The ttls a server's engine can keep (engine.Capabilities' MinTTL and
// TTLGranularity: etcd keeps whole seconds of at least 2 s) come with its
// GET /v1/info, which the Engine reads before it first uses a server (see
// vet) and in Ping. From then on Capabilities declares them, so that a
// Client fits its ttls before it asks, as it does on that engine itself,
// and its leases report the ttl the backend keeps. Before the first read
// (an Engine that was never pinged and has sent nothing yet) they are
// unknown: the server still fits the ttl it is asked for, and the lease
// reports the shorter ttl it asked for.

// ttlBounds are the ttl bounds a server reported.
type ttlBounds struct{ min, unit time.Duration }

// learn records the ttl bounds of info, a server's answer to GET /v1/info.
// The servers of one Engine share one backend (see pin), so the last
// answer read stands for all of them.
func (e *Engine) learn(info api.InfoResponse) {
	e.bounds.Store(&ttlBounds{
		min:  time.Duration(info.MinTTLMs) * time.Millisecond,
		unit: time.Duration(info.TTLGranularityMs) * time.Millisecond,
	})
	e.releaseOnce.Store(info.ReleaseOnce)
}

// Capabilities implements engine.Describer: fair waiting is offered (a
// server whose engine cannot do it answers not_supported, which the Client
// reports as an *distlock.UnsupportedError), and the ttl bounds are the
// server's engine's once a server's info was read (see learn).
func (e *Engine) Capabilities() engine.Capabilities {
	c := engine.Capabilities{Fair: true}
	if b := e.bounds.Load(); b != nil {
		c.MinTTL, c.TTLGranularity = b.min, b.unit
	}
	return c
}

// Package peers adapts distlock, its peers and the round-trip floors to one
// small interface, so that the harness drives every one of them through the
// same code: Acquire a name, hold it, Release it.
package peers

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Held is one granted lock.
type Held interface {
	// Release gives the lock up.
	Release(ctx context.Context) error
}

// Locker is one configured library instance (a client, its connections and
// its options), shared by every worker goroutine of a benchmark cell, or
// (Separate) a set of such instances, one per worker.
type Locker interface {
	// Acquire waits until name is granted or ctx ends (uncontended, that is
	// one attempt).
	Acquire(ctx context.Context, name string) (Held, error)
	// Close releases everything the Locker made: clients and connections.
	Close() error
}

// PerWorker is implemented by Lockers that give each worker goroutine its own
// instance, as separate processes would have (Separate).
type PerWorker interface {
	ForWorker(i int) Locker
}

// Inspector is implemented by Lockers that can say how many waiters the
// backend sees on a name (distlock: Client.Inspect's Waiters, one per
// subscribed connection).
type Inspector interface {
	Waiters(ctx context.Context, name string) (int, error)
}

// Kind says what a Variant is in a table.
type Kind string

// The kinds of Variant.
const (
	Subject Kind = "distlock" // the library under test
	Peer    Kind = "peer"     // another lock library
	Floor   Kind = "floor"    // the least any lock can cost
)

// Target is what a Variant is built for.
type Target struct {
	// Addrs are the Redis nodes: one for a single-node lock, five for
	// Redlock.
	Addrs []string
	// TTL is the lease time to live; 0 means each library's default (and
	// 10s for redislock, which has none).
	TTL time.Duration
	// Counter, when set, counts the client's requests to Redis.
	Counter *Counter
	// Workers is the number of goroutines that will use the Locker (for
	// Separate: that use each instance).
	Workers int
	// Etcd are the client URLs of the etcd clusters, by member count (1,
	// 3), for the etcd rows.
	Etcd map[int][]string
	// Postgres is the connection URL of the PostgreSQL server, for the
	// PostgreSQL rows (the schema is migrated by the harness).
	Postgres string
	// PoolSize bounds a PostgreSQL row's pgx pool (0: 4 + Workers).
	PoolSize int
}

// Variant is one row of a table: a library with one set of settings.
type Variant struct {
	// Name is the row label, unique within a scenario.
	Name string
	// Lib is the library ("distlock", "redsync", "redislock",
	// "rueidislock", or "floor").
	Lib string
	// Kind says whether the row is distlock, a peer or a floor.
	Kind Kind
	// Settings says in a few words what is configured.
	Settings string
	// New builds the Locker.
	New func(Target) (Locker, error)
	// Backend is what the row runs on: "" (Redis), "etcd" or "postgres".
	Backend string
	// Members is the size of the etcd cluster of an etcd row.
	Members int
}

// Counter counts the requests that instrumented clients send to Redis.
type Counter struct {
	requests atomic.Int64 // commands sent, each command of a pipeline counted
	calls    atomic.Int64 // client calls: a pipeline or a DoMulti counts once
	streams  atomic.Int64 // gRPC streams opened (etcd)
	methods  sync.Map     // gRPC method or stream → *atomic.Int64 of requests (etcd)
}

// addMethod counts one request under what (a gRPC method name).
func (c *Counter) addMethod(what string) {
	v, ok := c.methods.Load(what)
	if !ok {
		v, _ = c.methods.LoadOrStore(what, new(atomic.Int64))
	}
	v.(*atomic.Int64).Add(1)
}

// ByMethod returns the requests counted so far by gRPC method (etcd rows:
// a unary call, or a message sent on a stream of that method), nil when
// none was.
func (c *Counter) ByMethod() map[string]int64 {
	var out map[string]int64
	c.methods.Range(func(k, v any) bool {
		if out == nil {
			out = map[string]int64{}
		}
		out[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

// Streams returns how many gRPC streams (etcd watches, lease keepalives)
// the instrumented etcd clients opened so far.
func (c *Counter) Streams() int64 { return c.streams.Load() }

func (c *Counter) add(requests int) {
	if c == nil {
		return
	}
	c.requests.Add(int64(requests))
	c.calls.Add(1)
}

// Requests returns how many commands were sent so far.
func (c *Counter) Requests() int64 { return c.requests.Load() }

// Calls returns how many client calls were made so far: a pipeline (go-redis)
// or a DoMulti (rueidis) counts once. rueidis also pipelines concurrent Do
// calls on one connection, so for rueidis it is an upper bound of the round
// trips.
func (c *Counter) Calls() int64 { return c.calls.Load() }

// defaultTTL is the ttl of libraries that have no default (redislock).
const defaultTTL = 10 * time.Second

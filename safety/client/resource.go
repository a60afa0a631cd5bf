package client

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/engine/etcd/etcdfence"
	"github.com/distlock/distlock/engine/postgres/pgfence"
	"github.com/distlock/distlock/engine/zookeeper/zkfence"
	"github.com/distlock/distlock/fence"
)

// The protected resource lives on its own redis-server: per lock name a hash
// with a counter and a set (a comma-separated list, so that a
// read-modify-write can lose an element). The fenced copy is read and
// written through fence.Redis with the lease's token, the control copy with
// plain commands.
//
// The fenced read is itself a fenced command: it raises the resource's
// high-water mark to the reader's token before the reader computes its
// write, so that no older holder can write in between (docs/FENCING.md: the
// resource must learn of the new token first).

// DataKey, FenceKey and ControlKey name the resource keys of lock name.
func DataKey(name string) string    { return "res:{" + name + "}" }
func FenceKey(name string) string   { return "res:{" + name + "}:fence" }
func ControlKey(name string) string { return "ctl:{" + name + "}" }

// State is the value of one resource copy.
type State struct {
	Counter int64
	Set     string // comma-separated elements, in the order they were added
}

// Digest summarises a state for the history: "counter:fnv64 of the set".
func (s State) Digest() string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s.Set))
	return fmt.Sprintf("%d:%016x", s.Counter, h.Sum64())
}

// With returns s with one more element.
func (s State) With(elem string) State {
	if s.Set == "" {
		return State{Counter: s.Counter + 1, Set: elem}
	}
	return State{Counter: s.Counter + 1, Set: s.Set + "," + elem}
}

// Elements splits the set.
func (s State) Elements() []string {
	if s.Set == "" {
		return nil
	}
	return strings.Split(s.Set, ",")
}

// Store is a client's connection to the protected resource: the fenced copy
// and the unfenced control copy of one lock name's state.
type Store interface {
	// ReadFenced reads the fenced copy through the fence (raising its
	// mark to token).
	ReadFenced(ctx context.Context, token uint64, holder string) (State, error)
	// WriteFenced writes the fenced copy iff token is not stale.
	WriteFenced(ctx context.Context, token uint64, holder string, s State) error
	// ReadControl and WriteControl trust the lock alone.
	ReadControl(ctx context.Context) (State, error)
	WriteControl(ctx context.Context, s State) error
	Close() error
}

// NewStore connects to cfg's resource: a redis-server (cfg.Resource), or
// the etcd cluster or PostgreSQL database of cfg.Backend.
func NewStore(cfg Config) (Store, error) {
	switch cfg.Backend {
	case BackendEtcd:
		return newEtcdStore(cfg)
	case BackendPostgres:
		return newPGStore(cfg)
	case BackendZooKeeper:
		return newZKStore(cfg)
	}
	r := NewResource(cfg.Resource, cfg.Name)
	r.noFence = cfg.NoFence
	return r, nil
}

// Resource is a client's connection to the protected resource on Redis.
type Resource struct {
	rdb   *goredis.Client
	guard *fence.Redis
	name  string
	// noFence: the fenced copy is read and written without the fence
	// (Config.NoFence).
	noFence bool
}

// NewResource connects to the resource server at addr for lock name.
// go-redis does not retry resource commands: a retried write whose first
// attempt ran (reply lost to a reset) would report the second attempt's
// outcome, and the history would lie.
func NewResource(addr, name string) *Resource {
	opt := redisOptions(addr)
	opt.MaxRetries = -1
	rdb := goredis.NewClient(opt)
	return &Resource{rdb: rdb, guard: fence.NewRedis(rdb), name: name}
}

// Close closes the connections.
func (r *Resource) Close() error { return r.rdb.Close() }

// ReadFenced reads the fenced copy with a fenced HMGET (raising the mark).
func (r *Resource) ReadFenced(ctx context.Context, token uint64, holder string) (State, error) {
	k := DataKey(r.name)
	if r.noFence {
		return r.read(ctx, k)
	}
	reply, err := r.guard.Exec(ctx, FenceKey(r.name), token, holder, []string{k}, "HMGET", k, "counter", "set")
	if err != nil {
		return State{}, err
	}
	return parseState(reply)
}

// WriteFenced writes the fenced copy iff token is not stale.
func (r *Resource) WriteFenced(ctx context.Context, token uint64, holder string, s State) error {
	k := DataKey(r.name)
	if r.noFence {
		return r.write(ctx, k, s)
	}
	_, err := r.guard.Exec(ctx, FenceKey(r.name), token, holder, []string{k}, "HSET", k, "counter", s.Counter, "set", s.Set)
	return err
}

// ReadControl reads the control copy.
func (r *Resource) ReadControl(ctx context.Context) (State, error) {
	return r.read(ctx, ControlKey(r.name))
}

// WriteControl writes the control copy, trusting the lock alone.
func (r *Resource) WriteControl(ctx context.Context, s State) error {
	return r.write(ctx, ControlKey(r.name), s)
}

// read and write are the plain commands on copy key.
func (r *Resource) read(ctx context.Context, key string) (State, error) {
	vals, err := r.rdb.HMGet(ctx, key, "counter", "set").Result()
	if err != nil {
		return State{}, err
	}
	return parseState(vals)
}

func (r *Resource) write(ctx context.Context, key string, s State) error {
	return r.rdb.HSet(ctx, key, "counter", s.Counter, "set", s.Set).Err()
}

// ReadFinal reads both copies with plain commands (after the run).
func ReadFinal(ctx context.Context, rdb *goredis.Client, name string) (fenced, control State, err error) {
	f, err1 := rdb.HMGet(ctx, DataKey(name), "counter", "set").Result()
	c, err2 := rdb.HMGet(ctx, ControlKey(name), "counter", "set").Result()
	if err := errors.Join(err1, err2); err != nil {
		return State{}, State{}, err
	}
	if fenced, err = parseState(f); err != nil {
		return
	}
	control, err = parseState(c)
	return
}

func parseState(reply any) (State, error) {
	vals, ok := reply.([]any)
	if !ok || len(vals) != 2 {
		return State{}, fmt.Errorf("resource: unexpected reply %#v", reply)
	}
	var s State
	if v, ok := vals[0].(string); ok && v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return State{}, fmt.Errorf("resource: counter %q: %w", v, err)
		}
		s.Counter = n
	}
	if v, ok := vals[1].(string); ok {
		s.Set = v
	}
	return s, nil
}

// applyResult classifies a resource call's error.
func applyResult(err error) string {
	switch {
	case err == nil:
		return "accepted"
	case errors.Is(err, fence.ErrStale), errors.Is(err, etcdfence.ErrStale), errors.Is(err, pgfence.ErrStale), errors.Is(err, zkfence.ErrStale):
		return "rejected"
	}
	return "unknown"
}

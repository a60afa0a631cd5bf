// Package redis is the lock engine for one Redis deployment (standalone,
// Sentinel-managed or Cluster) through a go-redis v9 UniversalClient.
//
// Every operation is one Lua script run with EVALSHA (falling back to EVAL
// when the server does not have it cached), and every key a script touches
// is passed in KEYS and shares the lock's hash tag, so the scripts are legal
// on Cluster:
//
//	distlock:{NAME}        the lock: one string, "<token> <owner>" for one
//	                       hold of a one-off owner without metadata, else
//	                       JSON of owner, holds, token, metadata, the ids
//	                       of its last acquire and release, and the
//	                       waiters mark (see value.go)
//	distlock:{NAME}:fence  the fencing high-water, with a long time to live
//
// with the waiter queue's keys (scripts/queue.lua) and a shared lock's
// (shared.go). A name is one kind at a time: the acquire script refuses a
// mutex while the name's shared lock has a live holder or a live queued
// waiter (it reads the holders' key, distlock:{NAME}:sh, and the waiters'
// deadlines, distlock:{NAME}:sqd, in the EXISTS it runs anyway), and the
// shared acquire refuses a shared lock while the mutex is held or live
// waiters queue for it (distlock:{NAME}:qd), both with the memory engine's
// *engine.ArgumentError (engine.KindError): queued waiters bind a name to
// their kind, as holders do.
//
// A release publishes a wake-up on the channel distlock:{NAME} when a
// waiting acquire found the lock held during the grant (it marks the lock;
// see engine.AcquireRequest.Waiting), so an uncontended lock costs no
// PUBLISH. Waiters of one Engine share one subscription connection, and
// each name is subscribed once however many goroutines wait for it. On
// Redis Cluster (a go-redis ClusterClient) wake-ups use sharded pub/sub
// (Redis 7.0 and later): SPUBLISH on the master of the lock's slot, and one
// SSUBSCRIBE connection per master that serves a waited-for name; a
// channel whose slot moves, or whose master stays unreachable, is
// subscribed again where the cluster serves it now. WithClassicPubSub
// turns that off.
//
// Acquire and Release are auto-pipelined: with fewer than WithMaxInflight
// round trips in flight, a call is sent at once on its own; beyond that,
// calls wait and go together in one pipeline as soon as a round trip ends
// (see pipeline.go).
//
// The package name clashes with go-redis's; import it under another name:
//
//	import redisengine "github.com/distlock/distlock/engine/redis"
package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/engine"
)

// DefaultPrefix is the key prefix used unless WithPrefix says otherwise.
const DefaultPrefix = "distlock:"

// DefaultFenceTTL is how long a name's fencing high-water is kept after it
// was seeded from the server clock unless WithFenceTTL says otherwise.
const DefaultFenceTTL = 7 * 24 * time.Hour

// Engine is the lock engine for one Redis deployment.
type Engine struct {
	client    goredis.UniversalClient
	prefix    string
	fenceTTL  time.Duration
	fenceMS   string // fenceTTL in milliseconds, as sent
	fenceArg  any    // fenceMS, boxed once for the acquire script's arguments
	addr      string
	watch     *watcher
	batch     *batcher               // auto-pipelines Acquire and Release
	sharded   *goredis.ClusterClient // set when wake-ups use sharded pub/sub
	classic   bool                   // WithClassicPubSub
	publish   string                 // PUBLISH or SPUBLISH
	inflight  int                    // WithMaxInflight
	noFloor   string                 // "0" with WithoutTimeFloor, else ""
	contended contendedNames         // names whose scripts send every key at once
	id        string                 // random, names this engine in release ids
	releases  atomic.Uint64          // numbers this engine's releases
	owned     bool                   // WithOwnedClient: Close closes client
}

var _ engine.Engine = (*Engine)(nil)
var _ engine.ForceReleaser = (*Engine)(nil)
var _ engine.OnceReleaser = (*Engine)(nil)
var _ engine.FenceRaiser = (*Engine)(nil)
var _ engine.Queuer = (*Engine)(nil)

// Option configures an Engine.
type Option func(*Engine)

// WithOwnedClient makes the engine own its client: Close closes it too
// (an engine opened by URL owns the client it made).
func WithOwnedClient() Option { return func(e *Engine) { e.owned = true } }

// WithPrefix sets the prefix of every key and channel (default "distlock:").
// It must not contain '{' or '}': the lock name is the hash tag.
func WithPrefix(prefix string) Option { return func(e *Engine) { e.prefix = prefix } }

// WithFenceTTL sets how long a name's fencing high-water key lives after it
// was made or raised by a quorum's phase 2 (default 7 days); grants mint
// above it meanwhile. When it is gone, the next grant makes it again from
// the server clock; see docs/FENCING.md.
func WithFenceTTL(d time.Duration) Option { return func(e *Engine) { e.fenceTTL = d } }

// WithMaxInflight sets how many Acquire and Release round trips the engine
// keeps in flight at once (default DefaultMaxInflight). A call that finds
// fewer in flight is sent at once, alone; calls beyond the limit wait and
// are sent together in one pipeline (one write, one read) as soon as a round
// trip ends, which spares a busy Redis a syscall pair per command. n < 1
// turns this off: every call is its own round trip.
func WithMaxInflight(n int) Option { return func(e *Engine) { e.inflight = n } }

// WithClassicPubSub makes wake-ups on Redis Cluster use classic pub/sub
// (PUBLISH, which the cluster bus forwards to every node) instead of sharded
// pub/sub (SPUBLISH and SSUBSCRIBE, Redis 7.0 and later, served by the
// master of the lock's slot). For clusters older than Redis 7.0. Every
// client of one cluster must make the same choice: a waiter subscribed one
// way does not hear a release published the other way (it then wakes at the
// holder's expiry). Without Cluster it changes nothing.
func WithClassicPubSub() Option { return func(e *Engine) { e.classic = true } }

// WithoutTimeFloor turns off the time floor of the fencing tokens. By
// default every new token (of a mutex grant, and of a semaphore's or an
// RWMutex's) is max(high-water + 1, server clock in µs), which keeps the
// order of tokens across a failover to a replica that had not received the
// last grants (Sentinel, a Cluster with replicas) and across a restart
// from an AOF or RDB file that lags: the tokens the old master handed out
// were never ahead of its clock (a quorum's proposed tokens by at most
// engine.MaxProposalLead), so the new master's are above them as long as
// its clock is not behind the old one's by more than the time between the
// grants (less that lead). WithoutTimeFloor mints high-water + 1 instead (the
// high-water is seeded from the server clock only when it is missing): a
// TIME and a SET fewer per grant, and tokens independent of the clock
// while the high-water key lives. What it gives up: a high-water that
// comes back stale rather than missing makes the next grants repeat
// tokens already handed out, below the one a stale holder still writes
// with, so fenced resources refuse the new holder and accept the stale
// one. Use it only on a standalone server that persists synchronously
// (appendfsync always) or persists nothing, never with replicas. The
// nodes of a quorum (engine/quorum) count up from the same high-water
// after phase 2 when they mint without the floor, so their phase-1 tokens
// agree and phase 2 is skipped; with the floor they mint the token the
// quorum proposes (engine.AcquireRequest.TokenProposal) when it is above
// the high-water and at most engine.MaxProposalLead ahead of the clock,
// and agree as often. Without the floor a proposal is ignored. See
// docs/FENCING.md.
func WithoutTimeFloor() Option { return func(e *Engine) { e.noFloor = "0" } }

// floorArg is the scripts' time floor argument for r (mint.lua): "0" with
// WithoutTimeFloor, r's proposed token when it has one, else "".
func (e *Engine) floorArg(r engine.AcquireRequest) string {
	switch {
	case e.noFloor != "":
		return e.noFloor
	case r.TokenProposal != 0:
		return strconv.FormatUint(r.TokenProposal, 10)
	}
	return ""
}

// WithTimeFloor is the default: it only undoes an earlier
// WithoutTimeFloor.
//
// Deprecated: every token is at least the server clock in µs unless
// WithoutTimeFloor says otherwise.
func WithTimeFloor() Option { return func(e *Engine) { e.noFloor = "" } }

// ErrNoContextTimeout is New's error for a go-redis client built without
// ContextTimeoutEnabled: such a client bounds a command by its own read and
// write timeouts (3s by default, each retry anew), not by the caller's
// context, so a wait budget or a lease's renewal deadline would be
// overrun by seconds.
var ErrNoContextTimeout = errors.New("distlock/engine/redis: the go-redis client ignores context deadlines: " +
	"build it with ContextTimeoutEnabled: true (in Options, FailoverOptions, ClusterOptions or UniversalOptions)")

// New returns an engine that uses client. The client stays the caller's:
// Close does not close it (unless WithOwnedClient).
//
// The client must honour context deadlines: New refuses a *Client,
// *ClusterClient or *Ring built without ContextTimeoutEnabled with
// ErrNoContextTimeout (a Sentinel-managed failover client is a *Client,
// and NewUniversalClient returns one of these). A UniversalClient of
// another type cannot be checked; it is taken as it is.
func New(client goredis.UniversalClient, opts ...Option) (*Engine, error) {
	if client == nil {
		return nil, errors.New("distlock/engine/redis: nil client")
	}
	if !honoursDeadlines(client) {
		return nil, ErrNoContextTimeout
	}
	e := &Engine{client: client, prefix: DefaultPrefix, fenceTTL: DefaultFenceTTL, inflight: DefaultMaxInflight}
	for _, o := range opts {
		o(e)
	}
	if strings.ContainsAny(e.prefix, "{}") {
		return nil, fmt.Errorf("distlock/engine/redis: prefix %q must not contain '{' or '}'", e.prefix)
	}
	if e.fenceTTL < time.Millisecond {
		return nil, fmt.Errorf("distlock/engine/redis: fence ttl %v is too short", e.fenceTTL)
	}
	e.fenceMS = ms(e.fenceTTL)
	e.fenceArg = e.fenceMS
	var b [8]byte
	_, _ = rand.Read(b[:])
	e.id = hex.EncodeToString(b[:])
	switch c := client.(type) {
	case *goredis.Client:
		e.addr = c.Options().Addr
	case *goredis.ClusterClient:
		e.addr = "cluster " + strings.Join(c.Options().Addrs, ",")
	}
	e.publish = "PUBLISH"
	if cc, ok := client.(*goredis.ClusterClient); ok && !e.classic {
		e.sharded, e.publish = cc, "SPUBLISH"
	}
	e.watch = newWatcher(e)
	e.batch = newBatcher(client, e.inflight)
	return e, nil
}

// honoursDeadlines reports whether client bounds its commands by their
// contexts' deadlines (ContextTimeoutEnabled), as far as its type tells.
func honoursDeadlines(client goredis.UniversalClient) bool {
	switch c := client.(type) {
	case *goredis.Client:
		return c.Options().ContextTimeoutEnabled
	case *goredis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	case *goredis.Ring:
		return c.Options().ContextTimeoutEnabled
	}
	return true
}

// Permanent implements engine.PermanentClassifier: no retry mends a command
// Redis does not know (EVALSHA or EVAL renamed or disabled, a proxy that
// refuses scripts), an ACL refusal (NOPERM) or a failed authentication
// (NOAUTH, WRONGPASS), nor a key of another type at a lock's place
// (WRONGTYPE: see ForeignKeyError, which the calls that name one lock
// return for it). Everything else (a refused connection, a timeout,
// LOADING, READONLY, CLUSTERDOWN, TRYAGAIN during a failover) is transient.
func (e *Engine) Permanent(err error) bool {
	return goredis.IsPermissionError(err) || goredis.IsAuthError(err) || isWrongType(err) ||
		goredis.HasErrorPrefix(err, "unknown command") || goredis.HasErrorPrefix(err, "unknown subcommand")
}

// Ping sends PING: a check that the server answers, and a warm connection
// for the calls that follow (distlock's CLI pings a quorum's nodes so).
func (e *Engine) Ping(ctx context.Context) error { return e.client.Ping(ctx).Err() }

// String names the engine by its address, for error messages.
func (e *Engine) String() string {
	if e.addr != "" {
		return "redis " + e.addr
	}
	return "redis"
}

// lockKey, fenceKey and channel name the keys of one lock.
func (e *Engine) lockKey(name string) string  { return e.prefix + "{" + name + "}" }
func (e *Engine) fenceKey(name string) string { return e.prefix + "{" + name + "}:fence" }
func (e *Engine) channel(name string) string  { return e.prefix + "{" + name + "}" }

// wakeChannel is the channel of the wake-ups addressed to this engine's
// waiters for name: a release wakes the head of the queue with one message
// that reaches its engine alone, not every engine that waits for the name.
// It has the name's hash tag (the lock's slot, for SPUBLISH in a script).
func (e *Engine) wakeChannel(name string) string { return e.channel(name) + ":w:" + e.id }
func (e *Engine) queueKey(name string) string    { return e.prefix + "{" + name + "}:q" }

// takenKey is the name's taken-over marks (scripts/taken.lua).
func (e *Engine) takenKey(name string) string { return e.prefix + "{" + name + "}:t" }

// keys returns every key of one lock, as the scripts take them: the lock,
// its waiter queue (the queue, the heartbeat deadlines, the queue's state),
// and its fencing high-water (the acquire script's alone: the others take
// the first four).
func (e *Engine) keys(name string) []string {
	// One allocation for the five names (substrings of one string) and
	// one for the slice: this runs on every acquire and release.
	p := e.prefix
	all := p + "{" + name + "}" + p + "{" + name + "}:q" + p + "{" + name + "}:qd" +
		p + "{" + name + "}:qs" + p + "{" + name + "}:fence"
	n := len(p) + len(name) + 2
	k := make([]string, 5)
	for i, extra := range [5]int{0, 2, 3, 3, 6} {
		k[i], all = all[:n+extra], all[n+extra:]
	}
	return k
}

// acquireMutex is Acquire for a mutex.
// A name with live holders or queued waiters of a shared lock is refused
// as the memory engine refuses it (engine.KindError).
func (e *Engine) acquireMutex(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	res, err := e.runAcquire(ctx, r)
	if err != nil {
		return engine.Grant{}, sharedError(err, r.Name, 0, 0, 0)
	}
	if t, ok := res.(string); ok { // a first grant: its token
		token, err := strconv.ParseUint(t, 10, 64) // parseToken(t), without boxing t
		if err != nil {
			return engine.Grant{}, err
		}
		return engine.Grant{Acquired: true, Token: token, Count: 1}, nil
	}
	a, ok := res.([]any)
	if !ok || (len(a) != 3 && len(a) != 6) {
		return engine.Grant{}, fmt.Errorf("acquire: unexpected reply %v", res)
	}
	if a[0] == int64(1) { // re-entered
		token, err := parseToken(a[1])
		if err != nil {
			return engine.Grant{}, err
		}
		count, _ := a[2].(int64)
		return engine.Grant{Acquired: true, Token: token, Count: int(count)}, nil
	}
	holder, _ := a[1].(string)
	pttl, _ := a[2].(int64)
	g := engine.Grant{Holder: holder, HolderTTL: time.Duration(pttl) * time.Millisecond}
	if pttl < 0 {
		g.HolderTTL = -1
	}
	if len(a) == 6 {
		g.Queued, g.Head, g.Reserved = a[3] == int64(1), a[4] == int64(1), a[5] == int64(1)
	}
	return g, nil
}

// The queue's timing (engine.ReserveTTL, engine.StarvationBound) in
// microseconds, as the acquire script takes it.
var (
	queueReserveUS = strconv.FormatInt(engine.ReserveTTL.Microseconds(), 10)
	queueStarveUS  = strconv.FormatInt(engine.StarvationBound.Microseconds(), 10)
)

// flag renders b as a script argument: "1" for true, "" for false.
func flag(b bool) string {
	if b {
		return "1"
	}
	return ""
}

// Extend implements engine.Engine: the extensions go in one pipeline. A
// key distlock did not write at a lock's place is a *ForeignKeyError.
func (e *Engine) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	run := func(p goredis.Pipeliner) []*goredis.Cmd {
		cmds := make([]*goredis.Cmd, len(rs))
		for i, r := range rs {
			if r.Kind.Shared() {
				cmds[i] = e.extendShared(ctx, p, r)
				continue
			}
			if r.Waiter {
				cmds[i] = heartbeatScript.EvalSha(ctx, p, e.keys(r.Name)[:4], r.Owner, ms(r.TTL))
				continue
			}
			cmds[i] = extendScript.EvalSha(ctx, p, []string{e.lockKey(r.Name), e.takenKey(r.Name)}, r.Owner, ms(r.TTL), tokenArg(r.Token))
		}
		return cmds
	}
	cmds, err := pipeline(ctx, e.client, []*script{extendScript, heartbeatScript, sharedExtendScript}, run)
	if err != nil && allFailed(cmds) {
		if len(rs) == 1 {
			err = e.foreign(err, rs[0].Name)
		}
		return nil, err
	}
	out := make([]engine.ExtendResult, len(rs))
	for i, c := range cmds {
		res, err := c.Slice()
		if err != nil {
			out[i].Err = e.foreign(err, rs[i].Name)
			continue
		}
		switch {
		case rs[i].Waiter && res[0] == int64(1) && len(res) == 2:
			out[i] = engine.ExtendResult{Status: engine.Extended, Wake: res[1] == int64(1)}
		case rs[i].Waiter:
			out[i].Status = engine.Missing
		case res[0] == int64(1):
			out[i].Status = engine.Extended
			out[i].Token, out[i].Err = parseToken(res[1])
		case res[0] == int64(0):
			out[i].Status = engine.Missing
		default:
			out[i].Status = engine.HeldByOther
			if len(res) == 2 { // a newer grant of the owner: its token
				out[i].Token, _ = parseToken(res[1])
			}
		}
	}
	return out, nil
}

// releaseOnceMutex is ReleaseOnce for a mutex: the lock records the id of
// its last release, and a release with that id again drops nothing more.
func (e *Engine) releaseOnceMutex(ctx context.Context, r engine.ReleaseRequest, id string) (engine.ReleaseResult, error) {
	// The wake-up channel has the lock key's name.
	n, err := e.runRelease(ctx, r, id)
	if err != nil {
		return engine.ReleaseResult{}, err
	}
	return e.unlessTaken(ctx, r, releaseResult(n))
}

// unlessTaken turns a release's NotHeld into NotOwner when a force-release
// freed the owner's hold and its lease has not ended yet (taken.lua's mark):
// taken over, as a renewal is told. One more script, on that path only
// (the release scripts themselves stay as they are on the common one).
func (e *Engine) unlessTaken(ctx context.Context, r engine.ReleaseRequest, res engine.ReleaseResult) (engine.ReleaseResult, error) {
	if res.Status != engine.NotHeld {
		return res, nil
	}
	told, err := e.batch.run(ctx, toldScript, []string{e.takenKey(r.Name)}, r.Owner).Int64()
	if err != nil {
		return engine.ReleaseResult{}, err
	}
	if told == 1 {
		res.Status = engine.NotOwner
	}
	return res, nil
}

// releaseResult reads the release script's answer n.
func releaseResult(n int64) engine.ReleaseResult {
	switch {
	case n >= 0:
		return engine.ReleaseResult{Status: engine.Released, Remaining: int(n)}
	case n == -1:
		return engine.ReleaseResult{Status: engine.NotHeld}
	}
	return engine.ReleaseResult{Status: engine.NotOwner}
}

// Capabilities implements engine.Describer: fair waiting is supported.
func (e *Engine) Capabilities() engine.Capabilities { return engine.Capabilities{Fair: true} }

// Leave implements engine.Queuer: every kind, dispatched once on r.Kind
// (engine.LeaveByKind) to leaveMutex or leaveShared, one script each.
func (e *Engine) Leave(ctx context.Context, r engine.LeaveRequest) error {
	return engine.LeaveByKind(ctx, r, e.leaveMutex, e.leaveShared)
}

// leaveMutex is Leave's mutex path: the queue's leave script.
func (e *Engine) leaveMutex(ctx context.Context, r engine.LeaveRequest) error {
	return e.batch.run(ctx, leaveScript, e.keys(r.Name)[:4], r.Waiter).Err()
}

// RaiseFence implements engine.FenceRaiser, dispatched once on r.Kind
// (engine.RaiseByKind), within engine.CheckRaise: a refused raise is an
// *engine.ArgumentError and changes nothing.
func (e *Engine) RaiseFence(ctx context.Context, r engine.RaiseRequest) (bool, error) {
	if r.Token > engine.MaxToken {
		return false, engine.RaiseAboveMaxError(r.Token)
	}
	return engine.RaiseByKind(ctx, r, e.raiseMutex, e.raiseShared)
}

// raiseMutex is RaiseFence's mutex path: one script.
func (e *Engine) raiseMutex(ctx context.Context, r engine.RaiseRequest) (bool, error) {
	n, err := raiseFenceScript.Run(ctx, e.client,
		[]string{e.lockKey(r.Name), e.fenceKey(r.Name)},
		r.Owner, strconv.FormatUint(r.Token, 10), e.fenceMS, engine.MaxRaiseAhead).Int64()
	return n == 1, raiseError(err, r.Token)
}

// Inspect implements engine.Engine: one pipelined round trip reads the
// mutex's keys and runs the shared inspect script, and engine.Describe
// picks the view. A name whose shared keys are no distlock shared lock's
// (a WRONGTYPE reply) is described as a mutex; a lock key distlock did not
// write is a *ForeignKeyError; every other error, a reply error too
// (WRONGPASS, a database the server does not have), is returned.
func (e *Engine) Inspect(ctx context.Context, name string) (engine.Info, error) {
	info, err := e.inspect(ctx, name)
	return info, e.foreign(err, name)
}

// inspect is Inspect, its foreign key's error not yet typed.
func (e *Engine) inspect(ctx context.Context, name string) (engine.Info, error) {
	var r lockReads
	var sh *goredis.Cmd
	_, err := e.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		r = e.readLock(ctx, p, name)
		sh = e.readShared(ctx, p, name)
		return nil
	})
	if err := inspectError(err, r.value, r.pttl, r.hw, r.subs, r.queued, sh); err != nil {
		return engine.Info{}, err
	}
	info, _, err := r.info(e, name)
	if err == nil {
		err = e.countClassicSubscribers(ctx, &info)
	}
	if err != nil {
		return engine.Info{}, err
	}
	shared := engine.Info{Name: name}
	if res, serr := sh.Slice(); serr == nil {
		if shared, err = sharedInfo(name, res); err != nil {
			return engine.Info{}, err
		}
	} else if serr = inspectError(serr); serr != nil {
		return engine.Info{}, serr
	}
	return engine.Describe(info, shared), nil
}

// inspectError returns the first error of Inspect's pipeline (err, the
// round trip's, then each command's) that is neither a missing key
// (goredis.Nil) nor a key of another type (isWrongType), or nil.
func inspectError(err error, cmds ...goredis.Cmder) error {
	errs := []error{err}
	for _, c := range cmds {
		errs = append(errs, c.Err())
	}
	for _, e := range errs {
		if e != nil && !errors.Is(e, goredis.Nil) && !isWrongType(e) {
			return e
		}
	}
	return nil
}

// isWrongType reports whether err is Redis's WRONGTYPE reply: a key of
// another type at a lock's place, which is not a distlock lock. Every
// other reply error is the server's refusal of the call.
func isWrongType(err error) bool {
	return goredis.HasErrorPrefix(err, "WRONGTYPE")
}

// countClassicSubscribers sets info.Subscribers with classic pub/sub on
// Cluster, where each node knows only its own subscribers: the sum over
// every node.
func (e *Engine) countClassicSubscribers(ctx context.Context, info *engine.Info) error {
	cc, ok := e.client.(*goredis.ClusterClient)
	if !ok || e.sharded != nil {
		return nil
	}
	var mu sync.Mutex
	info.Subscribers = 0
	return cc.ForEachShard(ctx, func(ctx context.Context, c *goredis.Client) error {
		n, err := c.PubSubNumSub(ctx, e.channel(info.Name)).Result()
		mu.Lock()
		info.Subscribers += int(n[e.channel(info.Name)])
		mu.Unlock()
		return err
	})
}

// lockReads are the commands that read what Inspect reports of one lock.
type lockReads struct {
	value  *goredis.StringCmd
	pttl   *goredis.DurationCmd
	hw     *goredis.StringCmd
	subs   *goredis.MapStringIntCmd
	queued *goredis.Cmd
}

// liveWaitersSrc lists the queue's entries whose heartbeat deadline has not
// passed (expired ones stay in the queue until the next script on the lock
// drops them, and must not be counted): their count, then up to
// engine.MaxQueueListed of them in arrival order, each its id and the
// time since it entered the queue in µs. KEYS are the queue (arrival
// tickets), its deadlines and its state (see scripts/queue.lua); times are
// the server's. EVAL, not EVALSHA: Inspect is not on the lock path.
const liveWaitersSrc = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local out = {0}
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local d = redis.call('ZSCORE', KEYS[2], id)
  if d and tonumber(d) > now then
    out[1] = out[1] + 1
    if out[1] <= tonumber(ARGV[1]) then
      out[#out + 1] = id
      out[#out + 1] = now - tonumber(redis.call('HGET', KEYS[3], 'w:' .. id) or now)
    end
  end
end
return out`

// readLock queues on p the reads of the lock name.
func (e *Engine) readLock(ctx context.Context, p goredis.Pipeliner, name string) lockReads {
	return lockReads{
		value:  p.Get(ctx, e.lockKey(name)),
		pttl:   p.PTTL(ctx, e.lockKey(name)),
		hw:     p.Get(ctx, e.fenceKey(name)),
		subs:   e.numSub(ctx, p, name),
		queued: p.Eval(ctx, liveWaitersSrc, []string{e.queueKey(name), e.queueKey(name) + "d", e.queueKey(name) + "s"}, engine.MaxQueueListed),
	}
}

// numSub queues the count of the lock's wake-up subscribers: PUBSUB
// NUMSUB, or with sharded pub/sub PUBSUB SHARDNUMSUB sent to the master of
// the channel's slot, the only node that knows its subscribers. (Classic
// pub/sub on Cluster: see countClassicSubscribers.)
func (e *Engine) numSub(ctx context.Context, p goredis.Pipeliner, name string) *goredis.MapStringIntCmd {
	if e.sharded == nil {
		return p.PubSubNumSub(ctx, e.channel(name))
	}
	cmd := goredis.NewMapStringIntCmd(ctx, "pubsub", "shardnumsub", e.channel(name))
	cmd.SetFirstKeyPos(2)
	_ = p.Process(ctx, cmd)
	return cmd
}

// liveWaiters reads liveWaitersSrc's reply: the count of live waiters and
// the entries listed.
func liveWaiters(cmd *goredis.Cmd) (int, []engine.Waiter) {
	res, _ := cmd.Slice()
	if len(res) == 0 {
		return 0, nil
	}
	n, _ := res[0].(int64)
	var queue []engine.Waiter
	for i := 1; i+1 < len(res); i += 2 {
		id, _ := res[i].(string)
		us, _ := res[i+1].(int64)
		queue = append(queue, engine.Waiter{ID: id, Waited: time.Duration(us) * time.Microsecond})
	}
	return int(n), queue
}

// errNotALock: a string at a lock's key that distlock did not write.
var errNotALock = errors.New("not a distlock lock")

// ForeignKeyError is the error of a call on a lock whose place holds a key
// distlock did not write: a key of another type (Redis's WRONGTYPE reply)
// or a string that is no lock's value (as redis-cli SET 'distlock:{NAME}'
// garbage leaves). No retry mends it (Permanent: a wait for the lock ends
// with it at once); the key stays until it is deleted. distlock leaks lists
// such a key, and ForceRelease (distlock force-release NAME) deletes it.
type ForeignKeyError struct {
	Name string // the lock's name
	// Key is the key, or when Redis's reply does not say which of the
	// lock's keys it is, the pattern of them all (distlock:{NAME}*).
	Key string
	Err error // Redis's reply, or errNotALock's
}

// Error names the lock, its key and what Redis answered.
func (e *ForeignKeyError) Error() string {
	return fmt.Sprintf("lock %q: a key distlock did not write is at its place, %s: %v", e.Name, e.Key, e.Err)
}

// Unwrap returns Redis's reply.
func (e *ForeignKeyError) Unwrap() error { return e.Err }

// Permanent implements engine.Permanent: no retry mends a foreign key.
func (e *ForeignKeyError) Permanent() bool { return true }

// ForeignKey returns Key: the method by which code that does not link this
// package (distlock's light CLI build) tells the error.
func (e *ForeignKeyError) ForeignKey() string { return e.Key }

// foreign returns err as a *ForeignKeyError of the lock name when it says
// that a key at the lock's place is not distlock's (a WRONGTYPE reply,
// errNotALock), and err as it is otherwise.
func (e *Engine) foreign(err error, name string) error {
	var fk *ForeignKeyError
	if err == nil || errors.As(err, &fk) || !isWrongType(err) && !errors.Is(err, errNotALock) {
		return err
	}
	key := e.lockKey(name)
	if !errors.Is(err, errNotALock) && !strings.Contains(err.Error(), key+" holds no distlock lock") {
		key += "*" // a WRONGTYPE of Redis's own, on one of the lock's keys
	}
	return &ForeignKeyError{Name: name, Key: key, Err: err}
}

// info turns the replies into an Info; held is false when the lock is free.
// A key of another type (WRONGTYPE, a reply error) or a string distlock did
// not write (errNotALock) is an error.
func (r lockReads) info(e *Engine, name string) (info engine.Info, held bool, err error) {
	// Waiters: the queue's live entries, and nothing else (an observer's
	// subscription is counted in Subscribers).
	queued, queue := liveWaiters(r.queued)
	info = engine.Info{Name: name, Waiters: queued, Queue: queue, Subscribers: int(r.subs.Val()[e.channel(name)])}
	if v, err := r.hw.Result(); err == nil {
		info.HighWater, _ = strconv.ParseUint(v, 10, 64)
	}
	v, err := r.value.Result()
	if errors.Is(err, goredis.Nil) {
		return info, false, nil
	}
	if err != nil {
		return info, false, err
	}
	lv, ok := parseLockValue(v)
	if !ok {
		return info, false, fmt.Errorf("%w: %s", errNotALock, e.lockKey(name))
	}
	info.Held, info.Owner, info.Metadata, info.Count = true, lv.Owner, lv.Metadata, lv.Count
	info.Token = lv.token()
	info.TTL = r.pttl.Val()
	return info, true, nil
}

// Close implements engine.Engine: it ends the subscription connection,
// fails the Acquire and Release calls still queued for a pipeline with
// engine.ErrClosed, and waits for the pipelines in flight; with
// WithOwnedClient, it closes the client.
func (e *Engine) Close() error {
	e.watch.close()
	e.batch.close()
	if e.owned {
		return e.client.Close()
	}
	return nil
}

// releaseID returns an id unique to one Release call: a resent copy of the
// call's command carries the same id, so the script applies it once.
func (e *Engine) releaseID() string {
	var b [64]byte // one allocation, the string's
	return string(strconv.AppendUint(append(append(b[:0], e.id...), '-'), e.releases.Add(1), 10))
}

// ms renders a duration as whole milliseconds (at least 1) for PX/PEXPIRE.
func ms(d time.Duration) string {
	n := d.Milliseconds()
	if n < 1 {
		n = 1
	}
	return strconv.FormatInt(n, 10)
}

// allFailed reports whether every command of a pipeline failed (the round
// trip itself failed, rather than some scripts).
func allFailed(cmds []*goredis.Cmd) bool {
	for _, c := range cmds {
		if c.Err() == nil {
			return false
		}
	}
	return true
}

func parseToken(v any) (uint64, error) {
	switch t := v.(type) {
	case string:
		return strconv.ParseUint(t, 10, 64)
	case int64:
		if t >= 0 {
			return uint64(t), nil
		}
	}
	return 0, fmt.Errorf("fencing token: unexpected reply %v", v)
}

// tokenArg is a grant token as the scripts take it (engine.ExtendRequest.Token,
// engine.ReleaseRequest.Token): "" for 0, none.
func tokenArg(token uint64) string {
	if token == 0 {
		return ""
	}
	return strconv.FormatUint(token, 10)
}

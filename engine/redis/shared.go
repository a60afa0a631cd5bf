package redis

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/engine"
)

// Shared locks (engine.Sharer): semaphores and reader-writer locks, with
// the semantics of the memory engine's. A shared lock of NAME has keys of
// its own beside the mutex's, all with the hash tag {NAME} (one Cluster
// slot), and every script takes them all (scripts/shared.lua):
//
//	distlock:{NAME}:s     HASH kind, limit, permits held, and each
//	                      holder's weight, holds, token, metadata, and
//	                      attempt and release ids
//	distlock:{NAME}:sh    ZSET holder -> lease deadline (server µs)
//	distlock:{NAME}:sq    ZSET waiter -> arrival ticket
//	distlock:{NAME}:sqd   ZSET waiter -> heartbeat deadline (server µs)
//	distlock:{NAME}:sqs   HASH the last ticket, each waiter's weight
//
// with the mutex's distlock:{NAME} (a shared lock is refused while the
// name is held as a mutex; the wake-up channel has its name) and
// distlock:{NAME}:fence (the name's one fencing counter). The mutex's
// acquire script reads :sh, :sqd and :s in turn: a mutex is refused while
// the shared lock has a live holder or a live queued waiter; the shared
// acquire also reads the mutex's queue (:qd, :qs): a shared lock is
// refused while live waiters queue for the mutex. Each holder's
// lease ends on its own in server time: every script first drops the
// holders whose deadline passed, so a holder that crashed frees exactly
// its permits after its ttl, without any client's clock. The lock and its
// holders' deadlines expire together, between half the fence ttl and the
// fence ttl after the lock's last use (and never before a deadline), like
// the high-water: refreshed only when half of it has gone by, so the
// uncontended path sets no expiry. The queue's keys expire with the last
// heartbeat deadline.
//
// The queue is strict FIFO with weights: a request is granted only when
// its weight fits and nobody is queued ahead of it. Only the head is woken
// ('w:<waiter id>' on the lock's channel), and only when it fits: after a
// release, a grant (the next head: readers queued together are granted in
// a chain), a new limit, a waiter that left, or a refusal that found the
// head fitting (a head that died). A heartbeat answers Wake when the
// waiter heads the queue and fits. Nothing else is published: every waiter
// of a shared lock is in its queue (as the mutex's release of a lock that
// nobody waited for, a release that wakes no head sends no message).
//
// Where this differs from the memory engine: a refusal names as Grant.Holder
// the holder whose lease ends first (the one HolderTTL is about; memory
// names the oldest grant), which needs no scan of the holders; a release
// that wakes no head publishes nothing, so plain subscribers (Subscribe)
// are not told of shared releases.

var (
	//go:embed scripts/shared.lua
	sharedSrc string
	//go:embed scripts/shared_acquire.lua
	sharedAcquireSrc string
	//go:embed scripts/shared_release.lua
	sharedReleaseSrc string
	//go:embed scripts/shared_extend.lua
	sharedExtendSrc string
	//go:embed scripts/shared_leave.lua
	sharedLeaveSrc string
	//go:embed scripts/shared_set_limit.lua
	sharedSetLimitSrc string
	//go:embed scripts/shared_inspect.lua
	sharedInspectSrc string
	//go:embed scripts/shared_raise_fence.lua
	sharedRaiseFenceSrc string
)

var (
	// sharedLib is shared.lua with the files it uses (proposal.lua,
	// highwater.lua, requeue.lua) before it.
	sharedLib = proposalSrc + highWaterSrc + requeueSrc + sharedSrc

	sharedAcquireScript    = newScript(sharedLib + sharedAcquireSrc)
	sharedReleaseScript    = newScript(sharedLib + include(sharedReleaseSrc, "releaseids.lua"))
	sharedExtendScript     = newScript(sharedLib + takenSrc + sharedExtendSrc)
	sharedLeaveScript      = newScript(sharedLib + sharedLeaveSrc)
	sharedSetLimitScript   = newScript(sharedLib + sharedSetLimitSrc)
	sharedInspectScript    = newScript(sharedLib + sharedInspectSrc)
	sharedRaiseFenceScript = newScript(sharedLib + sharedRaiseFenceSrc)
)

var _ engine.Sharer = (*Engine)(nil)

// sharedKeys returns the keys of the shared lock name, as every shared_*.lua
// script takes them (scripts/shared.lua), in one allocation for the names
// (substrings of one string) and one for the slice.
func (e *Engine) sharedKeys(name string) []string {
	p, n := e.prefix, name
	base := len(p) + len(n) + 2
	all := p + "{" + n + "}" + p + "{" + n + "}:s" + p + "{" + n + "}:sh" + p + "{" + n + "}:sq" +
		p + "{" + n + "}:sqd" + p + "{" + n + "}:sqs" + p + "{" + n + "}:fence"
	k := make([]string, 7, 9) // room for sharedTakenKeys' eighth, sharedAcquireKeys' two
	for i, extra := range [7]int{0, 2, 3, 3, 4, 4, 6} {
		k[i], all = all[:base+extra], all[base+extra:]
	}
	return k
}

// sharedTakenKeys returns sharedKeys and the name's taken-over marks
// (takenKey), as shared_extend.lua and shared_force_release.lua take them.
func (e *Engine) sharedTakenKeys(name string) []string {
	return append(e.sharedKeys(name), e.takenKey(name))
}

// sharedAcquireKeys returns sharedKeys and the mutex's queue's heartbeat
// deadlines and state, as shared_acquire.lua and shared_set_limit.lua take
// them: live waiters queued for the mutex refuse a shared lock.
func (e *Engine) sharedAcquireKeys(name string) []string {
	p := e.prefix + "{" + name + "}"
	return append(e.sharedKeys(name), p+keySuffixes[2], p+keySuffixes[3])
}

// runShared runs a shared lock's script through the engine's batcher, with
// the arguments every one takes first (the fence ttl, the publish command).
func (e *Engine) runShared(ctx context.Context, s *script, name string, args ...any) *goredis.Cmd {
	return e.batch.run(ctx, s, e.sharedKeys(name), append([]any{e.fenceMS, e.publish}, args...)...)
}

// acquireShared is Acquire for a shared kind.
func (e *Engine) acquireShared(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	waiterTTL, wake := "", ""
	if r.Waiter != "" {
		waiterTTL, wake = ms(r.WaiterTTL), e.wakeChannel(r.Name)
	}
	res, err := e.batch.run(ctx, sharedAcquireScript, e.sharedAcquireKeys(r.Name), e.fenceMS, e.publish, r.Owner, ms(r.TTL), r.Metadata, r.Attempt,
		r.Waiter, waiterTTL, strconv.Itoa(int(r.Kind)), strconv.Itoa(r.Limit), strconv.Itoa(r.Weight), e.floorArg(r), wake).Slice()
	if err != nil {
		return engine.Grant{}, sharedError(err, r.Name, r.Kind, r.Limit, r.Weight)
	}
	if len(res) == 3 && res[0] == int64(1) {
		token, err := parseToken(res[1])
		if err != nil {
			return engine.Grant{}, err
		}
		count, _ := res[2].(int64)
		return engine.Grant{Acquired: true, Token: token, Count: int(count)}, nil
	}
	if len(res) != 6 {
		return engine.Grant{}, fmt.Errorf("acquire shared: unexpected reply %v", res)
	}
	holder, _ := res[1].(string)
	left, _ := res[2].(int64)
	return engine.Grant{Holder: holder, HolderTTL: time.Duration(left) * time.Microsecond,
		Queued: res[3] == int64(1), Head: res[4] == int64(1), Reserved: res[5] == int64(1)}, nil
}

// sharedError turns a shared script's refusal ('DISTLOCK ...', see
// scripts/shared_acquire.lua) into the error the memory engine returns for
// it: an *engine.ArgumentError, or engine.ErrUpgrade. Other errors are
// returned as they are.
func sharedError(err error, name string, kind engine.Kind, limit, weight int) error {
	var re goredis.Error
	if !errors.As(err, &re) {
		return err
	}
	if x := exhausted(err); x != err {
		return x
	}
	r := engine.AcquireRequest{Name: name, Kind: kind, Limit: limit, Weight: weight}
	if refusal := engine.SharedRefusal(re.Error(), r); refusal != nil {
		return refusal
	}
	return err
}

// releaseOnceShared is ReleaseOnce for a shared kind: as a mutex's, the
// holder records the id of its last release, so that a copy of the command
// that a client library resends drops no second hold.
func (e *Engine) releaseOnceShared(ctx context.Context, r engine.ReleaseRequest, id string) (engine.ReleaseResult, error) {
	undo := ""
	if r.Undo {
		undo = "1"
	}
	n, err := e.runShared(ctx, sharedReleaseScript, r.Name, r.Owner, id, undo, tokenArg(r.Token), strconv.Itoa(int(r.Kind))).Int64()
	switch {
	case err != nil:
		return engine.ReleaseResult{}, sharedError(err, r.Name, r.Kind, 0, 0)
	case n == -2:
		return engine.ReleaseResult{Status: engine.NotOwner}, nil // a newer grant of the owner
	case n < 0:
		return e.unlessTaken(ctx, r, engine.ReleaseResult{Status: engine.NotHeld})
	}
	return engine.ReleaseResult{Status: engine.Released, Remaining: int(n)}, nil
}

// sharedHolder is a holder's details as the scripts keep them.
type sharedHolder struct {
	Weight   int    `json:"w"`
	Count    int    `json:"c"`
	Token    string `json:"t"`
	Metadata string `json:"m"`
}

// inspectShared describes the shared lock name (List's view). Info.Queue
// lists the first engine.MaxQueueListed waiters in arrival order.
func (e *Engine) inspectShared(ctx context.Context, name string) (engine.Info, error) {
	res, err := e.runShared(ctx, sharedInspectScript, name, engine.MaxQueueListed).Slice()
	if err != nil {
		return engine.Info{}, err
	}
	return sharedInfo(name, res)
}

// readShared queues the shared inspect script of name on p (Inspect's
// pipeline); sharedInfo reads its reply.
func (e *Engine) readShared(ctx context.Context, p goredis.Pipeliner, name string) *goredis.Cmd {
	return p.Eval(ctx, sharedInspectScript.Source(), e.sharedKeys(name), e.fenceMS, e.publish, engine.MaxQueueListed)
}

// sharedInfo reads the shared inspect script's reply res for name.
func sharedInfo(name string, res []any) (engine.Info, error) {
	// A reply that is not a shared lock's comes from a key at its place
	// that distlock did not write (a leak): not a distlock lock, which
	// List skips (Leaks reports the key).
	bad := func() (engine.Info, error) {
		return engine.Info{}, fmt.Errorf("inspect shared: unexpected reply %v: %w", res, errNotALock)
	}
	if len(res) < 5 {
		return bad()
	}
	kind, _ := res[0].(int64)
	limit, _ := res[1].(int64)
	waiters, _ := res[3].(int64)
	listed, _ := res[4].(int64)
	info := engine.Info{Name: name, Kind: engine.Kind(kind), Limit: int(limit), Waiters: int(waiters)}
	if hw, ok := res[2].(string); ok && hw != "" {
		info.HighWater, _ = strconv.ParseUint(hw, 10, 64)
	}
	i := 5 + 2*int(listed)
	if listed < 0 || i > len(res) || (len(res)-i)%3 != 0 {
		return bad()
	}
	for j := 5; j < i; j += 2 {
		id, _ := res[j].(string)
		us, _ := res[j+1].(int64)
		info.Queue = append(info.Queue, engine.Waiter{ID: id, Waited: time.Duration(max(us, 0)) * time.Microsecond})
	}
	for ; i < len(res); i += 3 {
		owner, _ := res[i].(string)
		left, _ := res[i+1].(int64)
		v, _ := res[i+2].(string)
		var h sharedHolder
		if err := json.Unmarshal([]byte(v), &h); err != nil {
			return engine.Info{}, fmt.Errorf("inspect shared: holder %q: %w (%w)", owner, errNotALock, err)
		}
		token, _ := strconv.ParseUint(h.Token, 10, 64)
		info.Holders = append(info.Holders, engine.Holder{Owner: owner, Count: h.Count, Token: token,
			TTL: time.Duration(left) * time.Microsecond, Metadata: h.Metadata, Weight: h.Weight})
		info.Token = max(info.Token, token)
	}
	slices.SortFunc(info.Holders, func(a, b engine.Holder) int { return cmp.Compare(a.Token, b.Token) })
	info.Held = len(info.Holders) > 0
	return info, nil
}

// SetLimit implements engine.Sharer.
func (e *Engine) SetLimit(ctx context.Context, name string, limit int) (int, error) {
	n, err := e.batch.run(ctx, sharedSetLimitScript, e.sharedAcquireKeys(name), e.fenceMS, e.publish, strconv.Itoa(limit)).Int64()
	if err != nil {
		return 0, sharedError(err, name, engine.Semaphore, limit, 0)
	}
	return int(n), nil
}

// leaveShared is Leave's path for a shared lock's waiter: one script.
func (e *Engine) leaveShared(ctx context.Context, r engine.LeaveRequest) error {
	return e.runShared(ctx, sharedLeaveScript, r.Name, r.Waiter).Err()
}

// raiseShared is RaiseFence's path for a shared lock's holder: one
// script.
func (e *Engine) raiseShared(ctx context.Context, r engine.RaiseRequest) (bool, error) {
	n, err := e.runShared(ctx, sharedRaiseFenceScript, r.Name, r.Owner, strconv.FormatUint(r.Token, 10), engine.MaxRaiseAhead).Int64()
	return n == 1, raiseError(err, r.Token)
}

// extendShared queues on p the extension of a shared lock's holder, or a
// heartbeat of its waiter (a shared r.Kind), for Extend's pipeline: its reply has
// the shape of the mutex's extend and heartbeat scripts' ({1, token}, {0},
// or {-1}, HeldByOther, for a holder a force-release freed; {1, wake} or
// {0}).
func (e *Engine) extendShared(ctx context.Context, p goredis.Pipeliner, r engine.ExtendRequest) *goredis.Cmd {
	return sharedExtendScript.EvalSha(ctx, p, e.sharedTakenKeys(r.Name), e.fenceMS, e.publish, r.Owner, ms(r.TTL), flag(r.Waiter), tokenArg(r.Token))
}

// Acquire implements engine.Engine: every kind of lock, dispatched once on
// r.Kind (engine.AcquireByKind) to acquireMutex or acquireShared. A key
// distlock did not write at the lock's place is a *ForeignKeyError.
func (e *Engine) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	g, err := engine.AcquireByKind(ctx, r, e.acquireMutex, e.acquireShared)
	return g, e.foreign(err, r.Name)
}

// Release implements engine.Engine: ReleaseOnce with an id of its own,
// which every release carries (a copy a client library resends drops no
// second hold).
func (e *Engine) Release(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	return e.ReleaseOnce(ctx, r, e.releaseID())
}

// ReleaseOnce implements engine.OnceReleaser: every kind of lock,
// dispatched once on r.Kind (engine.ReleaseOnceByKind). A key distlock did
// not write at the lock's place is a *ForeignKeyError.
func (e *Engine) ReleaseOnce(ctx context.Context, r engine.ReleaseRequest, id string) (engine.ReleaseResult, error) {
	res, err := engine.ReleaseOnceByKind(ctx, r, id, e.releaseOnceMutex, e.releaseOnceShared)
	return res, e.foreign(err, r.Name)
}

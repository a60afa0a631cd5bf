package redis

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/engine"
)

//go:embed scripts/multi.lua
var multiSrc string

var multiScript = newScript(lockSrc + proposalSrc + highWaterSrc + mintSrc + multiSrc)

var (
	_ engine.MultiAcquirer = (*Engine)(nil)
	_ engine.MultiReleaser = (*Engine)(nil)
)

// ReleaseMulti implements engine.MultiReleaser: the release scripts, each
// with its lock's queue keys (a marked lock wakes its queue), in one
// pipeline: one round trip, one per node on Cluster.
func (e *Engine) ReleaseMulti(ctx context.Context, rs []engine.ReleaseRequest) ([]engine.ReleaseResult, error) {
	if err := engine.CheckReleaseSet(rs); err != nil {
		return nil, err
	}
	cmds, err := pipeline(ctx, e.client, []*script{releaseScript}, func(p goredis.Pipeliner) []*goredis.Cmd {
		cmds := make([]*goredis.Cmd, len(rs))
		for i, r := range rs {
			cmds[i] = releaseScript.send(ctx, p, e.releaseArgs(r, e.releaseID(), allKeys))
		}
		return cmds
	})
	if err != nil {
		return nil, err
	}
	out := make([]engine.ReleaseResult, len(rs))
	for i, cmd := range cmds {
		n, err := cmd.Int64()
		if err != nil {
			return nil, err
		}
		if out[i], err = e.unlessTaken(ctx, rs[i], releaseResult(n)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// AcquireMulti implements engine.MultiAcquirer: one script, one round trip,
// when every name's keys are on one node. That is always the case on a
// standalone or Sentinel-managed server (a *goredis.Client); on Cluster
// (or any other client) only when every name has the same hash tag
// (sameSlot), else it answers engine.ErrNotAtomic and changes nothing.
func (e *Engine) AcquireMulti(ctx context.Context, rs []engine.AcquireRequest) (engine.MultiGrant, error) {
	if len(rs) == 0 {
		return engine.MultiGrant{Acquired: true}, nil
	}
	if _, single := e.client.(*goredis.Client); !single && !sameSlot(rs) {
		return engine.MultiGrant{}, fmt.Errorf("%w: the names are in different Redis Cluster hash slots", engine.ErrNotAtomic)
	}
	keys := make([]string, 0, 6*len(rs))
	for _, r := range rs {
		k := e.keys(r.Name) // lock, queue, :qd, :qs, fence
		p := e.prefix + "{" + r.Name + "}"
		keys = append(keys, k[0], k[1], p+keySuffixes[5], p+keySuffixes[6], p+keySuffixes[7], k[4])
	}
	r0 := rs[0]
	floor := ""
	if e.noFloor != "" {
		floor = "0"
	}
	res, err := e.batch.run(ctx, multiScript, keys, r0.Owner, ms(r0.TTL), r0.Metadata, e.fenceMS, floor, attemptOf(r0)).Result()
	if err != nil {
		if refusal := multiKindRefusal(err, rs); refusal != nil {
			return engine.MultiGrant{}, refusal
		}
		return engine.MultiGrant{}, sharedError(err, r0.Name, 0, 0, 0)
	}
	a, ok := res.([]any)
	if !ok || len(a) == 0 {
		return engine.MultiGrant{}, fmt.Errorf("acquire multi: unexpected reply %v", res)
	}
	if a[0] == int64(1) {
		if len(a) != len(rs)+1 {
			return engine.MultiGrant{}, fmt.Errorf("acquire multi: %d tokens for %d names", len(a)-1, len(rs))
		}
		tokens := make([]uint64, len(rs))
		for i := range rs {
			if tokens[i], err = parseToken(a[i+1]); err != nil {
				return engine.MultiGrant{}, err
			}
		}
		return engine.MultiGrant{Acquired: true, Tokens: tokens}, nil
	}
	if len(a) != 4 {
		return engine.MultiGrant{}, fmt.Errorf("acquire multi: unexpected reply %v", res)
	}
	i, _ := a[1].(int64)
	holder, _ := a[2].(string)
	pttl, _ := a[3].(int64)
	g := engine.Grant{Holder: holder, HolderTTL: time.Duration(pttl) * time.Millisecond}
	if holder == "" {
		g.Reserved, g.HolderTTL = true, engine.ReserveTTL
	}
	return engine.MultiGrant{Blocked: int(i) - 1, Grant: g}, nil
}

// sameSlot reports whether every name of rs has the same Redis Cluster
// hash tag in the engine's keys (prefix{NAME}...: the name up to its first
// '}'), so that all their keys are in one slot. Names whose tags differ
// may share a slot too; they are not taken in one script all the same.
func sameSlot(rs []engine.AcquireRequest) bool {
	tag := func(name string) string {
		if i := strings.IndexByte(name, '}'); i >= 0 {
			return name[:i]
		}
		return name
	}
	t := tag(rs[0].Name)
	for _, r := range rs[1:] {
		if tag(r.Name) != t {
			return false
		}
	}
	return true
}

// multiKindRefusal turns multi.lua's refusal of a name held as a shared
// kind, "DISTLOCK kind <k> <i>", into the kind error naming that name (the
// i-th of rs, 1-based), as Acquire of it alone would; nil for any other
// error.
func multiKindRefusal(err error, rs []engine.AcquireRequest) error {
	var re goredis.Error
	if !errors.As(err, &re) {
		return nil
	}
	what, ok := strings.CutPrefix(re.Error(), "DISTLOCK kind ")
	if !ok {
		return nil
	}
	var k, i int
	if n, _ := fmt.Sscanf(what, "%d %d", &k, &i); n != 2 || i < 1 || i > len(rs) {
		return nil
	}
	return engine.KindError(rs[i-1].Name, engine.Kind(k), rs[i-1].Kind)
}

// attemptOf is the attempt id r's grant records: a one-off owner's is the
// owner itself (the short form), as acquire.lua records it; the owner too
// when r names none.
func attemptOf(r engine.AcquireRequest) string {
	if r.OneOff || r.Attempt == "" {
		return r.Owner
	}
	return r.Attempt
}

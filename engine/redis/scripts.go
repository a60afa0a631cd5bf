package redis

import (
	"context"
	_ "embed"
	"slices"
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

var (
	//go:embed scripts/lock.lua
	lockSrc string // decode and encode of the lock's value, for the scripts below
	//go:embed scripts/queue.lua
	queueOwnSrc string // the waiter queue (after requeueSrc: queueSrc)
	//go:embed scripts/requeue.lua
	requeueSrc string // an undone grant's queue entry put back, for queue.lua and shared.lua
	//go:embed scripts/proposal.lua
	proposalSrc string // a proposed token in place of the clock, for the minting
	//go:embed scripts/highwater.lua
	highWaterSrc string // the increment of a fencing high-water, for the minting (before mintSrc, sharedSrc)
	//go:embed scripts/mint.lua
	mintSrc string // the minting of a fencing token, for the scripts that grant (after proposalSrc)
	//go:embed scripts/acquire.lua
	acquireSrc string
	//go:embed scripts/extend.lua
	extendSrc string
	//go:embed scripts/release.lua
	releaseSrc string
	//go:embed scripts/force_release.lua
	forceReleaseSrc string
	//go:embed scripts/taken.lua
	takenSrc string // the taken-over marks a force-release leaves
	//go:embed scripts/raise_fence.lua
	raiseFenceSrc string
	//go:embed scripts/heartbeat.lua
	heartbeatSrc string
	//go:embed scripts/leave.lua
	leaveSrc string
	//go:embed scripts/releaseids.lua
	releaseIDsSrc string
	//go:embed scripts/told.lua
	toldSrc string
)

// queueSrc is the waiter queue, for the scripts that touch it: queue.lua
// with the file it uses (requeue.lua) before it.
var queueSrc = requeueSrc + queueOwnSrc

var (
	acquireScript      = newScript(proposalSrc + highWaterSrc + mintSrc + include(acquireSrc, "lock.lua", "queue.lua"))
	extendScript       = newScript(lockSrc + takenSrc + extendSrc)
	releaseScript      = newScript(include(releaseSrc, "lock.lua", "queue.lua", "releaseids.lua"))
	forceReleaseScript = newScript(lockSrc + queueSrc + takenSrc + forceReleaseSrc)
	raiseFenceScript   = newScript(lockSrc + raiseFenceSrc)
	heartbeatScript    = newScript(queueSrc + heartbeatSrc)
	leaveScript        = newScript(queueSrc + leaveSrc)
	toldScript         = newScript(takenSrc + toldSrc)
)

// include returns src with each of the files named (lock.lua, queue.lua,
// releaseids.lua) in place of its line "-- #<name>". A script puts them
// inside the block of the paths that use those functions: Lua builds a
// function's closure each time its definition runs, on every run of the
// script, so the paths that never reach the line (the uncontended ones)
// do not pay for them. Each must be there once.
func include(src string, names ...string) string {
	files := map[string]string{"lock.lua": lockSrc, "queue.lua": queueSrc, "releaseids.lua": releaseIDsSrc}
	for _, name := range names {
		marker := "-- #" + name + "\n"
		i := strings.Index(src, marker)
		if i < 0 || strings.Contains(src[i+len(marker):], marker) || files[name] == "" {
			panic("distlock/engine/redis: a script needs one line " + marker)
		}
		src = src[:i] + files[name] + src[i+len(marker):]
	}
	return src
}

// pipeline runs the commands that add queues with EVALSHA in one round trip.
// It loads the digests of scripts that no server has answered yet first
// (once per process); a script whose digest could not be loaded is sent
// with EVAL. When a server does not have a script cached (after a restart,
// a failover or SCRIPT FLUSH), it loads the scripts and sends again only
// the commands that failed with NOSCRIPT, with their own arguments (a
// release's id among them), by digest and then with the script's source:
// on a Cluster the other masters ran theirs, and a command that was
// applied is never sent twice.
func pipeline(ctx context.Context, c goredis.UniversalClient, scripts []*script,
	add func(goredis.Pipeliner) []*goredis.Cmd) ([]*goredis.Cmd, error) {
	for _, s := range scripts {
		s.Ensure(ctx, c)
	}
	var cmds []*goredis.Cmd
	_, err := c.Pipelined(ctx, func(p goredis.Pipeliner) error { cmds = add(p); return nil })
	retry := noScriptCalls(cmds)
	if len(retry) == 0 {
		return cmds, err
	}
	for _, s := range scripts {
		_ = s.Load(ctx, c) // on failure the round with the source below still runs it
	}
	for _, form := range []resendForm{byDigest, withSource} {
		sub := make([]*goredis.Cmd, len(retry))
		_, _ = c.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for j, i := range retry {
				sub[j] = goredis.NewCmd(ctx, resendArgs(cmds[i].Args(), scripts, form)...)
				_ = p.Process(ctx, sub[j])
			}
			return nil
		})
		var again []int
		for j, i := range retry {
			cmds[i] = sub[j]
			if isNoScript(sub[j].Err()) {
				again = append(again, i)
			}
		}
		if retry = again; len(retry) == 0 {
			break
		}
	}
	for _, cmd := range cmds {
		if err := cmd.Err(); err != nil {
			return cmds, err
		}
	}
	return cmds, nil
}

// resendForm is how a command that met NOSCRIPT is sent again.
type resendForm uint8

const (
	// byDigest sends the same command again (an EVALSHA, once the
	// scripts were loaded).
	byDigest resendForm = iota
	// withSource sends an EVAL of the script's source in place of an
	// EVALSHA of its digest.
	withSource
)

// resendArgs returns the arguments of an EVALSHA (or EVAL) command to send
// it again in form (resendForm): the same, or an EVAL of the script among
// scripts whose digest it names.
func resendArgs(args []any, scripts []*script, form resendForm) []any {
	args = slices.Clone(args)
	if form == byDigest || len(args) < 2 {
		return args
	}
	for _, s := range scripts {
		if d := s.Digest(); d != nil && d == args[1] {
			args[0], args[1] = "eval", s.Source()
			break
		}
	}
	return args
}

package redis

import (
	"context"
	_ "embed"

	goredis "github.com/redis/go-redis/v9"
)

var (
	//go:embed scripts/lock.lua
	lockSrc string // decode and encode of the lock's value, for the scripts below
	//go:embed scripts/acquire.lua
	acquireSrc string
	//go:embed scripts/extend.lua
	extendSrc string
	//go:embed scripts/release.lua
	releaseSrc string
	//go:embed scripts/force_release.lua
	forceReleaseSrc string
	//go:embed scripts/raise_fence.lua
	raiseFenceSrc string
)

var (
	acquireScript      = goredis.NewScript(lockSrc + acquireSrc)
	extendScript       = goredis.NewScript(lockSrc + extendSrc)
	releaseScript      = goredis.NewScript(lockSrc + releaseSrc)
	forceReleaseScript = goredis.NewScript(forceReleaseSrc)
	raiseFenceScript   = goredis.NewScript(lockSrc + raiseFenceSrc)
)

// pipeline runs the commands that add queues with EVALSHA in one round trip.
// When the server does not have the script cached (after a restart or
// SCRIPT FLUSH), it loads it and runs the pipeline once more.
func pipeline(ctx context.Context, c goredis.UniversalClient, s *goredis.Script,
	add func(goredis.Pipeliner) []*goredis.Cmd) ([]*goredis.Cmd, error) {
	var cmds []*goredis.Cmd
	_, err := c.Pipelined(ctx, func(p goredis.Pipeliner) error { cmds = add(p); return nil })
	if !noScript(cmds) {
		return cmds, err
	}
	if err := s.Load(ctx, c).Err(); err != nil {
		return nil, err
	}
	_, err = c.Pipelined(ctx, func(p goredis.Pipeliner) error { cmds = add(p); return nil })
	return cmds, err
}

func noScript(cmds []*goredis.Cmd) bool {
	for _, c := range cmds {
		if goredis.HasErrorPrefix(c.Err(), "NOSCRIPT") {
			return true
		}
	}
	return false
}

package peers

import (
	"context"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// TunedPoolSize is the connection pool of every tuned go-redis client: room
// for the 64 goroutines of S2, twice over.
const TunedPoolSize = 128

// clientStyle chooses a go-redis client's options.
type clientStyle int

const (
	// tuned: the same options for every go-redis-based library: a pool of
	// 128, context deadlines honoured, no handshake extras.
	tuned clientStyle = iota
	// readme: what the library's README shows: only the address (plus
	// ContextTimeoutEnabled for distlock, whose README asks for it). The
	// pool is go-redis's default, 10 per GOMAXPROCS.
	readme
	// readmeDistlock: distlock's README client.
	readmeDistlock
)

// newGoRedis returns a go-redis client for addr in the given style, counting
// its requests into c (when not nil).
func newGoRedis(addr string, style clientStyle, c *Counter) *goredis.Client {
	var opt *goredis.Options
	switch style {
	case tuned:
		opt = &goredis.Options{
			Addr:                     addr,
			PoolSize:                 TunedPoolSize,
			ContextTimeoutEnabled:    true,
			DisableIdentity:          true,
			MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		}
	case readmeDistlock:
		opt = &goredis.Options{Addr: addr, ContextTimeoutEnabled: true}
	default:
		opt = &goredis.Options{Addr: addr}
	}
	cl := goredis.NewClient(opt)
	if c != nil {
		cl.AddHook(countHook{c})
	}
	return cl
}

// closeAll closes go-redis clients.
func closeAll(cs []*goredis.Client) error {
	var first error
	for _, c := range cs {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// countHook counts every command and pipeline a go-redis client sends.
type countHook struct{ c *Counter }

func (h countHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h countHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		h.c.add(1)
		return next(ctx, cmd)
	}
}

func (h countHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		h.c.add(len(cmds))
		return next(ctx, cmds)
	}
}

package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	redisengine "github.com/distlock/distlock/engine/redis"
)

// Environment variables that choose the backend.
const (
	envRedis  = "DISTLOCK_REDIS"
	envServer = "DISTLOCK_SERVER"
)

// pingTimeout bounds the first round trip, which tells an unreachable
// backend from a busy lock before any waiting starts.
const pingTimeout = 5 * time.Second

// backendHelp documents the backend settings, for the help texts.
const backendHelp = `Backend (every command but demo):
  DISTLOCK_REDIS=redis://[[user]:password@]host:6379[/db]   one Redis server
                 (rediss:// for TLS); --redis URL overrides it.
  A comma-separated list of URLs (Redlock) and DISTLOCK_SERVER (a distlock
  server) are not available yet.
`

// backend is an open connection to the lock backend.
type backend struct {
	client *distlock.Client
	eng    engine.Engine
	rdb    *goredis.Client
	where  string // for messages: "redis 10.0.0.5:6379"
}

// openBackend connects to the backend that the --redis flag (if not empty)
// or the environment names, and checks that it answers. Its errors are
// *cliError with the exit code and a hint.
func (a *app) openBackend(ctx context.Context, cmd, flagURL string) (*backend, error) {
	url, err := a.redisURL(cmd, flagURL)
	if err != nil {
		return nil, err
	}
	opts, err := goredis.ParseURL(url)
	if err != nil {
		return nil, usageErr("cannot use %q as a Redis URL: %v.\nUse the form redis://[[user]:password@]host:6379[/db] "+
			"(rediss:// for TLS).", redactURL(url), err)
	}
	// Honour context deadlines, so a renewal or release that Redis does not
	// answer is bounded by its own deadline rather than by a socket timeout.
	opts.ContextTimeoutEnabled = true
	// Fail fast when nothing listens: fewer dial attempts per command (the
	// lease and the wait loop retry on their own).
	if opts.DialerRetries == 0 {
		opts.DialerRetries = 2
	}
	rdb := goredis.NewClient(opts)
	where := "redis " + opts.Addr
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	err = rdb.Ping(pctx).Err()
	cancel()
	if err != nil {
		_ = rdb.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &cliError{code: exitBackend, msg: fmt.Sprintf("cannot reach Redis at %s: %v.\n"+
			"Check that Redis is running there and that %s (or --redis) points at it.", opts.Addr, err, envRedis)}
	}
	eng, err := redisengine.New(rdb)
	if err != nil {
		_ = rdb.Close()
		return nil, &cliError{code: exitFailed, msg: err.Error()}
	}
	return &backend{client: distlock.New(eng), eng: eng, rdb: rdb, where: where}, nil
}

// redisURL picks the one Redis URL to use, or says why there is none.
func (a *app) redisURL(cmd, flagURL string) (string, error) {
	url := strings.TrimSpace(flagURL)
	if url == "" {
		url = strings.TrimSpace(a.getenv(envRedis))
		if url == "" && strings.TrimSpace(a.getenv(envServer)) != "" {
			return "", usageErr("%s is set, but the distlock server backend is not available yet.\n"+
				"Unset it and set %s=redis://host:6379 (or pass --redis) to use Redis directly.", envServer, envRedis)
		}
	}
	if url == "" {
		return "", usageErr("this command needs a shared lock backend, and none is configured: "+
			"set %s=redis://host:6379 (or pass --redis URL).\n"+
			"To see distlock work with nothing installed, run: distlock demo", envRedis)
	}
	if parts := strings.Split(url, ","); len(parts) > 1 {
		return "", usageErr("Redlock (%d URLs) is not available yet: give one Redis URL in %s or --redis.", len(parts), envRedis)
	}
	return url, nil
}

// close closes the client (releasing the leases it still holds, unless
// keepLeases), the engine and the connection.
func (b *backend) close(keepLeases bool) {
	if !keepLeases {
		_ = b.client.Close()
	}
	_ = b.eng.Close()
	_ = b.rdb.Close()
}

// redactURL hides a password in a URL, for messages.
func redactURL(url string) string {
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok {
		return url
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		rest = "****@" + rest[at+1:]
	}
	return scheme + "://" + rest
}

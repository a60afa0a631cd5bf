package remote_test

import (
	"context"
	"testing"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/memory"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/engine/remote"
	"github.com/distlock/distlock/internal/redistest"
	"github.com/distlock/distlock/internal/servertest"
	"github.com/distlock/distlock/server"
)

// startServer serves eng on a free loopback port until the test ends and
// returns its URL.
func startServer(t testing.TB, eng engine.Engine, opts ...server.Option) (*server.Server, string) {
	t.Helper()
	return servertest.Start(t, eng, true, opts...)
}

// newRemote returns a remote engine on url, closed when the test ends.
func newRemote(t testing.TB, url string, opts ...remote.Option) *remote.Engine {
	t.Helper()
	e, err := remote.New(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// TestConformanceEmbedded: the remote engine against a server on the
// embedded engine.
func TestConformanceEmbedded(t *testing.T) {
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	_, url := startServer(t, mem, server.WithLogger(quietLogger()))
	h := enginetest.Harness{
		New: func(t *testing.T) engine.Engine { return newRemote(t, url) },
	}
	enginetest.Run(t, h)
	enginetest.Check(t, stalledRemotes(h, url))
	enginetest.CheckMutants(t, h)
}

// startRedisServer serves the Redis engine on a new redis-server until the
// test ends, and returns the redis-server and the server's URL.
func startRedisServer(t *testing.T) (*redistest.Server, string) {
	t.Helper()
	rs := redistest.Start(t)
	eng, err := redisengine.New(rs.Client())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	_, url := startServer(t, eng, server.WithLogger(quietLogger()))
	return rs, url
}

// TestConformanceRedis: the remote engine against a server on a real
// redis-server.
func TestConformanceRedis(t *testing.T) {
	rs, url := startRedisServer(t)
	h := enginetest.Harness{
		New: func(t *testing.T) engine.Engine { return newRemote(t, url) },
		Delete: func(t *testing.T, name string) {
			if err := rs.Del(context.Background(), redisengine.DefaultPrefix+"{"+name+"}"); err != nil {
				t.Fatal(err)
			}
		},
	}
	enginetest.Run(t, h)
	enginetest.Check(t, stalledRemotes(h, url))
	enginetest.CheckMutants(t, h)
}

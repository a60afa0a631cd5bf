package redis_test

import (
	"context"
	"strconv"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

func TestConformance(t *testing.T) {
	srv := redistest.Start(t)
	enginetest.Run(t, enginetest.Harness{
		New: func(t *testing.T) engine.Engine { return newEngine(t, srv) },
		Delete: func(t *testing.T, name string) {
			if err := srv.Del(context.Background(), redisengine.DefaultPrefix+"{"+name+"}"); err != nil {
				t.Fatal(err)
			}
		},
		Register: func(t *testing.T, name string) enginetest.Register {
			return &redisRegister{c: srv.Client(), key: "test:" + name}
		},
	})
}

// newEngine returns an engine on its own go-redis client, like a separate
// process would have.
func newEngine(t *testing.T, srv *redistest.Server) *redisengine.Engine {
	t.Helper()
	e, err := redisengine.New(srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// redisRegister is a counter in Redis read with GET and written with SET:
// not atomic, so only the lock keeps increments from being lost.
type redisRegister struct {
	c   *goredis.Client
	key string
}

func (r *redisRegister) Get(ctx context.Context) (int64, error) {
	v, err := r.c.Get(ctx, r.key).Result()
	if err == goredis.Nil {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(v, 10, 64)
}

func (r *redisRegister) Set(ctx context.Context, v int64) error {
	return r.c.Set(ctx, r.key, v, 0).Err()
}

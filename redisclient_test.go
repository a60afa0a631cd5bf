package distlock_test

import (
	"testing"

	"github.com/distlock/distlock"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// redisClient returns a Client on a Redis engine of its own on srv (as
// another process would have); both are closed when the test ends.
func redisClient(t *testing.T, srv *redistest.Server, opts ...distlock.ClientOption) *distlock.Client {
	t.Helper()
	eng, err := redisengine.New(srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	c := distlock.New(eng, opts...)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

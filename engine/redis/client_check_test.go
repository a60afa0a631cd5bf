package redis_test

import (
	"errors"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	redisengine "github.com/distlock/distlock/engine/redis"
)

// TestNewRefusesClientIgnoringDeadlines: New refuses a go-redis client
// built without ContextTimeoutEnabled (go-redis's default), whose commands
// would overrun a wait budget or a renewal deadline by its own timeouts,
// with ErrNoContextTimeout, for every kind of client it can check: a plain
// or Sentinel failover client (both *Client), a Cluster client, a Ring, and
// what NewUniversalClient returns. With the option set, each is taken. New
// dials nothing: no server is needed.
func TestNewRefusesClientIgnoringDeadlines(t *testing.T) {
	const addr = "127.0.0.1:1" // never dialled
	build := map[string]func(honour bool) goredis.UniversalClient{
		"Client": func(h bool) goredis.UniversalClient {
			return goredis.NewClient(&goredis.Options{Addr: addr, ContextTimeoutEnabled: h})
		},
		"FailoverClient": func(h bool) goredis.UniversalClient {
			return goredis.NewFailoverClient(&goredis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{addr}, ContextTimeoutEnabled: h})
		},
		"ClusterClient": func(h bool) goredis.UniversalClient {
			return goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{addr}, ContextTimeoutEnabled: h})
		},
		"Ring": func(h bool) goredis.UniversalClient {
			return goredis.NewRing(&goredis.RingOptions{Addrs: map[string]string{"a": addr}, ContextTimeoutEnabled: h})
		},
		"UniversalClient": func(h bool) goredis.UniversalClient {
			return goredis.NewUniversalClient(&goredis.UniversalOptions{Addrs: []string{addr}, ContextTimeoutEnabled: h})
		},
	}
	for name, b := range build {
		off := b(false)
		e, err := redisengine.New(off)
		if !errors.Is(err, redisengine.ErrNoContextTimeout) || e != nil {
			t.Errorf("%s without ContextTimeoutEnabled: New = %v, %v; want ErrNoContextTimeout", name, e, err)
		}
		_ = off.Close()
		on := b(true)
		e, err = redisengine.New(on)
		if err != nil {
			t.Errorf("%s with ContextTimeoutEnabled: %v", name, err)
		} else {
			_ = e.Close()
		}
		_ = on.Close()
	}
}

package redistest

import (
	"context"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// clientOptions returns go-redis options for this server. Contexts are
// honoured (ContextTimeoutEnabled), so a deadline bounds a command even when
// the server is paused.
func (s *Server) clientOptions() *redis.Options {
	return &redis.Options{
		Addr:                     s.addr,
		ContextTimeoutEnabled:    true,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
}

// Client returns a new go-redis client connected to this server. The client
// survives Stop/Kill/Restart (it reconnects) and is closed by Server.Close;
// closing it earlier is allowed. Context deadlines bound its commands.
func (s *Server) Client() *redis.Client {
	return s.ClientWithPool(0)
}

// ClientWithPool is Client with a connection pool of size connections (0:
// go-redis's default), for benchmarks whose goroutines must not wait for a
// connection.
func (s *Server) ClientWithPool(size int) *redis.Client {
	opt := s.clientOptions()
	opt.PoolSize = size
	c := redis.NewClient(opt)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = c.Close()
		return c
	}
	s.clients = append(s.clients, c)
	return c
}

// FlushAll removes every key from every database of the server.
func (s *Server) FlushAll(ctx context.Context) error {
	return s.admin(ctx, func(c *redis.Client) error {
		return c.FlushAll(ctx).Err()
	})
}

// Del deletes keys directly on the server, behind the back of whatever
// library is being tested (for example to simulate an expired or lost lock).
func (s *Server) Del(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	return s.admin(ctx, func(c *redis.Client) error {
		return c.Del(ctx, keys...).Err()
	})
}

// admin runs fn with a short-lived single-connection client.
func (s *Server) admin(ctx context.Context, fn func(*redis.Client) error) error {
	opt := s.clientOptions()
	opt.PoolSize = 1
	c := redis.NewClient(opt)
	defer c.Close()
	return fn(c)
}

package remote_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
	"github.com/distlock/distlock/server"
)

// twoServers starts two servers on one redis-server, each with its own
// Redis engine and connection, as two processes behind a load balancer.
func twoServers(t testing.TB) (*redistest.Server, [2]string) {
	rs := redistest.Start(t)
	var urls [2]string
	for i := range urls {
		eng, err := redisengine.New(rs.Client())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = eng.Close() })
		_, urls[i] = startServer(t, eng, server.WithLogger(quietLogger()))
	}
	return rs, urls
}

// TestTwoServersOneRedis runs the conformance suite with each new engine
// talking to the next of two servers on one Redis: clients of one test are
// spread over both servers.
func TestTwoServersOneRedis(t *testing.T) {
	rs, urls := twoServers(t)
	var n atomic.Int64
	enginetest.Run(t, enginetest.Harness{
		New: func(t *testing.T) engine.Engine { return newRemote(t, urls[n.Add(1)%2]) },
		Delete: func(t *testing.T, name string) {
			if err := rs.Del(context.Background(), redisengine.DefaultPrefix+"{"+name+"}"); err != nil {
				t.Fatal(err)
			}
		},
		Register: func(t *testing.T, name string) enginetest.Register {
			return redistest.NewRegister(rs.Client(), "test:"+name)
		},
	})
}

// TestTwoServersExclusionAndTokens: clients of two servers on one Redis
// take one lock in turns; a counter in Redis read and written without
// atomicity loses no update (mutual exclusion across the servers), and the
// fencing tokens seen under the lock strictly increase.
func TestTwoServersExclusionAndTokens(t *testing.T) {
	rs, urls := twoServers(t)
	reg := redistest.NewRegister(rs.Client(), "test:counter")
	const (
		perServer = 16
		rounds    = 8
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex // guards lastToken and grants (written under the lock)
		lastToken uint64
		grants    [2]int
		errs      = make(chan error, 2*perServer*rounds)
	)
	for s, url := range urls {
		c := distlock.New(newRemote(t, url))
		t.Cleanup(func() { _ = c.Close() })
		for range perServer {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range rounds {
					l, err := c.Acquire(ctx, "shared", distlock.WithTTL(5*time.Second))
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					if l.Token() <= lastToken {
						errs <- fmt.Errorf("server %d: token %d not above the previous grant's %d", s, l.Token(), lastToken)
					}
					lastToken = l.Token()
					grants[s]++
					mu.Unlock()
					v, err := reg.Get(ctx)
					if err == nil {
						err = reg.Set(ctx, v+1)
					}
					if err != nil {
						errs <- err
					}
					if err := l.Release(ctx); err != nil {
						errs <- err
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := reg.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(2 * perServer * rounds); got != want {
		t.Fatalf("counter = %d, want %d: two holders overlapped", got, want)
	}
	if grants[0] == 0 || grants[1] == 0 {
		t.Fatalf("grants per server = %v: both servers should have granted", grants)
	}
	t.Logf("grants per server: %v", grants)
}

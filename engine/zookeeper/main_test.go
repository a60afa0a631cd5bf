package zookeeper_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	zkengine "github.com/distlock/distlock/engine/zookeeper"
	"github.com/distlock/distlock/engine/zookeeper/zktest"
)

// The tests share one ensemble of each size (a JVM starts slowly): started
// by the first test that asks for it, stopped after the last test.
var (
	outside   zktest.Outside
	ensMu     sync.Mutex
	ensembles = map[int]*zktest.Ensemble{}
)

func TestMain(m *testing.M) {
	code := m.Run()
	outside.Close()
	os.Exit(code)
}

// shared returns the shared ensemble of n members.
func shared(t *testing.T, n int) *zktest.Ensemble {
	t.Helper()
	ensMu.Lock()
	defer ensMu.Unlock()
	if e, ok := ensembles[n]; ok {
		return e
	}
	var e *zktest.Ensemble
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("zookeeper ensemble of %d: %v", n, r)
			}
		}()
		e = zktest.Start(&outside, n)
	}()
	ensembles[n] = e
	return e
}

// dial returns an engine on its own connection (like a separate process)
// to the given servers, closed when the test ends.
func dial(t testing.TB, servers []string, opts ...zkengine.Option) *zkengine.Engine {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := zkengine.Dial(ctx, servers, testSession, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// testSession is the session timeout the tests ask for: above the longest
// ttl of the conformance suite (1 min).
const testSession = 2 * time.Minute

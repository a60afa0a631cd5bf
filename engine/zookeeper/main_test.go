package zookeeper_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

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

// barrierPath is a scratch node currentConn writes.
const barrierPath = "/test-barrier"

// currentConn connects a session of the test's own to servers whose
// readings are no older than any write answered (to any session) before
// it returns: it writes a scratch node first. A member answers a write
// only once it has applied every commit before it, while a reading may
// come from before a commit another member has answered already (the
// leader sends a commit to its followers before it applies it), and a
// sync does not help on the leader, which does not match syncs with
// commits. The caller closes the connection.
func currentConn(t *testing.T, servers []string) *zk.Conn {
	t.Helper()
	raw, _, err := zk.Connect(servers, testSession, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Create(barrierPath, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		raw.Close()
		t.Fatal(err)
	}
	if _, err := raw.Set(barrierPath, nil, -1); err != nil {
		raw.Close()
		t.Fatal(err)
	}
	return raw
}

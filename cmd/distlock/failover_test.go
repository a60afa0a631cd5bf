//go:build unix && full

package main

import (
	"bufio"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	etcdengine "github.com/distlock/distlock/engine/etcd"
	"github.com/distlock/distlock/engine/etcd/etcdtest"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
	"github.com/distlock/distlock/internal/servertest"
)

// serveProcess runs distlock serve with args as a process of its own and
// returns its URL and what kills it (SIGKILL: no shutdown, no answer).
func serveProcess(t *testing.T, args ...string) (url string, kill func()) {
	url, _, kill = serveProc(t, args...)
	return url, kill
}

// serveProc is serveProcess, with the process.
func serveProc(t *testing.T, args ...string) (url string, proc *os.Process, kill func()) {
	t.Helper()
	cmd := cli{}.command(append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	kill = func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	t.Cleanup(kill)
	found := make(chan string, 1)
	var log lockedBuffer
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			_, _ = log.Write([]byte(line + "\n"))
			if rest, ok := strings.CutPrefix(line, "distlock serve: listening on "); ok {
				u, _, _ := strings.Cut(rest, " ")
				select {
				case found <- u:
				default:
				}
			}
		}
	}()
	select {
	case url = <-found:
	case <-time.After(patience):
		t.Fatalf("distlock serve did not start: %s", log.String())
	}
	return url, cmd.Process, kill
}

// TestKillOneOfTwoServersEtcd: two distlock serve processes on one etcd;
// a client names both. The first is killed (SIGKILL) while a client holds a
// lease with auto-renewal and another waits: no lease is lost, the backend
// shows the same holder, and the waiter is granted through the other
// server with a greater token (servertest.KillOneOfTwo).
func TestKillOneOfTwoServersEtcd(t *testing.T) {
	t.Parallel()
	cl := etcdtest.Start(t, 1)
	eps := strings.Join(cl.Endpoints(), ",")
	var (
		urls [2]string
		kill func()
	)
	urls[0], kill = serveProcess(t, "--etcd", eps)
	urls[1], _ = serveProcess(t, "--etcd", eps)
	direct := etcdengine.New(cl.Client(t))
	defer direct.Close()
	servertest.KillOneOfTwo(t, urls, kill, 2*time.Second, direct.Inspect)
}

// TestKillOneOfTwoServersRedisProcess: the same on one redis-server, with
// real distlock serve processes.
func TestKillOneOfTwoServersRedisProcess(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	var (
		urls [2]string
		kill func()
	)
	urls[0], kill = serveProcess(t, "--redis", srv.URL())
	urls[1], _ = serveProcess(t, "--redis", srv.URL())
	direct, err := redisengine.New(srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	servertest.KillOneOfTwo(t, urls, kill, 1500*time.Millisecond, direct.Inspect)
}

// TestStopOneOfTwoServersRedisProcess: the same with the first server
// stopped (SIGSTOP) rather than killed: its connections stay open and
// nothing answers on them. Each renewal gives the stopped server its share
// of the lease's time left (half) before it goes on through the other, so
// the lease is still renewed in time; the waiter, whose event stream hangs
// on the stopped server, learns of the release from its heartbeat's
// answer through the other server.
func TestStopOneOfTwoServersRedisProcess(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	var (
		urls [2]string
		proc *os.Process
	)
	urls[0], proc, _ = serveProc(t, "--redis", srv.URL())
	urls[1], _ = serveProcess(t, "--redis", srv.URL())
	direct, err := redisengine.New(srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	stop := func() {
		if err := proc.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = proc.Signal(syscall.SIGCONT) })
	}
	servertest.KillOneOfTwo(t, urls, stop, 3*time.Second, direct.Inspect)
}

// TestServersOfSeveralURLs: DISTLOCK_SERVER may name several servers; the
// CLI works while the first is down, and refuses two servers on the
// embedded engine (which do not share their locks) at once.
func TestServersOfSeveralURLs(t *testing.T) {
	t.Parallel()
	live := serveIn(t, nil)
	c := cli{env: map[string]string{"DISTLOCK_SERVER": "http://" + closedPort(t) + "," + live.url}}
	expect(t, c.run(t, "acquire", "--ttl", "1m", "job"), 0)
	expect(t, c.run(t, "status", "job"), 0, "held")

	other := serveIn(t, nil)
	two := cli{env: map[string]string{"DISTLOCK_SERVER": live.url + "," + other.url}}
	expect(t, two.run(t, "status", "job"), exitUsage, "do not share their locks")

	// Servers on Redis that declare different backends are refused too;
	// the same id is one backend.
	rs := redistest.Start(t)
	a := serveIn(t, nil, "--redis", rs.URL(), "--backend-id", "locks-a")
	b := serveIn(t, nil, "--redis", rs.URL(), "--backend-id", "locks-b")
	a2 := serveIn(t, nil, "--redis", rs.URL(), "--backend-id", "locks-a")
	ab := cli{env: map[string]string{"DISTLOCK_SERVER": a.url + "," + b.url}}
	expect(t, ab.run(t, "status", "job"), exitUsage, "do not share their locks", "backend locks-b")
	aa := cli{env: map[string]string{"DISTLOCK_SERVER": a.url + "," + a2.url}}
	expect(t, aa.run(t, "status", "job"), 0, "free")
}

// TestServeBackendIDRefused: --backend-id on the embedded engine, or an id
// the server cannot take, is a usage error.
func TestServeBackendIDRefused(t *testing.T) {
	t.Parallel()
	expect(t, cli{}.run(t, "serve", "--listen", "127.0.0.1:0", "--backend-id", "x"), exitUsage, "embedded engine")
	rs := redistest.Start(t)
	expect(t, cli{}.run(t, "serve", "--listen", "127.0.0.1:0", "--redis", rs.URL(), "--backend-id", "embedded:x"), exitUsage, "--backend-id")
}

//go:build unix

package remote_test

// An acceptance tester's tests of several servers on one Redis, each a
// process of its own (this test binary run again as a server: see
// strangerServeFlag), stopped with SIGSTOP and continued, killed and
// started again on the same port, while Go clients naming them all hold,
// renew, release and wait.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/engine/remote"
	"github.com/distlock/distlock/internal/redistest"
	"github.com/distlock/distlock/internal/srvproc"
	"github.com/distlock/distlock/server"
)

// strangerServeFlag, as the test binary's first argument, makes it a
// distlock server on a Redis (the second argument, host:port) listening on
// the third (host:port) until it is killed: a real process that SIGSTOP
// freezes whole (its connections, its timers, the requests it holds), as
// distlock serve --redis would be, without building cmd/distlock (a module
// of its own).
const strangerServeFlag = "-distlock.stranger.serve"

func init() {
	if len(os.Args) == 4 && os.Args[1] == strangerServeFlag {
		os.Exit(strangerServe(os.Args[2], os.Args[3]))
	}
}

func strangerServe(redisAddr, listen string) int {
	rc := redis.NewClient(&redis.Options{Addr: redisAddr, ContextTimeoutEnabled: true, DisableIdentity: true})
	eng, err := redisengine.New(rc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "stranger serve:", err)
		return 2
	}
	srv, err := server.New(eng, server.WithLogger(quietLogger()))
	if err != nil {
		fmt.Fprintln(os.Stderr, "stranger serve:", err)
		return 2
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "stranger serve:", err)
		return 2
	}
	fmt.Fprintln(os.Stderr, "stranger serve: listening on", ln.Addr())
	err = srv.Serve(ln)
	fmt.Fprintln(os.Stderr, "stranger serve:", err)
	return 1
}

// procServer is one server process on a port of its own, which a restart
// keeps.
type procServer struct {
	t     *testing.T
	redis string
	addr  string
	log   string
	p     *srvproc.Process
}

// URL is the server's base URL.
func (s *procServer) URL() string { return "http://" + s.addr }

// start runs the server process and waits until it answers.
func (s *procServer) start() {
	s.t.Helper()
	if err := s.tryStart(); err != nil {
		s.t.Fatal(err)
	}
}

// errServerExited: the server process exited before it served, most
// likely because its port was taken between the pick and its bind.
var errServerExited = errors.New("exited before serving")

// tryStart starts the process and waits until it serves; an error wrapping
// errServerExited when the process exited first.
func (s *procServer) tryStart() error {
	p, err := srvproc.Start(os.Args[0], []string{strangerServeFlag, s.redis, s.addr}, s.log)
	if err != nil {
		return err
	}
	s.p = p
	deadline := time.Now().Add(30 * time.Second)
	for {
		// Asked of this process only once it runs: a /healthz answered by
		// another process on a port taken meanwhile is not this server's.
		resp, err := http.Get(s.URL() + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && !p.Exited() {
				return nil
			}
		}
		if p.Exited() {
			data, _ := os.ReadFile(s.log)
			return fmt.Errorf("server %s %w:\n%s", s.addr, errServerExited, data)
		}
		if time.Now().After(deadline) {
			data, _ := os.ReadFile(s.log)
			return fmt.Errorf("server %s did not start: %v\n%s", s.addr, err, data)
		}
		time.Sleep(10 * time.Millisecond) // polling a starting process: nothing to wait on
	}
}

// stop freezes the process (SIGSTOP) and returns once every thread of it
// is stopped.
func (s *procServer) stop() {
	s.t.Helper()
	if err := s.p.Pause(10 * time.Second); err != nil {
		s.t.Fatal(err)
	}
}

// pause stops the process (stop) and returns the function that continues
// it, once however often it is called; the test's end continues it too
// when the test did not (a failed test's server dies continued).
func (s *procServer) pause() (cont func()) {
	s.t.Helper()
	s.stop()
	var once sync.Once
	cont = func() { once.Do(s.cont) }
	s.t.Cleanup(cont)
	return cont
}

// cont continues a stopped process.
func (s *procServer) cont() {
	s.t.Helper()
	if err := s.p.Signal(syscall.SIGCONT); err != nil {
		s.t.Fatal(err)
	}
}

// kill kills the process (SIGKILL).
func (s *procServer) kill() {
	s.t.Helper()
	if err := s.p.Kill(); err != nil {
		s.t.Fatal(err)
	}
}

// procServers starts n server processes on one redis-server and returns
// them, with a Redis engine of the test's own on the same redis-server
// (the backend's truth, read without any server).
func procServers(t *testing.T, n int) ([]*procServer, *redisengine.Engine, *redistest.Server) {
	t.Helper()
	rs := redistest.Start(t)
	dir := t.TempDir()
	out := make([]*procServer, n)
	for i := range out {
		s := &procServer{t: t, redis: rs.Addr(), log: filepath.Join(dir, fmt.Sprintf("server%d.log", i))}
		t.Cleanup(func() {
			if s.p != nil {
				_ = s.p.Kill()
			}
		})
		// A port picked free may be taken before the server binds it: the
		// server exits, and starts again on another port.
		for attempt := 1; ; attempt++ {
			s.addr = srvproc.FreeAddr(t)
			err := s.tryStart()
			if err == nil {
				break
			}
			if !errors.Is(err, errServerExited) || attempt == 3 {
				t.Fatal(err)
			}
			t.Logf("attempt %d: %v", attempt, err)
		}
		out[i] = s
	}
	direct, err := redisengine.New(rs.Client())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = direct.Close() })
	return out, direct, rs
}

// strangerClient is a Client whose engine names urls in that order (the
// first is its current server).
func strangerClient(t *testing.T, urls ...string) *distlock.Client {
	t.Helper()
	list := ""
	for i, u := range urls {
		if i > 0 {
			list += ","
		}
		list += u
	}
	e, err := remote.New(list)
	if err != nil {
		t.Fatal(err)
	}
	c := distlock.New(e)
	t.Cleanup(func() { _ = c.Close(); _ = e.Close() })
	return c
}

// metric is the value of one series (its whole name with labels, as
// /metrics writes it) on server s; -1 when s does not answer or lacks it.
func (s *procServer) metric(series string) float64 {
	resp, err := http.Get(s.URL() + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				return f
			}
		}
	}
	return -1
}

// outcome is a call's result and when it returned.
type outcome[T any] struct {
	v   T
	err error
	at  time.Time
}

// goCall runs fn in a goroutine of its own and returns the channel of its
// outcome.
func goCall[T any](fn func() (T, error)) <-chan outcome[T] {
	ch := make(chan outcome[T], 1)
	go func() {
		v, err := fn()
		ch <- outcome[T]{v, err, time.Now()}
	}()
	return ch
}

// TestStrangerReleaseThroughStoppedServer: a holder's release goes to its
// server just stopped (SIGSTOP: the request waits in the stopped process,
// unanswered). The release must go on through the other server (the
// outcome unknown, the other server asked whether the holder still holds,
// the release sent again for the Client's one-off owner), so that a waiter
// is granted at once, not when the hold lapses at its ttl; and when the
// stopped server continues, the release it still holds must not touch the
// new holder's grant.
func TestStrangerReleaseThroughStoppedServer(t *testing.T) {
	srvs, direct, _ := procServers(t, 2)
	a, b := srvs[0], srvs[1]
	holder := strangerClient(t, a.URL(), b.URL())
	waiter := strangerClient(t, b.URL(), a.URL())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	const ttl = 12 * time.Second
	l, err := holder.Acquire(ctx, "job", distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	waited := goCall(func() (*distlock.Lease, error) { return waiter.Acquire(ctx, "job", distlock.WithTTL(ttl)) })
	enginetest.WaitFor(t, 20*time.Second, "the waiter to queue", func() bool {
		info, err := direct.Inspect(ctx, "job")
		return err == nil && info.Waiters > 0
	})

	contA := a.pause()
	deadline := l.Deadline() // no renewal can confirm it later: A is the holder's current server
	start := time.Now()
	if err := l.Release(ctx); err != nil {
		t.Errorf("release through a stopped server, with another one up: %v (after %v)", err, time.Since(start).Round(time.Millisecond))
	}
	r := <-waited
	if r.err != nil {
		t.Fatalf("waiter: %v", r.err)
	}
	if !r.at.Before(deadline) {
		t.Errorf("the waiter was granted %v after the released lease's deadline: the hold lapsed at its ttl instead of being released", r.at.Sub(deadline).Round(time.Millisecond))
	}
	if r.v.Token() <= l.Token() {
		t.Fatalf("waiter's token %d not above the holder's %d", r.v.Token(), l.Token())
	}

	// The stopped server continues, with the holder's release in its
	// hands: the new holder keeps the lock, and its renewals go on.
	contA()
	strangerRenewed(t, r.v, ttl, "a renewal of the new holder after the continue")
	info, err := direct.Inspect(ctx, "job")
	if err != nil || !info.Held || info.Owner != r.v.Owner() || info.Token != r.v.Token() {
		t.Fatalf("Redis shows %+v, %v; want held by the waiter (token %d)", info, err, r.v.Token())
	}
	if err := r.v.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestStrangerAcquireReplayedByContinuedServer: an acquire sent to a
// stopped server goes on through the other (its attempt id makes the copy
// harmless) and is granted; the holder releases. When the stopped server
// continues, the acquire it still holds must not grant the lock to nobody.
// It did (every run): the release had deleted the lock with its attempt
// id, so the copy was a new grant to the released one-off owner, which
// nobody holds or renews, keeping the lock from everyone until its ttl
// (the Client's default 30 s). The server now refuses a request whose
// client closed its connection before the server read it
// (server/clientgone.go).
func TestStrangerAcquireReplayedByContinuedServer(t *testing.T) {
	srvs, direct, _ := procServers(t, 2)
	a, b := srvs[0], srvs[1]
	c := strangerClient(t, a.URL(), b.URL())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Inspect(ctx, "warm"); err != nil { // vets both servers' connections
		t.Fatal(err)
	}
	contA := a.pause()
	const ttl = 3 * time.Second
	l, err := c.TryAcquire(ctx, "job", distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	contA()
	// Whatever the continued server does with the acquire it held, the
	// lock must be free for another client now, through either server:
	// once the server has dropped it (or after 20 s, when it carried it
	// out instead).
	waitDropped(t, a, 1)
	info, err := direct.Inspect(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	if info.Held {
		t.Errorf("after the continue Redis shows the lock held by %s (token %d, ttl %v), a grant nobody holds (the lease, token %d, was released)", info.Owner, info.Token, info.TTL, l.Token())
	}
}

// TestStrangerSetThroughStoppedServer: sets (AcquireAll) through a server
// stopped mid-request. A set's release sent to the stopped server goes on
// through the other one (a waiting set is granted long before the
// released set's deadline, not when its holds lapse); a set asked for
// through the stopped server is granted through the other one within the
// call's time; and once the stopped server continues, whatever it still
// held lapses: the names are free again by a ttl.
func TestStrangerSetThroughStoppedServer(t *testing.T) {
	srvs, direct, _ := procServers(t, 2)
	a, b := srvs[0], srvs[1]
	holder := strangerClient(t, a.URL(), b.URL())
	waiter := strangerClient(t, b.URL(), a.URL())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	names := []string{"acct/a", "acct/b", "acct/c"}

	const ttl = 12 * time.Second
	set, err := holder.AcquireAll(ctx, names, distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	waited := goCall(func() (*distlock.LeaseSet, error) { return waiter.AcquireAll(ctx, names, distlock.WithTTL(ttl)) })
	enginetest.WaitFor(t, 20*time.Second, "the waiting set to queue", func() bool {
		info, err := direct.Inspect(ctx, names[0])
		return err == nil && info.Waiters > 0
	})
	contA := a.pause()
	deadline := set.Deadline()
	start := time.Now()
	if err := set.Release(ctx); err != nil {
		t.Errorf("set release through a stopped server, with another one up: %v (after %v)", err, time.Since(start).Round(time.Millisecond))
	}
	r := <-waited
	if r.err != nil {
		t.Fatalf("waiting set: %v", r.err)
	}
	if !r.at.Before(deadline) {
		t.Errorf("the waiting set was granted %v after the released set's deadline: its holds lapsed at their ttl", r.at.Sub(deadline).Round(time.Millisecond))
	}
	for _, n := range names {
		if r.v.Token(n) <= set.Token(n) {
			t.Errorf("%s: token %d not above the released set's %d", n, r.v.Token(n), set.Token(n))
		}
	}
	if err := r.v.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// A set asked for through the stopped server (a new client, whose
	// current server it is).
	const short = 3 * time.Second
	late := strangerClient(t, a.URL(), b.URL())
	others := []string{"pair/x", "pair/y"}
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	defer scancel()
	start = time.Now()
	s2, err := late.AcquireAll(sctx, others, distlock.WithTTL(short))
	if err != nil {
		t.Fatalf("a set through a stopped server, with another one up: %v (after %v)", err, time.Since(start).Round(time.Millisecond))
	}
	if err := s2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	contA()
	// The continued server must not carry out the set's acquire it held
	// (its client closed the connection: server/clientgone.go); were it
	// carried out all the same (a request the server had begun before it
	// stopped), the grant nobody holds must lapse by its ttl.
	enginetest.WaitFor(t, 3*short, "the names to be free after the continue", func() bool {
		for _, n := range append(others, names...) {
			info, err := direct.Inspect(ctx, n)
			if err != nil || info.Held {
				return false
			}
		}
		return true
	})
}

// TestStrangerHeldOpenWaitOnStoppedServer: an HTTP client's held-open
// acquire (wait_ms) waits in the lock's queue through a server that is
// then stopped; the client gives up and goes away (its connection closed)
// while the server is stopped, and the holder releases through the other
// server. When the stopped server continues, the wait it still holds open
// must not take the lock for nobody: the lock is free (a grant made for
// the gone client released at once), not held until a ttl runs out.
func TestStrangerHeldOpenWaitOnStoppedServer(t *testing.T) {
	srvs, direct, _ := procServers(t, 2)
	a, b := srvs[0], srvs[1]
	holder := strangerClient(t, b.URL(), a.URL())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	const ttl = 10 * time.Second
	l, err := holder.Acquire(ctx, "q", distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	hctx, hcancel := context.WithCancel(ctx)
	answered := make(chan error, 1)
	go func() {
		req, err := http.NewRequestWithContext(hctx, http.MethodPost, a.URL()+"/v1/locks/q/acquire",
			strings.NewReader(`{"wait_ms": 30000, "ttl_ms": 10000}`))
		if err == nil {
			var resp *http.Response
			if resp, err = http.DefaultClient.Do(req); err == nil {
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				err = fmt.Errorf("answered %d: %s", resp.StatusCode, data)
			}
		}
		answered <- err
	}()
	enginetest.WaitFor(t, 20*time.Second, "the held-open acquire to queue", func() bool {
		info, err := direct.Inspect(ctx, "q")
		return err == nil && info.Waiters > 0
	})
	contA := a.pause()
	hcancel() // the HTTP client gives up while its server is stopped
	if err := <-answered; !errors.Is(err, context.Canceled) {
		t.Fatalf("the held-open acquire: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	contA()
	// The continued server wakes with the wait in its hands (its queue
	// entry may have lapsed meanwhile, its client is gone). Once the wait
	// has ended there, as an acquire given up (the server's own count), the
	// lock must be free and stay free: anything granted for nobody would
	// hold it for 10s. A grant answered as such (A's count of grants, none
	// before) went to a client that had gone: its wait could be granted
	// before the server saw the close that waited in its socket.
	enginetest.WaitFor(t, 20*time.Second, "the continued server to end the wait it held", func() bool {
		return a.metric(`distlock_acquire_wait_seconds_count{outcome="failed"}`) >= 1 ||
			a.metric("distlock_acquisitions_total") >= 1
	})
	if n := a.metric("distlock_acquisitions_total"); n >= 1 {
		t.Fatalf("the continued server answered %v grant(s) to a client that had gone", n)
	}
	for range 20 {
		info, err := direct.Inspect(ctx, "q")
		if err != nil {
			t.Fatal(err)
		}
		if info.Held {
			t.Fatalf("after the continue the lock is held by %s (ttl %v): a grant for a client that went away", info.Owner, info.TTL)
		}
		time.Sleep(50 * time.Millisecond) // sampling the backend over a second
	}
}

// TestStrangerRestartSamePort: servers killed (SIGKILL) and started again
// on the same port, in turn, while a holder and a waiter that name both
// are attached. Each time, the holder's lease is renewed through the
// server left (confirmed by a renewal sent after the kill), the waiter
// keeps waiting, and a restarted server is used again once the other one
// dies: the waiter, queued through a server that was killed, is granted
// through the restarted one with a greater token, and its lease is renewed
// through each survivor in turn.
func TestStrangerRestartSamePort(t *testing.T) {
	srvs, direct, _ := procServers(t, 2)
	a, b := srvs[0], srvs[1]
	holder := strangerClient(t, a.URL(), b.URL())
	waiter := strangerClient(t, a.URL(), b.URL())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	const ttl = 3 * time.Second
	l, err := holder.Acquire(ctx, "r", distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	waited := goCall(func() (*distlock.Lease, error) { return waiter.Acquire(ctx, "r", distlock.WithTTL(ttl)) })
	enginetest.WaitFor(t, 20*time.Second, "the waiter to queue", func() bool {
		info, err := direct.Inspect(ctx, "r")
		return err == nil && info.Waiters > 0
	})
	stillWaiting := func(what string) {
		t.Helper()
		select {
		case r := <-waited:
			t.Fatalf("%s: the waiter returned while the lock was held: %v, %v", what, r.v, r.err)
		default:
		}
	}

	a.kill()
	strangerRenewed(t, l, ttl, "the holder's renewal through B after A's kill")
	a.start() // the same port
	b.kill()
	strangerRenewed(t, l, ttl, "the holder's renewal through the restarted A after B's kill")
	stillWaiting("after the kills")
	if info, err := direct.Inspect(ctx, "r"); err != nil || info.Owner != l.Owner() || info.Token != l.Token() || info.Waiters == 0 {
		t.Fatalf("Redis shows %+v, %v; want the holder (token %d) and a waiter", info, err, l.Token())
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("release through the restarted server: %v", err)
	}
	r := <-waited
	if r.err != nil {
		t.Fatalf("the waiter, queued through a server since killed: %v", r.err)
	}
	if r.v.Token() <= l.Token() {
		t.Fatalf("the waiter's token %d is not above the holder's %d", r.v.Token(), l.Token())
	}
	strangerRenewed(t, r.v, ttl, "the waiter's renewal through the restarted A")
	b.start()
	a.kill()
	strangerRenewed(t, r.v, ttl, "the waiter's renewal through the restarted B after A's second kill")
	if info, err := direct.Inspect(ctx, "r"); err != nil || info.Owner != r.v.Owner() || info.Token != r.v.Token() {
		t.Fatalf("Redis shows %+v, %v; want the waiter (token %d)", info, err, r.v.Token())
	}
	if err := r.v.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestStrangerThreeServersStopAndContinue: three servers on one Redis.
// A holder and two waiters name them all (the first waiter queued through
// A, the second through B); A is stopped (SIGSTOP) with the holder's
// renewal, the first waiter's heartbeat and its event stream in its hands,
// and continued only after the leases' ttl. Meanwhile the lock goes
// round through the other servers, each grant only after the previous
// lease ended, tokens increasing (in which order the waiters are served:
// see TestStrangerWaiterKeepsTurnThroughStoppedServer); after the continue,
// what A still held (a renewal, a heartbeat, a stream) changes nothing: the
// last holder keeps its lease and renewals, and once released the lock is
// free with nobody queued.
func TestStrangerThreeServersStopAndContinue(t *testing.T) {
	srvs, direct, _ := procServers(t, 3)
	a, b, c := srvs[0], srvs[1], srvs[2]
	holder := strangerClient(t, a.URL(), b.URL(), c.URL())
	w1 := strangerClient(t, a.URL(), b.URL(), c.URL())
	w2 := strangerClient(t, b.URL(), c.URL(), a.URL())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	const ttl = 2 * time.Second
	l, err := holder.Acquire(ctx, "t", distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	grants := make(chan strangerGrant, 2)
	strangerWait(t, ctx, w1, "t", ttl, grants, direct, 1, "first")
	strangerWait(t, ctx, w2, "t", ttl, grants, direct, 2, "second")

	contA := a.pause()
	stoppedAt := time.Now()
	strangerRenewed(t, l, ttl, "the holder's renewal through another server")
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	g1 := <-grants
	if g1.err != nil {
		t.Fatalf("the %s waiter: %v", g1.who, g1.err)
	}
	if g1.l.Token() <= l.Token() {
		t.Fatalf("the %s waiter's token %d is not above the holder's %d", g1.who, g1.l.Token(), l.Token())
	}
	select {
	case g := <-grants:
		t.Fatalf("the %s waiter returned while the %s holds: %v, %v", g.who, g1.who, g.l, g.err)
	default:
	}
	if err := g1.l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	g2 := <-grants
	if g2.err != nil {
		t.Fatalf("the %s waiter: %v", g2.who, g2.err)
	}
	if g2.l.Token() <= g1.l.Token() {
		t.Fatalf("the %s waiter's token %d is not above the %s's %d", g2.who, g2.l.Token(), g1.who, g1.l.Token())
	}
	if d := ttl - time.Since(stoppedAt); d > 0 {
		time.Sleep(d) // the fault's own length: A stays stopped past the leases' ttl
	}
	contA()
	strangerRenewed(t, g2.l, ttl, "a renewal of the last holder after the continue")
	if info, err := direct.Inspect(ctx, "t"); err != nil || info.Owner != g2.l.Owner() || info.Token != g2.l.Token() || info.Count != 1 {
		t.Fatalf("Redis shows %+v, %v; want the %s waiter once (token %d)", info, err, g2.who, g2.l.Token())
	}
	if err := g2.l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if info, err := direct.Inspect(ctx, "t"); err != nil || info.Held || info.Waiters != 0 {
		t.Fatalf("after the last release Redis shows %+v, %v; want free, nobody queued", info, err)
	}
}

// TestStrangerWaiterKeepsTurnThroughStoppedServer: two waiters queue, the
// first through server A, the second through B; A is stopped; the holder
// releases through B. The first waiter is alive and heartbeats through B,
// so it heads the queue and must be served first (with WithFair strictly:
// "first come, first served").
//
// Known defect: it is not. The queue entry records the wake-up channel of
// the engine it entered through (A's Redis engine: c:<waiter> in
// queue.lua), so the release reserves the lock for the first waiter for
// engine.ReserveTTL (250 ms) and publishes its wake-up where only the
// stopped server listens; its event stream hangs on A too, and its
// heartbeat, every WaiterTTL/3 (1 s), comes after the reservation lapsed:
// the next script drops the first waiter from the queue (a head that did
// not confirm) and reserves for the second, which is granted; the first
// re-enters at the back. Mending it needs the wake-up channel to follow
// the waiter (an attempt or heartbeat through another server records that
// server's channel, engine/redis's queue.lua) and the Engine to move its
// event streams off a server that stopped answering (engine/remote).
func TestStrangerWaiterKeepsTurnThroughStoppedServer(t *testing.T) {
	if os.Getenv("DISTLOCK_STRANGER_KNOWN") == "" {
		t.Skip("known defect: a waiter queued through a server that then stops loses its turn to a later waiter (set DISTLOCK_STRANGER_KNOWN=1 to run)")
	}
	srvs, direct, _ := procServers(t, 2)
	a, b := srvs[0], srvs[1]
	holder := strangerClient(t, b.URL(), a.URL())
	w1 := strangerClient(t, a.URL(), b.URL())
	w2 := strangerClient(t, b.URL(), a.URL())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const ttl = 2 * time.Second
	l, err := holder.Acquire(ctx, "turn", distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	grants := make(chan strangerGrant, 2)
	strangerWait(t, ctx, w1, "turn", ttl, grants, direct, 1, "first", distlock.WithFair())
	strangerWait(t, ctx, w2, "turn", ttl, grants, direct, 2, "second", distlock.WithFair())
	defer a.pause()()
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	g := <-grants
	if g.err != nil {
		t.Fatal(g.err)
	}
	defer g.l.Release(ctx)
	if g.who != "first" {
		t.Fatalf("the %s waiter (token %d) was served before the first, which queued first and is alive", g.who, g.l.Token())
	}
}

// strangerGrant is a waiter's outcome.
type strangerGrant struct {
	who string
	l   *distlock.Lease
	err error
}

// strangerWait starts a waiting Acquire of name on c, sending its outcome
// to grants, and returns once the queue has at least queued entries.
func strangerWait(t *testing.T, ctx context.Context, c *distlock.Client, name string, ttl time.Duration, grants chan<- strangerGrant, direct engine.Engine, queued int, who string, opts ...distlock.Option) {
	t.Helper()
	go func() {
		l, err := c.Acquire(ctx, name, append([]distlock.Option{distlock.WithTTL(ttl)}, opts...)...)
		grants <- strangerGrant{who, l, err}
	}()
	enginetest.WaitFor(t, 20*time.Second, "the "+who+" waiter to queue", func() bool {
		info, err := direct.Inspect(ctx, name)
		return err == nil && info.Waiters >= queued
	})
}

// strangerRenewed waits for a renewal of l sent from now on and confirmed
// (its deadline a ttl, less the drift, after now), failing the test if l
// ends first.
func strangerRenewed(t *testing.T, l *distlock.Lease, ttl time.Duration, what string) {
	t.Helper()
	after := time.Now()
	enginetest.WaitFor(t, 3*ttl, what, func() bool {
		if err := l.Err(); err != nil {
			t.Fatalf("%s: the lease ended: %v", what, err)
		}
		return l.Deadline().After(after.Add(ttl - engine.Drift(ttl)))
	})
}

// TestStrangerSharedReleaseThroughStoppedServer: a semaphore's permits and
// an RW lock's write side, taken through A, are released while A is
// stopped: each release goes on through B (asked whether the holder still
// holds its shared lock), so a waiter of each, queued through B, is granted
// at once rather than when the hold lapses; the other holder of the
// semaphore keeps its permit; after the continue the releases A held
// change nothing.
func TestStrangerSharedReleaseThroughStoppedServer(t *testing.T) {
	srvs, direct, _ := procServers(t, 2)
	a, b := srvs[0], srvs[1]
	holder := strangerClient(t, a.URL(), b.URL())
	other := strangerClient(t, b.URL(), a.URL())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	const ttl = 12 * time.Second
	sem, err := holder.Semaphore("pool", 3).Acquire(ctx, distlock.WithWeight(2), distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	keep, err := other.Semaphore("pool", 3).Acquire(ctx, distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	wr, err := holder.RWMutex("table").Lock(ctx, distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	semWait := make(chan strangerGrant, 1)
	go func() {
		l, err := other.Semaphore("pool", 3).Acquire(ctx, distlock.WithWeight(2), distlock.WithTTL(ttl))
		semWait <- strangerGrant{"semaphore", l, err}
	}()
	rwWait := make(chan strangerGrant, 1)
	go func() {
		l, err := other.RWMutex("table").RLock(ctx, distlock.WithTTL(ttl))
		rwWait <- strangerGrant{"reader", l, err}
	}()
	for _, n := range []string{"pool", "table"} {
		enginetest.WaitFor(t, 20*time.Second, "a waiter of "+n+" to queue", func() bool {
			info, err := direct.Inspect(ctx, n)
			return err == nil && info.Waiters > 0
		})
	}
	contA := a.pause()
	for _, l := range []*distlock.Lease{sem, wr} {
		deadline := l.Deadline()
		start := time.Now()
		if err := l.Release(ctx); err != nil {
			t.Errorf("%s: release through a stopped server, with another one up: %v (after %v)", l.Name(), err, time.Since(start).Round(time.Millisecond))
		}
		var g strangerGrant
		if l == sem {
			g = <-semWait
		} else {
			g = <-rwWait
		}
		if g.err != nil {
			t.Fatalf("%s waiter: %v", g.who, g.err)
		}
		if !time.Now().Before(deadline) {
			t.Errorf("the %s waiter was granted after the released lease's deadline: the hold lapsed at its ttl", g.who)
		}
		if g.l.Token() <= l.Token() {
			t.Errorf("the %s waiter's token %d is not above the released lease's %d", g.who, g.l.Token(), l.Token())
		}
		defer g.l.Release(ctx)
	}
	contA()
	strangerRenewed(t, keep, ttl, "a renewal of the semaphore's other holder after the continue")
	info, err := direct.Inspect(ctx, "pool")
	if err != nil {
		t.Fatal(err)
	}
	used := 0
	for _, h := range info.Holders {
		used += h.Weight
	}
	if len(info.Holders) != 2 || used != 3 {
		t.Fatalf("after the continue the semaphore's holders are %+v; want the other holder's permit and the waiter's two", info.Holders)
	}
}

// TestStrangerMixedKindsAcrossServers: one name is one kind across the
// servers of one backend. A mutex taken through A refuses a semaphore and
// an RW lock asked through B (at once, even for a waiting call: the kind
// error, not contention); a semaphore through B refuses a mutex and an RW
// lock through A; Inspect through either server describes each the same;
// a force-release of the mutex through B tells its holder (a client of A)
// taken over, and the name then takes the other kind.
func TestStrangerMixedKindsAcrossServers(t *testing.T) {
	_, urls := twoServers(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ca := distlock.New(newRemote(t, urls[0]))
	cb := distlock.New(newRemote(t, urls[1]))
	defer ca.Close()
	defer cb.Close()

	m, err := ca.Acquire(ctx, "mixed", distlock.WithTTL(1500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, distlock.ErrInvalidArgument) || errors.Is(err, distlock.ErrLocked) {
			t.Fatalf("%s: %v; want the kind refusal (ErrInvalidArgument)", what, err)
		}
	}
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	start := time.Now()
	_, err = cb.Semaphore("mixed", 2).Acquire(wctx)
	wcancel()
	refused("a waiting semaphore acquire through B of a mutex held through A", err)
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the kind refusal came after %v, not at once", d)
	}
	_, err = cb.RWMutex("mixed").TryRLock(ctx)
	refused("an RW lock through B of a mutex held through A", err)

	sem, err := cb.Semaphore("sem", 2).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sem.Release(ctx)
	_, err = ca.TryAcquire(ctx, "sem")
	refused("a mutex through A of a semaphore held through B", err)
	_, err = ca.RWMutex("sem").TryLock(ctx)
	refused("an RW lock through A of a semaphore held through B", err)

	for _, n := range []string{"mixed", "sem"} {
		ia, err := ca.Inspect(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		ib, err := cb.Inspect(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if ia.Held != ib.Held || ia.Kind != ib.Kind || ia.Token != ib.Token || !ia.Held {
			t.Fatalf("%s: Inspect through A %+v, through B %+v", n, ia, ib)
		}
	}

	held, err := cb.ForceRelease(ctx, "mixed")
	if err != nil || !held {
		t.Fatalf("force-release through B = %v, %v", held, err)
	}
	select {
	case <-m.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the holder of A was not told of the force-release through B")
	}
	var lost *distlock.LostError
	if !errors.As(m.Err(), &lost) || lost.Cause != distlock.TakenOver {
		t.Fatalf("the mutex holder's loss: %v; want taken over", m.Err())
	}
	s, err := cb.Semaphore("mixed", 2).TryAcquire(ctx)
	if err != nil {
		t.Fatalf("a semaphore of the name once the mutex was force-released: %v", err)
	}
	if s.Token() <= m.Token() {
		t.Fatalf("the semaphore's token %d is not above the force-released mutex's %d", s.Token(), m.Token())
	}
	_ = s.Release(ctx)
}

// TestStrangerLatchCountDownReplayedByContinuedServer: a CountDown sent
// to a stopped server goes on through the other one (its call id makes the
// copy count once), another CountDown follows; when the stopped server
// continues, the copy it still holds must not count again: the latch
// counts the calls made, no fewer left than the calls that did not come.
// It did count again (every run), opening a latch of 3 after two calls:
// Redis remembers the last call id only, and another call had come between.
// The server now refuses a request whose client closed its connection
// before the server read it (server/clientgone.go).
func TestStrangerLatchCountDownReplayedByContinuedServer(t *testing.T) {
	srvs, _, _ := procServers(t, 2)
	a, b := srvs[0], srvs[1]
	x := strangerClient(t, a.URL(), b.URL())
	y := strangerClient(t, b.URL(), a.URL())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if ok, err := x.CountDownLatch("ready").TrySetCount(ctx, 3); err != nil || !ok {
		t.Fatalf("TrySetCount = %v, %v", ok, err)
	}
	contA := a.pause()
	cctx, ccancel := context.WithTimeout(ctx, 4*time.Second) // a caller's deadline: A gets its share, then B
	err := x.CountDownLatch("ready").CountDown(cctx)
	ccancel()
	if err != nil {
		t.Fatalf("CountDown through a stopped server, with another one up: %v", err)
	}
	if err := y.CountDownLatch("ready").CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := y.CountDownLatch("ready").Count(ctx); err != nil || n != 1 {
		t.Fatalf("Count after two CountDowns of 3 = %d, %v", n, err)
	}
	contA()
	waitDropped(t, a, 1)
	if n, err := y.CountDownLatch("ready").Count(ctx); err != nil || n != 1 {
		t.Fatalf("Count after the continue = %d, %v; want 1: two calls counted down a latch of 3, the copy the stopped server held counted again", n, err)
	}
}

// TestStrangerForceReleaseReplayedByContinuedServer: an administrator's
// force-release sent to a stopped server is not sent on (a copy could
// free a holder granted since): it fails within the call's time. The
// holder releases, another client is granted through the other server;
// when the stopped server continues, the force-release it still holds
// must not free that new holder (whose lease would read held until its
// next renewal while a third client could be granted).
func TestStrangerForceReleaseReplayedByContinuedServer(t *testing.T) {
	srvs, direct, _ := procServers(t, 2)
	a, b := srvs[0], srvs[1]
	admin := strangerClient(t, a.URL(), b.URL())
	c := strangerClient(t, b.URL(), a.URL())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := admin.Inspect(ctx, "warm"); err != nil {
		t.Fatal(err)
	}
	const ttl = 3 * time.Second
	first, err := c.Acquire(ctx, "f", distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	contA := a.pause()
	fctx, fcancel := context.WithTimeout(ctx, 2*time.Second)
	_, err = admin.ForceRelease(fctx, "f")
	fcancel()
	if err == nil {
		t.Fatal("a force-release through a stopped server reported done")
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	second, err := c.Acquire(ctx, "f", distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	contA()
	strangerRenewed(t, second, ttl, "a renewal of the new holder after the continue")
	if info, err := direct.Inspect(ctx, "f"); err != nil || info.Owner != second.Owner() || info.Token != second.Token() {
		t.Fatalf("Redis shows %+v, %v; want the new holder (token %d)", info, err, second.Token())
	}
	_ = second.Release(ctx)
}

// TestStrangerEveryNamedServerStopped: a holder names A and B, a waiter
// C; A and B are both stopped with the holder's renewals in their hands.
// The holder is told of the loss by its deadline (no renewal confirmed),
// before the waiter, through C, is granted at the lock's expiry in Redis;
// when A and B continue, the renewals they held revive nothing: the holder
// stays lost, the waiter keeps the lock and its renewals.
func TestStrangerEveryNamedServerStopped(t *testing.T) {
	srvs, direct, _ := procServers(t, 3)
	a, b, c := srvs[0], srvs[1], srvs[2]
	holder := strangerClient(t, a.URL(), b.URL())
	waiter := strangerClient(t, c.URL())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const ttl = 2 * time.Second
	l, err := holder.Acquire(ctx, "all", distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	grants := make(chan strangerGrant, 1)
	strangerWait(t, ctx, waiter, "all", ttl, grants, direct, 1, "waiter")
	contA, contB := a.pause(), b.pause()
	g := <-grants
	if g.err != nil {
		t.Fatalf("the waiter through C: %v", g.err)
	}
	if l.Err() == nil {
		t.Fatalf("the waiter was granted (token %d) while the holder's lease reads held (deadline %v from now)", g.l.Token(), time.Until(l.Deadline()))
	}
	var lost *distlock.LostError
	if !errors.As(l.Err(), &lost) || lost.Cause != distlock.Unreachable && lost.Cause != distlock.Expired {
		t.Fatalf("the holder's loss: %v; want unreachable or expired", l.Err())
	}
	if g.l.Token() <= l.Token() {
		t.Fatalf("the waiter's token %d is not above the holder's %d", g.l.Token(), l.Token())
	}
	lostDeadline := l.Deadline()
	contA()
	contB()
	strangerRenewed(t, g.l, ttl, "a renewal of the waiter after the continue")
	if err := l.Err(); err == nil || !l.Deadline().Equal(lostDeadline) {
		t.Fatalf("the lost holder after the continue: %v, deadline moved by %v", err, l.Deadline().Sub(lostDeadline))
	}
	if info, err := direct.Inspect(ctx, "all"); err != nil || info.Owner != g.l.Owner() || info.Token != g.l.Token() {
		t.Fatalf("Redis shows %+v, %v; want the waiter (token %d)", info, err, g.l.Token())
	}
	_ = g.l.Release(ctx)
}

// TestStrangerLatchWaitThroughStoppedServer: a latch's waiter, whose
// event stream is open on its current server, learns of the count's zero
// (counted down through the other server) soon after that server is
// stopped: its stream, silent for a few of the heartbeats the server
// announced, is taken as dead, and the re-check and the new stream go to
// the other server. It took 81 s before (the 45 s idle timeout of 15 s
// heartbeats, then a stream opened again on the stopped server, then the
// count read there for half the Wait's time).
func TestStrangerLatchWaitThroughStoppedServer(t *testing.T) {
	srvs, direct, _ := procServers(t, 2)
	a, b := srvs[0], srvs[1]
	// The waiter's reads of the count are seen answered, so that A stops
	// only after Wait's first read (a read hung on A would wait out its
	// share of Wait's time there: not what this test is about).
	reads := make(chan struct{}, 16)
	rt := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err == nil && req.Method == http.MethodGet && strings.HasPrefix(req.URL.Path, "/v1/latches/") {
			select {
			case reads <- struct{}{}:
			default:
			}
		}
		return resp, err
	})
	we, err := remote.New(a.URL()+","+b.URL(), remote.WithHTTPClient(&http.Client{Transport: rt}))
	if err != nil {
		t.Fatal(err)
	}
	w := distlock.New(we)
	t.Cleanup(func() { _ = w.Close(); _ = we.Close() })
	c := strangerClient(t, b.URL(), a.URL())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if ok, err := c.CountDownLatch("gate").TrySetCount(ctx, 1); !ok || err != nil {
		t.Fatalf("TrySetCount = %v, %v", ok, err)
	}
	done := make(chan error, 1)
	go func() { done <- w.CountDownLatch("gate").Wait(ctx) }()
	enginetest.WaitFor(t, 20*time.Second, "the waiter's stream to subscribe", func() bool {
		info, err := direct.Inspect(ctx, "gate")
		return err == nil && info.Subscribers > 0
	})
	select {
	case <-reads: // Wait subscribes first, then reads the count
	case <-time.After(20 * time.Second):
		t.Fatal("Wait did not read the count")
	}
	defer a.pause()()
	if err := c.CountDownLatch("gate").CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	const bound = 30 * time.Second // three 5 s heartbeats of silence, and a busy machine's slack
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Wait: %v", err)
		}
		t.Logf("Wait returned %v after the count's zero", time.Since(start).Round(time.Millisecond))
	case <-time.After(bound):
		t.Fatalf("Wait, its stream on a stopped server, still waits %v after the count's zero (counted through the other server)", bound)
	}
}

// roundTripFunc is an http.RoundTripper of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// waitDropped waits until server s has dropped at least n requests whose
// client had gone (distlock_requests_dropped_total), or 20 s: a continued
// server acting on the requests it held. The caller then checks that what
// the server did with them changed nothing; a server that carried one out
// instead is caught by that check after the 20 s.
func waitDropped(t *testing.T, s *procServer, n float64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for s.metric("distlock_requests_dropped_total") < n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // polling the server's counter
	}
}

//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/redistest"
)

// lockedBuffer is a buffer safe for the server goroutine's writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// served is a distlock serve running in the test process.
type served struct {
	url    string
	stderr *lockedBuffer
	stop   func() int // stops it (as SIGTERM would) and returns its exit code
}

// serveIn runs distlock serve with args (and env) in the test process.
func serveIn(t *testing.T, env map[string]string, args ...string) *served {
	t.Helper()
	stderr := &lockedBuffer{}
	a := &app{stdin: strings.NewReader(""), stdout: &lockedBuffer{}, stderr: stderr,
		getenv: func(k string) string { return env[k] }}
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	code := make(chan int, 1)
	go func() {
		code <- a.serve(ctx, append([]string{"--listen", "127.0.0.1:0"}, args...), func(u string) { urls <- u })
	}()
	var s served
	select {
	case s.url = <-urls:
	case c := <-code:
		cancel()
		t.Fatalf("distlock serve exited %d: %s", c, stderr)
	case <-time.After(patience):
		cancel()
		t.Fatalf("distlock serve did not start: %s", stderr)
	}
	var once sync.Once
	exit := -1
	s.stderr = stderr
	s.stop = func() int {
		once.Do(func() {
			cancel()
			select {
			case exit = <-code:
			case <-time.After(patience):
				t.Errorf("distlock serve did not stop: %s", stderr)
			}
		})
		return exit
	}
	t.Cleanup(func() { s.stop() })
	return &s
}

// TestServeEmbedded: distlock serve with no flags runs on the embedded
// engine, and the CLI's commands work against it through DISTLOCK_SERVER.
func TestServeEmbedded(t *testing.T) {
	t.Parallel()
	s := serveIn(t, nil)
	if err := s.stderr.String(); !strings.Contains(err, "engine: embedded") || !strings.Contains(err, "die with it") {
		t.Fatalf("start-up message: %s", err)
	}
	c := cli{env: map[string]string{"DISTLOCK_SERVER": s.url}}

	r := c.run(t, "acquire", "--json", "--ttl", "1m", "--metadata", "from the test", "job")
	expect(t, r, 0)
	var grant struct {
		Owner string `json:"owner"`
		Fence uint64 `json:"fence"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &grant); err != nil || grant.Owner == "" || grant.Fence == 0 {
		t.Fatalf("acquire --json: %v %v", err, r)
	}
	expect(t, c.run(t, "acquire", "--wait", "0", "job"), exitBusy, "held by another owner")
	r = c.run(t, "status", "--json", "job")
	expect(t, r, 0, `"held": true`, "from the test", grant.Owner)
	expect(t, c.run(t, "list"), 0, "job", "from the test")
	expect(t, c.run(t, "extend", "--ttl", "2m", "job", grant.Owner), 0, "extended")
	expect(t, c.run(t, "release", "job", "not-the-owner"), exitLost)
	expect(t, c.run(t, "release", "job", grant.Owner), 0, "released")
	expect(t, c.run(t, "status", "job"), 0, "free")

	// run: the command gets the lock's fencing token, higher than before.
	r = c.run(t, "run", "--wait", "5s", "job", "--", "sh", "-c", `echo "fence=$DISTLOCK_FENCE"`)
	expect(t, r, 0, "fence=")
	var fence uint64
	if _, err := fmtSscan(r.stdout, "fence=%d", &fence); err != nil || fence <= grant.Fence {
		t.Fatalf("run's fence %d (%v) not above %d: %v", fence, err, grant.Fence, r)
	}

	expect(t, c.run(t, "acquire", "stuck"), 0)
	expect(t, c.run(t, "force-release", "--yes", "stuck"), 0, "released")

	if code := s.stop(); code != 0 {
		t.Fatalf("serve exited %d: %s", code, s.stderr)
	}
	if !strings.Contains(s.stderr.String(), "locks are dropped") {
		t.Fatalf("no word about the dropped locks at shutdown: %s", s.stderr)
	}
	expect(t, c.run(t, "status", "job"), exitBackend, "cannot reach the distlock server")
}

// TestServeTokens: with tokens, commands need DISTLOCK_TOKEN, and roles
// apply (force-release is admin only).
func TestServeTokens(t *testing.T) {
	t.Parallel()
	const write, admin = "w-0123456789abcdef", "a-0123456789abcdef"
	s := serveIn(t, map[string]string{"DISTLOCK_TOKENS": "write:" + write + ",admin:" + admin})
	if !strings.Contains(s.stderr.String(), "authentication: 2 bearer token(s)") {
		t.Fatalf("start-up message: %s", s.stderr)
	}
	env := func(tok string) cli {
		return cli{env: map[string]string{"DISTLOCK_SERVER": s.url, "DISTLOCK_TOKEN": tok}}
	}
	expect(t, env("").run(t, "status", "x"), exitUsage, "refused the token")
	expect(t, env("wrong-token-123456789").run(t, "status", "x"), exitUsage, "refused the token")
	expect(t, env(write).run(t, "acquire", "x"), 0, "DISTLOCK_FENCE=")
	expect(t, env(write).run(t, "force-release", "--yes", "x"), exitUsage, "refused the token", "forbidden")
	expect(t, env(admin).run(t, "force-release", "--yes", "x"), 0, "released")
}

// TestServeReadTimeout: --read-timeout reaches the server: a request whose
// body stops short is answered and its connection closed within it (plus
// slack for a busy machine), not after the default 10s.
func TestServeReadTimeout(t *testing.T) {
	t.Parallel()
	s := serveIn(t, nil, "--read-timeout", "200ms")
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	_ = conn.SetReadDeadline(start.Add(time.Minute))
	if _, err := io.WriteString(conn, "POST /v1/locks/x/acquire HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(conn)
	if took := time.Since(start); err != nil || took > 200*time.Millisecond+3*time.Second || !strings.HasPrefix(string(got), "HTTP/1.1 400") {
		t.Fatalf("after %v: %q, %v; want a 400 answer and the connection closed within 200ms (and slack)", took, got, err)
	}
}

// TestServeUsage: flag errors, and no public address without tokens.
func TestServeUsage(t *testing.T) {
	t.Parallel()
	c := cli{}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--redis", "redis://127.0.0.1:1", "--redlock", "redis://127.0.0.1:1"}, "exclude each other"},
		{[]string{"serve", "--tls-cert", "c.pem"}, "go together"},
		{[]string{"serve", "--listen", "0.0.0.0:7420"}, "not a loopback address"},
		{[]string{"serve", "--listen", "192.0.2.1:7420"}, "--insecure-public"},
		{[]string{"serve", "--max-waiters", "0"}, "must be positive"},
		{[]string{"serve", "--read-timeout", "0s"}, "--read-timeout must be positive"},
		{[]string{"serve", "extra"}, "unexpected argument"},
		{[]string{"serve", "--redlock", "redis://127.0.0.1:1,,redis://127.0.0.1:2"}, "empty URL"},
	} {
		expect(t, c.run(t, tc.args...), exitUsage, tc.want)
	}
	expect(t, c.run(t, "serve", "--redis", "redis://"+closedPort(t)), exitBackend, "cannot reach Redis")
	expect(t, cli{env: map[string]string{"DISTLOCK_TOKENS": "admin:short"}}.run(t, "serve"), exitUsage, "at least 16")
	expect(t, cli{env: map[string]string{"DISTLOCK_SERVER": "locks:7420"}}.run(t, "status", "x"), exitUsage, "from DISTLOCK_SERVER: want http://host:port")
	expect(t, cli{env: map[string]string{"DISTLOCK_SERVER": "http://" + closedPort(t)}}.run(t, "status", "x"), exitBackend, "cannot reach the distlock server")
	expect(t, cli{env: map[string]string{"DISTLOCK_SERVER": "http://127.0.0.1:1", "DISTLOCK_REDIS": "redis://127.0.0.1:1"}}.run(t, "status", "x"),
		exitUsage, "both DISTLOCK_REDIS and DISTLOCK_SERVER")
}

// TestServeRedis: on Redis the server releases nothing when it stops; on
// Redlock it serves a quorum.
func TestServeRedis(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	s := serveIn(t, nil, "--redis", rs.URL())
	c := cli{env: map[string]string{"DISTLOCK_SERVER": s.url}}
	r := c.run(t, "acquire", "--ttl", "1m", "kept")
	expect(t, r, 0)
	if code := s.stop(); code != 0 || !strings.Contains(s.stderr.String(), "nothing was released") {
		t.Fatalf("serve exited %d: %s", code, s.stderr)
	}
	expect(t, cli{redis: rs.URL()}.run(t, "status", "kept"), 0, "held")

	nodes := redistest.StartN(t, 3)
	s = serveIn(t, nil, "--redlock", nodes[0].URL()+","+nodes[1].URL()+","+nodes[2].URL())
	if !strings.Contains(s.stderr.String(), "Redlock over 3 Redis nodes") {
		t.Fatalf("start-up message: %s", s.stderr)
	}
	c = cli{env: map[string]string{"DISTLOCK_SERVER": s.url}}
	expect(t, c.run(t, "run", "--wait", "0", "q", "--", "true"), 0)
}

// fmtSscan finds format's pattern in the lines of s.
func fmtSscan(s, format string, args ...any) (int, error) {
	var err error
	for _, line := range strings.Split(s, "\n") {
		var n int
		if n, err = fmt.Sscanf(line, format, args...); err == nil {
			return n, nil
		}
	}
	return 0, err
}

package server_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
	"github.com/distlock/distlock/server/api"
)

// TestShutdownEmbedded: waiting requests are answered shutting_down, event
// streams end, new connections are refused, and the log says that the
// embedded engine's locks are dropped.
func TestShutdownEmbedded(t *testing.T) {
	s := start(t, nil)
	want(t, "holder", call(t, "POST", lockURL(s, "s", "acquire"), "", map[string]any{"ttl_ms": 60000}), 200, "")
	got := make(chan reply, 1)
	go func() { got <- call(t, "POST", lockURL(s, "s", "acquire"), "", map[string]any{"wait_ms": 30000}) }()
	resp, err := http.Get(lockURL(s, "s", "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	if line, _ := rd.ReadString('\n'); line != "event: ready\n" {
		t.Fatalf("stream began with %q", line)
	}
	waitFor(t, patience, "the waiter and the stream", func() bool {
		return waiters(t, s.eng, "s") == 1 && subscribers(t, s.eng, "s") == 2
	})

	// The waiter's budget (30s) is shorter than Shutdown's: a Shutdown
	// that waited for it would see it answered locked, not shutting_down.
	ctx, cancel := context.WithTimeout(context.Background(), 2*patience)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-got
	want(t, "waiter at shutdown", r, 503, api.CodeShuttingDown)
	if r.header.Get("Retry-After") == "" {
		t.Fatal("shutting_down without Retry-After")
	}
	rest, _ := readAll(rd)
	if !strings.Contains(rest, "event: shutdown") {
		t.Fatalf("event stream ended without a shutdown event: %q", rest)
	}
	if _, err := http.Get(s.url + "/healthz"); err == nil {
		t.Fatal("the server still accepts connections")
	}
	logs := s.logs.String()
	if !strings.Contains(logs, "locks are dropped") || !strings.Contains(logs, "held=1") {
		t.Fatalf("no clear word about the dropped locks: %s", logs)
	}
}

// TestShutdownRedisKeepsLocks: on Redis a server's shutdown releases
// nothing: the clients' locks stay theirs.
func TestShutdownRedisKeepsLocks(t *testing.T) {
	rs := redistest.Start(t)
	eng, err := redisengine.New(rs.Client())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	s := start(t, eng)
	r := call(t, "POST", lockURL(s, "keep", "acquire"), "", map[string]any{"owner": "client-1", "ttl_ms": 60000})
	want(t, "acquire", r, 200, "")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	info, err := eng.Inspect(ctx, "keep")
	if err != nil || !info.Held || info.Owner != "client-1" {
		t.Fatalf("after shutdown the lock is %+v, %v; want still held by client-1", info, err)
	}
	if strings.Contains(s.logs.String(), "dropped") {
		t.Fatalf("a Redis server claims to drop locks: %s", s.logs.String())
	}
}

func readAll(rd *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		line, err := rd.ReadString('\n')
		b.WriteString(line)
		if err != nil {
			return b.String(), err
		}
	}
}

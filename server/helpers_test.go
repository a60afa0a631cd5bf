package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/internal/servertest"
	"github.com/distlock/distlock/server"
)

// testServer is a server on a free loopback port.
type testServer struct {
	*server.Server
	url  string
	eng  engine.Engine
	logs *syncBuffer
}

// start serves eng (a new embedded engine when nil) until the test ends.
func start(t *testing.T, eng engine.Engine, opts ...server.Option) *testServer {
	t.Helper()
	if eng == nil {
		mem := memory.New()
		t.Cleanup(func() { _ = mem.Close() })
		eng = mem
	}
	logs := &syncBuffer{}
	opts = append([]server.Option{server.WithLogger(slog.New(slog.NewTextHandler(logs, nil)))}, opts...)
	srv, url := servertest.Start(t, eng, false, opts...)
	return &testServer{Server: srv, url: url, eng: eng, logs: logs}
}

// reply is an answer: its status, headers and body.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// json decodes the body into a map.
func (r reply) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("answer %d is not JSON: %v: %s", r.status, err, r.body)
	}
	return m
}

// code returns the error code of an error answer.
func (r reply) code(t *testing.T) string {
	t.Helper()
	e, _ := r.json(t)["error"].(map[string]any)
	if e == nil {
		t.Fatalf("answer %d has no error object: %s", r.status, r.body)
	}
	code, _ := e["code"].(string)
	return code
}

// errField returns a field of the error object.
func (r reply) errField(t *testing.T, f string) any {
	t.Helper()
	e, _ := r.json(t)["error"].(map[string]any)
	return e[f]
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

// call sends a request; body is JSON-encoded unless it is a string.
func call(t *testing.T, method, url, token string, body any) reply {
	t.Helper()
	return callCtx(t, context.Background(), method, url, token, body)
}

func callCtx(t *testing.T, ctx context.Context, method, url, token string, body any) reply {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: data}
}

// want fails the test unless r has the status (and, for errors, the code).
func want(t *testing.T, what string, r reply, status int, code string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: HTTP %d, want %d: %s", what, r.status, status, r.body)
	}
	if code != "" {
		if got := r.code(t); got != code {
			t.Fatalf("%s: code %q, want %q: %s", what, got, code, r.body)
		}
	}
}

// num reads a JSON number field as uint64 (exact for fencing tokens).
func num(t *testing.T, r reply, field string) uint64 {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatal(err)
	}
	var n uint64
	if err := json.Unmarshal(m[field], &n); err != nil {
		t.Fatalf("field %q of %s: %v", field, r.body, err)
	}
	return n
}

// patience bounds a test's wait for something that must happen (a waiter
// subscribing, an answer arriving): long enough that a starved machine does
// not fail the test, which asserts what happens, not how soon.
const patience = time.Minute

// waitFor polls cond until it holds, or fails the test when d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waiters returns the engine's waiter count of name: its queue's entries.
func waiters(t *testing.T, eng engine.Engine, name string) int {
	t.Helper()
	info, err := eng.Inspect(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return info.Waiters
}

// subscribers returns the engine's count of name's wake-up subscriptions
// (event streams, waiters' subscriptions).
func subscribers(t *testing.T, eng engine.Engine, name string) int {
	t.Helper()
	info, err := eng.Inspect(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return info.Subscribers
}

// syncBuffer is a bytes.Buffer safe for concurrent writes (the logs).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// mustAcquire acquires name through s's HTTP API with body, and fails the
// test unless it is granted.
func mustAcquire(t *testing.T, s *testServer, name string, body map[string]any) {
	t.Helper()
	want(t, "acquire "+name, call(t, "POST", lockURL(s, name, "acquire"), "", body), 200, "")
}

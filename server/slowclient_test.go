package server_test

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/server"
)

// The bounds of these tests, and the slack allowed on top of them for a
// busy machine (a test asserts the bound holds, never a speed).
const (
	slowBound = 200 * time.Millisecond
	slowSlack = 3 * time.Second
)

// slowTimeouts are the server's timeouts in these tests.
var slowTimeouts = server.Timeouts{Header: slowBound, Body: slowBound, Idle: slowBound}

// slowCase is what a slow or stalling client sends.
type slowCase struct {
	name string
	send string // the request, as far as the client gets
	// trickle: after send, the client sends a chunk of body every 20ms,
	// for ever: a body that never ends.
	trickle bool
	// want: the status line the answer starts with; empty when the
	// connection is closed without an answer.
	want string
}

func slowCases() []slowCase {
	const acquire = "POST /v1/locks/slow/acquire HTTP/1.1\r\nHost: x\r\n"
	const token = "Authorization: Bearer " + writeTok + "\r\n"
	const partial = "Content-Length: 1000\r\n\r\n{"
	const chunked = "Transfer-Encoding: chunked\r\n\r\n"
	return []slowCase{
		{name: "slow headers", send: acquire + token},
		{name: "partial body without a token", send: acquire + partial, want: "HTTP/1.1 401"},
		{name: "partial body with a valid token", send: acquire + token + partial, want: "HTTP/1.1 400"},
		{name: "endless body without a token", send: acquire + chunked, trickle: true, want: "HTTP/1.1 401"},
		{name: "endless body with a valid token", send: acquire + token + chunked, trickle: true, want: "HTTP/1.1 400"},
		{name: "idle keep-alive", send: "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", want: "HTTP/1.1 200"},
	}
}

// TestSlowClientsCutOff (issue 23): whatever a client sends — headers that
// never end, a body shorter than its Content-Length, a chunked body that
// never ends, with a valid token or none, or nothing after an answer — its
// connection is answered and closed (or closed) within the server's
// timeouts, and every goroutine the server spent on it ends.
func TestSlowClientsCutOff(t *testing.T) {
	srv := start(t, nil, server.WithTokens(tokens(t)), server.WithTimeouts(slowTimeouts))
	addr := strings.TrimPrefix(srv.url, "http://")
	base := runtime.NumGoroutine()

	const each = 10 // connections of each kind, at once
	var wg sync.WaitGroup
	for _, c := range slowCases() {
		for range each {
			wg.Go(func() {
				if err := slowClient(addr, c); err != nil {
					t.Errorf("%s: %v", c.name, err)
				}
			})
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	waitFor(t, 10*time.Second, "the server's goroutines to end with their connections", func() bool {
		return runtime.NumGoroutine() <= base
	})
}

// slowClient sends c to the server at addr, then reads until the server
// closes the connection. It fails unless that happens within the bound
// (plus slack), and with the answer c wants.
func slowClient(addr string, c slowCase) error {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	start := time.Now()
	// Past this the server has failed: the read gives up, not the server.
	_ = conn.SetReadDeadline(start.Add(slowBound + slowSlack + 10*time.Second))
	if _, err := io.WriteString(conn, c.send); err != nil {
		return err
	}
	answered := make(chan struct{})
	if c.trickle {
		go func() {
			t := time.NewTicker(20 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-answered:
					return
				case <-t.C:
				}
				if _, err := io.WriteString(conn, "1\r\nx\r\n"); err != nil {
					return
				}
			}
		}()
	}
	got, err := io.ReadAll(conn)
	close(answered)
	took := time.Since(start)
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("still open after %v (the bound is %v), having answered %q", took.Round(time.Millisecond), slowBound, firstLine(got))
	case took > slowBound+slowSlack:
		return fmt.Errorf("closed after %v: later than the bound %v plus %v of slack", took.Round(time.Millisecond), slowBound, slowSlack)
	case c.want == "" && len(got) > 0:
		return fmt.Errorf("answered %q, want the connection closed without an answer", firstLine(got))
	case c.want != "" && len(got) == 0 && !(c.trickle && err != nil):
		// (A connection reset by the server while the client still sends
		// may drop the answer on the client's side: closed is enough.)
		return fmt.Errorf("closed without an answer (%v), want %q", err, c.want)
	case len(got) > 0 && !strings.HasPrefix(string(got), c.want):
		return fmt.Errorf("answered %q, want %q", firstLine(got), c.want)
	case len(got) > 0 && c.want == "HTTP/1.1 400" && !strings.Contains(string(got), "body timeout of "+slowBound.String()):
		return fmt.Errorf("answered %q, want it to name the body timeout", got)
	}
	return nil
}

// firstLine returns the status line of an answer.
func firstLine(b []byte) string {
	line, _, _ := strings.Cut(string(b), "\r\n")
	return line
}

// TestWaitsOutliveBodyTimeout: a held-open acquire and a release-event
// stream are not cut off by the server's timeouts: their request arrived
// whole, and they wait beyond the bounds (here five times the body bound)
// and are answered.
func TestWaitsOutliveBodyTimeout(t *testing.T) {
	srv := start(t, nil, server.WithTimeouts(slowTimeouts))
	held := call(t, "POST", srv.url+"/v1/locks/held/acquire", "", map[string]any{"ttl_ms": 60000})
	want(t, "acquire", held, http.StatusOK, "")

	// A release-event stream, open from before the wait until after it.
	req, err := http.NewRequestWithContext(t.Context(), "GET", srv.url+"/v1/locks/held/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	events := bufio.NewScanner(resp.Body)
	nextEvent := func() string {
		for events.Scan() {
			if name, ok := strings.CutPrefix(events.Text(), "event: "); ok {
				return name
			}
		}
		t.Fatalf("the event stream ended: %v", events.Err())
		return ""
	}
	if ev := nextEvent(); ev != "ready" {
		t.Fatalf("first event %q, want ready", ev)
	}

	wait := 5 * slowBound
	r := call(t, "POST", srv.url+"/v1/locks/held/acquire", "", map[string]any{"wait_ms": wait.Milliseconds()})
	want(t, "a waiting acquire", r, http.StatusConflict, "locked")
	if waited := time.Duration(r.errField(t, "waited_ms").(float64)) * time.Millisecond; waited < wait {
		t.Fatalf("the wait was answered after %v, before its budget of %v", waited, wait)
	}

	rel := call(t, "POST", srv.url+"/v1/locks/held/release", "", map[string]any{"owner": held.json(t)["owner"]})
	want(t, "release", rel, http.StatusOK, "")
	if ev := nextEvent(); ev != "release" {
		t.Fatalf("event %q after the release, want release", ev)
	}
}

// TestTimeoutsRefused: a negative timeout is refused with an argument
// error, and no server is made.
func TestTimeoutsRefused(t *testing.T) {
	eng := memory.New()
	t.Cleanup(func() { _ = eng.Close() })
	for _, to := range []server.Timeouts{{Header: -1}, {Body: -time.Second}, {Idle: -time.Minute}} {
		srv, err := server.New(eng, server.WithTimeouts(to))
		var ae *distlock.ArgumentError
		if !errors.Is(err, distlock.ErrInvalidArgument) || !errors.As(err, &ae) || ae.Arg != "timeouts" || srv != nil {
			t.Errorf("%+v: server %v, error %v; want no server and an invalid timeouts argument", to, srv, err)
		}
	}
}

// TestSlowBodyOverHTTP2: over HTTPS with HTTP/2, where a request is a
// stream of a shared connection, a body that stops short is answered within
// the body timeout too, with a valid token or none. Only the body has the
// short bound here: the header timeout covers the TLS handshake, which a
// loaded machine can take longer than 200 ms for (the connection was then
// closed before the request: EOF), and the idle one the connection's reuse.
func TestSlowBodyOverHTTP2(t *testing.T) {
	cert, pool := selfSigned(t)
	srv := start(t, nil, server.WithTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}),
		server.WithTokens(tokens(t)), server.WithTimeouts(server.Timeouts{Header: slowSlack, Body: slowBound, Idle: slowSlack}))
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: slowBound + slowSlack + 10*time.Second}
	for _, tc := range []struct {
		token string
		want  int
	}{{writeTok, http.StatusBadRequest}, {"", http.StatusUnauthorized}} {
		body, stalled := io.Pipe() // "{", and then nothing, for ever
		go func() { _, _ = io.WriteString(stalled, "{") }()
		req, err := http.NewRequestWithContext(t.Context(), "POST", srv.url+"/v1/locks/slow/acquire", body)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = 1000
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		start := time.Now()
		resp, err := client.Do(req)
		took := time.Since(start)
		_ = stalled.Close()
		if err != nil {
			t.Fatalf("token %q: %v after %v", tc.token, err, took)
		}
		_ = resp.Body.Close()
		if resp.ProtoMajor != 2 || resp.StatusCode != tc.want || took > slowBound+slowSlack {
			t.Errorf("token %q: %s %d after %v; want HTTP/2 %d within %v (and slack)", tc.token, resp.Proto, resp.StatusCode, took, tc.want, slowBound)
		}
	}
}

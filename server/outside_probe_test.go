package server_test

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
	"github.com/distlock/distlock/server/api"
)

// Defects an outside tester found driving distlock serve over HTTP.

// sharedKinds are the acquire bodies of a holder of a whole shared lock,
// and the release body of its kind.
var sharedKinds = map[string]struct{ acquire, release map[string]any }{
	"semaphore": {map[string]any{"kind": "semaphore", "limit": 1}, map[string]any{"kind": "semaphore", "shared": true}},
	"rwlock":    {map[string]any{"kind": "rwlock", "mode": "write"}, map[string]any{"kind": "rwlock", "shared": true}},
}

// with is body with more fields.
func with(body map[string]any, kv ...any) map[string]any {
	out := make(map[string]any, len(body)+len(kv)/2)
	for k, v := range body {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// eventStream is a GET /v1/locks/{name}/events stream: its events' names,
// in order, on a channel (closed when the stream ends).
func eventStream(t *testing.T, s *testServer, name string) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", lockURL(s, name, "events"), nil)
	resp, err := http.DefaultClient.Do(req) // no timeout: a stream lasts; the test's end closes it

	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("events: HTTP %d", resp.StatusCode)
	}
	out := make(chan string, 16)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if ev, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				out <- ev
			}
		}
	}()
	return out
}

// nextEvent is the stream's next event, or a failure after patience.
func nextEvent(t *testing.T, events <-chan string, what string) string {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok {
			t.Fatalf("%s: the stream ended", what)
		}
		return ev
	case <-time.After(patience):
		t.Fatalf("%s: no event after %v", what, patience)
	}
	return ""
}

// TestStrangerSharedSelfWaitHearsRelease: a client that waits itself for
// a semaphore or an RW lock without a queue entry (a try with "waiting":
// true refused locked, then GET /v1/locks/{name}/events) hears the
// holder's release, on every engine: the embedded one, which publishes
// every release, and Redis, whose shared release wakes only its queue's
// head (it waited forever there, as on PostgreSQL and a quorum).
func TestStrangerSharedSelfWaitHearsRelease(t *testing.T) {
	engines := map[string]func(t *testing.T) engine.Engine{
		"memory": func(t *testing.T) engine.Engine { return nil },
		"redis": func(t *testing.T) engine.Engine {
			eng, err := redisengine.New(redistest.Start(t).Client())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = eng.Close() })
			return eng
		},
	}
	for backend, newEngine := range engines {
		t.Run(backend, func(t *testing.T) {
			s := start(t, newEngine(t))
			for kind, k := range sharedKinds {
				name := "self-wait-" + kind
				mustAcquire(t, s, name, with(k.acquire, "owner", "holder", "ttl_ms", 60000))
				events := eventStream(t, s, name)
				if ev := nextEvent(t, events, kind+": ready"); ev != api.EventReady {
					t.Fatalf("%s: first event %q", kind, ev)
				}
				want(t, kind+": the waiting try", call(t, "POST", lockURL(s, name, "acquire"), "", with(k.acquire, "owner", "waiter", "waiting", true)), 409, api.CodeLocked)
				want(t, kind+": release", call(t, "POST", lockURL(s, name, "release"), "", with(k.release, "owner", "holder")), 200, "")
				if ev := nextEvent(t, events, kind+": after the release"); ev != api.EventRelease {
					t.Fatalf("%s: event %q after the release, want release", kind, ev)
				}
				want(t, kind+": the try after the event", call(t, "POST", lockURL(s, name, "acquire"), "", with(k.acquire, "owner", "waiter")), 200, "")
			}
		})
	}
}

// TestStrangerNullBodyRefused: a JSON null body is bad input on every route
// that reads a JSON object (it decoded into the request unchanged: an
// acquire granted a 30 s lease to a random owner), answered 400
// invalid_argument with arg body, and changes nothing.
func TestStrangerNullBodyRefused(t *testing.T) {
	s := start(t, nil)
	paths := []string{
		"/v1/locks/n/acquire", "/v1/locks/n/extend", "/v1/locks/n/release", "/v1/locks/n/fence",
		"/v1/locks/n/metadata", "/v1/locks/n/leave", "/v1/locks/n/limit",
		"/v1/extend", "/v1/sets/acquire", "/v1/sets/release",
		"/v1/latches/n/set", "/v1/latches/n/countdown",
		"/v1/elections/n/campaign", "/v1/elections/n/proclaim", "/v1/elections/n/resign",
	}
	for _, body := range []string{"null", " null\n", "true", `"x"`, "1"} {
		for _, p := range paths {
			r := call(t, "POST", s.url+p, "", body)
			want(t, p+" "+body, r, 400, api.CodeInvalidArgument)
			if arg := r.errField(t, "arg"); arg != "body" {
				t.Fatalf("%s %q: arg %v, want body: %s", p, body, arg, r.body)
			}
		}
	}
	info, err := s.eng.Inspect(t.Context(), "n")
	if err != nil || info.Held || info.Waiters != 0 {
		t.Fatalf("after the refusals: %+v %v, want nothing held or queued", info, err)
	}
	if n, err := s.eng.(engine.Latcher).Count(t.Context(), "n"); n != 0 || err != nil {
		t.Fatalf("latch count after the refusals: %d %v, want 0", n, err)
	}
	// The empty object is still every field's default.
	want(t, "{}", call(t, "POST", lockURL(s, "n", "acquire"), "", "{}"), 200, "")
}

// TestStrangerForceReleaseOwnerNotHeldStatus: DELETE /v1/locks/{name}?owner=X
// when X holds nothing is not_held with its status, as every not_held
// answer: held_by_other while another owner holds the lock (and keeps
// it), missing when nobody does.
func TestStrangerForceReleaseOwnerNotHeldStatus(t *testing.T) {
	s := start(t, nil)
	mustAcquire(t, s, "m", map[string]any{"owner": "a"})
	mustAcquire(t, s, "sem", map[string]any{"owner": "a", "kind": "semaphore", "limit": 2})
	for _, tc := range []struct{ name, status string }{{"m", api.StatusHeldByOther}, {"sem", api.StatusHeldByOther}, {"free", api.StatusMissing}} {
		r := call(t, "DELETE", lockURL(s, tc.name, "")+"?owner=x", "", nil)
		want(t, "force-release x of "+tc.name, r, 409, api.CodeNotHeld)
		if st := r.errField(t, "status"); st != tc.status {
			t.Fatalf("%s: status %v, want %s: %s", tc.name, st, tc.status, r.body)
		}
	}
	for _, name := range []string{"m", "sem"} {
		if info, err := s.eng.Inspect(t.Context(), name); err != nil || !info.Held {
			t.Fatalf("%s after the refusal: %+v %v, want still held by a", name, info, err)
		}
	}
}

// sessionBound is an embedded engine with ZooKeeper's ttl rule: a ttl
// above its session timeout is refused by the engine (an
// *engine.ArgumentError with the engine's own name for it, "ttl"), in an
// acquire and per item in an extension.
type sessionBound struct {
	*memory.Engine
	session time.Duration
}

func (e sessionBound) check(ttl time.Duration) error {
	if ttl > e.session {
		return &engine.ArgumentError{Arg: "ttl", Reason: ttl.String() + " is longer than the session timeout " + e.session.String()}
	}
	return nil
}

func (e sessionBound) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	if err := e.check(r.TTL); err != nil {
		return engine.Grant{}, err
	}
	return e.Engine.Acquire(ctx, r)
}

func (e sessionBound) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	out := make([]engine.ExtendResult, len(rs))
	var send []engine.ExtendRequest
	var at []int
	for i, r := range rs {
		if err := e.check(r.TTL); err != nil && !r.Waiter {
			out[i].Err = err
			continue
		}
		send, at = append(send, r), append(at, i)
	}
	res, err := e.Engine.Extend(ctx, send)
	if err != nil {
		return nil, err
	}
	for j, i := range at {
		out[i] = res[j]
	}
	return out, nil
}

// TestStrangerEngineTTLRefusalNamesTTLMs: a ttl the engine refuses (as
// ZooKeeper refuses one above its session timeout) is answered with the
// request's field, ttl_ms (locks[i].ttl_ms in a batch extension), as the
// server's own ttl checks answer, not the engine's name for it; nothing
// changes.
func TestStrangerEngineTTLRefusalNamesTTLMs(t *testing.T) {
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	s := start(t, sessionBound{Engine: mem, session: 40 * time.Second})

	r := call(t, "POST", lockURL(s, "z", "acquire"), "", map[string]any{"owner": "a", "ttl_ms": 60000})
	want(t, "acquire", r, 400, api.CodeInvalidArgument)
	if arg, msg := r.errField(t, "arg"), r.errField(t, "message").(string); arg != "ttl_ms" || !strings.HasPrefix(msg, "invalid ttl_ms: ") {
		t.Fatalf("acquire: arg %v, message %q, want ttl_ms: %s", arg, msg, r.body)
	}
	if info, err := s.eng.Inspect(t.Context(), "z"); err != nil || info.Held {
		t.Fatalf("after the refused acquire: %+v %v", info, err)
	}

	mustAcquire(t, s, "z", map[string]any{"owner": "a", "ttl_ms": 30000})
	r = call(t, "POST", lockURL(s, "z", "extend"), "", map[string]any{"owner": "a", "ttl_ms": 60000})
	want(t, "extend", r, 400, api.CodeInvalidArgument)
	if arg := r.errField(t, "arg"); arg != "ttl_ms" {
		t.Fatalf("extend: arg %v, want ttl_ms: %s", arg, r.body)
	}

	r = call(t, "POST", s.url+"/v1/extend", "", map[string]any{"locks": []map[string]any{
		{"name": "z", "owner": "a", "ttl_ms": 30000},
		{"name": "z", "owner": "a", "ttl_ms": 60000},
	}})
	want(t, "batch extend", r, 200, "")
	results := r.json(t)["results"].([]any)
	if st := results[0].(map[string]any)["status"]; st != api.StatusExtended {
		t.Fatalf("batch item 0: %v, want extended: %s", st, r.body)
	}
	e1, _ := results[1].(map[string]any)["error"].(map[string]any)
	if e1 == nil || e1["code"] != api.CodeInvalidArgument || e1["arg"] != "locks[1].ttl_ms" {
		t.Fatalf("batch item 1: %v, want invalid_argument with arg locks[1].ttl_ms: %s", e1, r.body)
	}
	info, err := s.eng.Inspect(t.Context(), "z")
	if err != nil || !info.Held || info.TTL > 30*time.Second {
		t.Fatalf("after the refused extensions: %+v %v, want held with at most 30s left", info, err)
	}
}

// TestStrangerBadPathEscape: a request whose path has a bad percent-escape
// (/v1/locks/a%zz/acquire) never reaches the server's handler: net/http
// refuses its request line (url.ParseRequestURI) and answers a plain-text
// 400 itself, so the server cannot answer it in JSON; nothing changes.
func TestStrangerBadPathEscape(t *testing.T) {
	s := start(t, nil)
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("POST /v1/locks/a%zz/acquire HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 || strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("HTTP %d %q: net/http no longer answers a bad request line itself: answer it in JSON", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if info, err := s.eng.Inspect(t.Context(), "a%zz"); err != nil || info.Held {
		t.Fatalf("after the refusal: %+v %v", info, err)
	}
}

package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
	"github.com/distlock/distlock/server/api"
)

func lockURL(s *testServer, name, action string) string {
	u := s.url + "/v1/locks/" + url.PathEscape(name)
	if action != "" {
		u += "/" + action
	}
	return u
}

// TestLockLifecycle: acquire with a server-made owner, status, extend,
// release, and the answers after release.
func TestLockLifecycle(t *testing.T) {
	s := start(t, nil)
	r := call(t, "POST", lockURL(s, "jobs/nightly", "acquire"), "", map[string]any{"ttl_ms": 5000, "metadata": "host-a pid 7"})
	want(t, "acquire", r, 200, "")
	m := r.json(t)
	owner, _ := m["owner"].(string)
	token := num(t, r, "token")
	if len(owner) != 32 || token == 0 || m["count"].(float64) != 1 || m["ttl_ms"].(float64) != 5000 || m["name"] != "jobs/nightly" {
		t.Fatalf("acquire answer: %s", r.body)
	}

	r = call(t, "GET", lockURL(s, "jobs/nightly", ""), "", nil)
	want(t, "status", r, 200, "")
	m = r.json(t)
	if m["held"] != true || m["owner"] != owner || m["metadata"] != "host-a pid 7" || num(t, r, "token") != token ||
		num(t, r, "high_water") < token || m["holder_id"] == "" || m["ttl_ms"].(float64) > 5000 || m["ttl_ms"].(float64) < 4000 {
		t.Fatalf("status: %s", r.body)
	}

	r = call(t, "POST", lockURL(s, "jobs/nightly", "extend"), "", map[string]any{"owner": owner, "ttl_ms": 20000})
	want(t, "extend", r, 200, "")
	if num(t, r, "token") != token {
		t.Fatalf("extend changed the token: %s", r.body)
	}
	if info, _ := s.eng.Inspect(context.Background(), "jobs/nightly"); info.TTL < 19*time.Second {
		t.Fatalf("extend did not apply: ttl %v", info.TTL)
	}

	r = call(t, "POST", lockURL(s, "jobs/nightly", "release"), "", map[string]any{"owner": owner})
	want(t, "release", r, 200, "")
	if r.json(t)["remaining"].(float64) != 0 {
		t.Fatalf("release: %s", r.body)
	}
	r = call(t, "GET", lockURL(s, "jobs/nightly", ""), "", nil)
	if r.json(t)["held"] != false || num(t, r, "high_water") != token {
		t.Fatalf("status after release: %s", r.body)
	}

	r = call(t, "POST", lockURL(s, "jobs/nightly", "release"), "", map[string]any{"owner": owner})
	want(t, "second release", r, 409, api.CodeNotHeld)
	if r.errField(t, "status") != api.StatusMissing {
		t.Fatalf("second release: %s", r.body)
	}
	r = call(t, "POST", lockURL(s, "jobs/nightly", "extend"), "", map[string]any{"owner": owner})
	want(t, "extend after release", r, 409, api.CodeNotHeld)

	// The next grant has a higher token.
	r = call(t, "POST", lockURL(s, "jobs/nightly", "acquire"), "", nil)
	want(t, "acquire again", r, 200, "")
	if num(t, r, "token") <= token {
		t.Fatalf("token %d not above %d", num(t, r, "token"), token)
	}
	if r.json(t)["ttl_ms"].(float64) != 30000 {
		t.Fatalf("default ttl: %s", r.body)
	}
}

// TestContention: locked answers, re-entry, foreign owners.
func TestContention(t *testing.T) {
	s := start(t, nil)
	u := lockURL(s, "db", "acquire")
	r := call(t, "POST", u, "", map[string]any{"owner": "worker-1", "ttl_ms": 10000})
	want(t, "acquire", r, 200, "")
	token := num(t, r, "token")

	r = call(t, "POST", u, "", map[string]any{"owner": "worker-1", "ttl_ms": 10000})
	want(t, "re-entry", r, 200, "")
	if num(t, r, "token") != token || r.json(t)["count"].(float64) != 2 {
		t.Fatalf("re-entry: %s", r.body)
	}

	r = call(t, "POST", u, "", map[string]any{"owner": "worker-2"})
	want(t, "other owner", r, 409, api.CodeLocked)
	ttl, _ := r.errField(t, "holder_ttl_ms").(float64)
	if ttl < 8000 || ttl > 10000 || r.errField(t, "holder_id") == "" || r.errField(t, "waited_ms") != nil {
		t.Fatalf("locked answer: %s", r.body)
	}
	// No auth: every caller is admin, so the holder's owner is shown.
	if r.errField(t, "holder") != "worker-1" {
		t.Fatalf("holder not shown to admin: %s", r.body)
	}

	r = call(t, "POST", lockURL(s, "db", "release"), "", map[string]any{"owner": "worker-2"})
	want(t, "release by another owner", r, 409, api.CodeNotHeld)
	if r.errField(t, "status") != api.StatusHeldByOther {
		t.Fatalf("release by another owner: %s", r.body)
	}
	r = call(t, "POST", lockURL(s, "db", "extend"), "", map[string]any{"owner": "worker-2"})
	want(t, "extend by another owner", r, 409, api.CodeNotHeld)

	r = call(t, "POST", lockURL(s, "db", "release"), "", map[string]any{"owner": "worker-1"})
	want(t, "release one hold", r, 200, "")
	if r.json(t)["remaining"].(float64) != 1 {
		t.Fatalf("release one of two holds: %s", r.body)
	}
	want(t, "release last hold", call(t, "POST", lockURL(s, "db", "release"), "", map[string]any{"owner": "worker-1"}), 200, "")
	want(t, "now free", call(t, "POST", u, "", map[string]any{"owner": "worker-2"}), 200, "")
}

// TestExtendBatch: one request, one result per lock, in order.
func TestExtendBatch(t *testing.T) {
	s := start(t, nil)
	for _, n := range []string{"a", "b"} {
		want(t, "acquire "+n, call(t, "POST", lockURL(s, n, "acquire"), "", map[string]any{"owner": "o-" + n}), 200, "")
	}
	r := call(t, "POST", s.url+"/v1/extend", "", api.ExtendBatchRequest{Locks: []api.ExtendRequest{
		{Name: "a", Owner: "o-a", TTLMs: 60000},
		{Name: "b", Owner: "o-a", TTLMs: 60000},
		{Name: "c", Owner: "o-c", TTLMs: 60000},
	}})
	want(t, "batch", r, 200, "")
	var got []string
	for _, x := range r.json(t)["results"].([]any) {
		got = append(got, x.(map[string]any)["status"].(string))
	}
	if strings.Join(got, ",") != "extended,held_by_other,missing" {
		t.Fatalf("batch results %v: %s", got, r.body)
	}
	if info, _ := s.eng.Inspect(context.Background(), "a"); info.TTL < 59*time.Second {
		t.Fatalf("batch did not extend a: %v", info.TTL)
	}
	want(t, "empty batch", call(t, "POST", s.url+"/v1/extend", "", `{"locks":[]}`), 200, "")
	big := api.ExtendBatchRequest{Locks: make([]api.ExtendRequest, 1001)}
	for i := range big.Locks {
		big.Locks[i] = api.ExtendRequest{Name: "x", Owner: "o"}
	}
	want(t, "batch over 1000", call(t, "POST", s.url+"/v1/extend", "", big), 400, api.CodeInvalidArgument)
	r = call(t, "POST", s.url+"/v1/extend", "", `{"locks":[{"name":"a","owner":"o-a"},{"name":"","owner":"x"}]}`)
	want(t, "batch with a bad item", r, 400, api.CodeInvalidArgument)
	if r.errField(t, "arg") != "locks[1].name" {
		t.Fatalf("bad item arg: %s", r.body)
	}
}

// TestFence: the high-water is raised only for the holder.
func TestFence(t *testing.T) {
	s := start(t, nil)
	r := call(t, "POST", lockURL(s, "f", "acquire"), "", map[string]any{"owner": "me"})
	token := num(t, r, "token")
	r = call(t, "POST", lockURL(s, "f", "fence"), "", map[string]any{"owner": "me", "token": token + 1000})
	want(t, "fence", r, 200, "")
	if r.json(t)["raised"] != true {
		t.Fatalf("fence: %s", r.body)
	}
	r = call(t, "GET", lockURL(s, "f", ""), "", nil)
	if num(t, r, "high_water") != token+1000 || num(t, r, "token") != token+1000 {
		t.Fatalf("status after fence: %s", r.body)
	}
	r = call(t, "POST", lockURL(s, "f", "fence"), "", map[string]any{"owner": "not-me", "token": token + 5000})
	if r.status != 200 || r.json(t)["raised"] != false {
		t.Fatalf("fence by another owner: %d %s", r.status, r.body)
	}
	want(t, "fence token 0", call(t, "POST", lockURL(s, "f", "fence"), "", map[string]any{"owner": "me"}), 400, api.CodeInvalidArgument)
}

// TestListPaging: prefix and cursor; a page holds at most limit locks on
// every engine, also where the engine's own page holds more (Redis SCAN
// answers about 100 keys at a time), and the pages list every lock once.
func TestListPaging(t *testing.T) {
	for _, backend := range []string{"embedded", "redis"} {
		t.Run(backend, func(t *testing.T) {
			var eng engine.Engine
			if backend == "redis" {
				e, err := redisengine.New(redistest.Start(t).Client())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = e.Close() })
				eng = e
			}
			listPaging(t, start(t, eng))
		})
	}
}

func listPaging(t *testing.T, s *testServer) {
	for i := range 5 {
		want(t, "acquire", call(t, "POST", lockURL(s, fmt.Sprintf("a/%d", i), "acquire"), "", map[string]any{"metadata": "m"}), 200, "")
	}
	want(t, "acquire b", call(t, "POST", lockURL(s, "b/1", "acquire"), "", nil), 200, "")
	var names []string
	cursor := ""
	pages := 0
	for {
		q := url.Values{"prefix": {"a/"}, "limit": {"2"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		r := call(t, "GET", s.url+"/v1/locks?"+q.Encode(), "", nil)
		want(t, "list", r, 200, "")
		m := r.json(t)
		locks := m["locks"].([]any)
		if len(locks) > 2 {
			t.Fatalf("a page of limit 2 holds %d locks: %s", len(locks), r.body)
		}
		for _, l := range locks {
			lm := l.(map[string]any)
			if lm["held"] != true || lm["metadata"] != "m" {
				t.Fatalf("listed lock: %v", lm)
			}
			names = append(names, lm["name"].(string))
		}
		pages++
		next, _ := m["next"].(string)
		if next == "" {
			break
		}
		if pages > 10 {
			t.Fatalf("more than 10 pages: %v", names)
		}
		cursor = next
	}
	if strings.Join(names, " ") != "a/0 a/1 a/2 a/3 a/4" || pages != 3 {
		t.Fatalf("paged listing: %v in %d pages", names, pages)
	}
	r := call(t, "GET", s.url+"/v1/locks", "", nil)
	if n := len(r.json(t)["locks"].([]any)); n != 6 {
		t.Fatalf("full listing has %d locks: %s", n, r.body)
	}
	want(t, "limit 0", call(t, "GET", s.url+"/v1/locks?limit=0", "", nil), 400, api.CodeInvalidArgument)
	want(t, "limit 1001", call(t, "GET", s.url+"/v1/locks?limit=1001", "", nil), 400, api.CodeInvalidArgument)
	want(t, "a cursor the server never gave", call(t, "GET", s.url+"/v1/locks?cursor=x", "", nil), 400, api.CodeInvalidArgument)
}

// TestForceRelease: frees the lock and wakes a waiting request.
func TestForceRelease(t *testing.T) {
	s := start(t, nil)
	want(t, "acquire", call(t, "POST", lockURL(s, "stuck", "acquire"), "", map[string]any{"ttl_ms": 60000}), 200, "")
	got := make(chan reply, 1)
	go func() {
		got <- call(t, "POST", lockURL(s, "stuck", "acquire"), "", map[string]any{"wait_ms": 10000})
	}()
	waitFor(t, patience, "the waiter", func() bool { return waiters(t, s.eng, "stuck") == 1 })
	r := call(t, "DELETE", lockURL(s, "stuck", ""), "", nil)
	want(t, "force-release", r, 200, "")
	if r.json(t)["was_held"] != true {
		t.Fatalf("force-release: %s", r.body)
	}
	// Granted within its budget (10s), shorter than the holder's ttl (60s):
	// the force-release woke it.
	want(t, "woken waiter", <-got, 200, "")
	want(t, "force-release, held by the waiter now", call(t, "DELETE", lockURL(s, "stuck", ""), "", nil), 200, "")
	r = call(t, "DELETE", lockURL(s, "stuck", ""), "", nil)
	if r.status != 200 || r.json(t)["was_held"] != false {
		t.Fatalf("force-release of a free lock: %s", r.body)
	}
	if !strings.Contains(s.logs.String(), "force-released") {
		t.Fatalf("force-release not logged: %s", s.logs.String())
	}
}

// TestNames: any valid lock name has a URL (percent-encoded), including
// names with slashes, dots and percent signs.
func TestNames(t *testing.T) {
	s := start(t, nil)
	for _, name := range []string{"a/b", "a//b", "..", ".", "100%", "sp ace", "ünï/cødé", "?#&", strings.Repeat("n", 512)} {
		esc := url.PathEscape(name)
		if name == "." || name == ".." {
			esc = strings.ReplaceAll(name, ".", "%2E")
		}
		r := call(t, "POST", s.url+"/v1/locks/"+esc+"/acquire", "", nil)
		want(t, "acquire "+name, r, 200, "")
		if r.json(t)["name"] != name {
			t.Fatalf("name %q came back as %v", name, r.json(t)["name"])
		}
		if info, _ := s.eng.Inspect(context.Background(), name); !info.Held {
			t.Fatalf("%q not held on the engine", name)
		}
	}
}

// TestBadInput: every kind of bad input is answered invalid_argument (or
// its HTTP-level cousins) and changes nothing.
func TestBadInput(t *testing.T) {
	s := start(t, nil, withMaxBody(6000))
	want(t, "holder", call(t, "POST", lockURL(s, "x", "acquire"), "", map[string]any{"owner": "h", "ttl_ms": 60000}), 200, "")
	before, _ := s.eng.Inspect(context.Background(), "x")
	long := strings.Repeat("n", 513)
	cases := []struct {
		what, method, path string
		body               any
		status             int
		code, arg          string
	}{
		{"empty name", "POST", "/v1/locks//acquire", nil, 400, api.CodeInvalidArgument, "name"},
		{"name over 512 bytes", "POST", "/v1/locks/" + long + "/acquire", nil, 400, api.CodeInvalidArgument, "name"},
		{"name not UTF-8", "POST", "/v1/locks/a%FFb/acquire", nil, 400, api.CodeInvalidArgument, "name"},
		{"ttl too short", "POST", "/v1/locks/x/acquire", `{"ttl_ms":49}`, 400, api.CodeInvalidArgument, "ttl_ms"},
		{"ttl negative", "POST", "/v1/locks/x/acquire", `{"ttl_ms":-5}`, 400, api.CodeInvalidArgument, "ttl_ms"},
		{"ttl above 24h", "POST", "/v1/locks/x/acquire", `{"ttl_ms":86400001}`, 400, api.CodeInvalidArgument, "ttl_ms"},
		{"wait negative", "POST", "/v1/locks/x/acquire", `{"wait_ms":-1}`, 400, api.CodeInvalidArgument, "wait_ms"},
		{"wait above max", "POST", "/v1/locks/x/acquire", `{"wait_ms":600001}`, 400, api.CodeInvalidArgument, "wait_ms"},
		{"owner too long", "POST", "/v1/locks/x/acquire", map[string]any{"owner": strings.Repeat("o", 257)}, 400, api.CodeInvalidArgument, "owner"},
		{"metadata too long", "POST", "/v1/locks/x/acquire", map[string]any{"metadata": strings.Repeat("m", 4097)}, 400, api.CodeInvalidArgument, "metadata"},
		{"attempt too long", "POST", "/v1/locks/x/acquire", map[string]any{"attempt": strings.Repeat("a", 257)}, 400, api.CodeInvalidArgument, "attempt"},
		{"no_reserve with fair", "POST", "/v1/locks/free/acquire", `{"no_reserve":true,"fair":true,"waiter":"w"}`, 400, api.CodeInvalidArgument, "no_reserve"},
		{"no_reserve with behind", "POST", "/v1/locks/free/acquire", `{"no_reserve":true,"behind":true}`, 400, api.CodeInvalidArgument, "no_reserve"},
		{"unknown field", "POST", "/v1/locks/x/acquire", `{"ttl":"30s"}`, 400, api.CodeInvalidArgument, "body"},
		{"not JSON", "POST", "/v1/locks/x/acquire", `ttl=30`, 400, api.CodeInvalidArgument, "body"},
		{"two JSON values", "POST", "/v1/locks/x/acquire", `{} {}`, 400, api.CodeInvalidArgument, "body"},
		{"wrong type", "POST", "/v1/locks/x/acquire", `{"ttl_ms":"30000"}`, 400, api.CodeInvalidArgument, "body"},
		{"body over the limit", "POST", "/v1/locks/x/acquire", map[string]any{"metadata": strings.Repeat("m", 7000)}, 413, api.CodeInvalidArgument, "body"},
		{"release without owner", "POST", "/v1/locks/x/release", `{}`, 400, api.CodeInvalidArgument, "owner"},
		{"release without body", "POST", "/v1/locks/x/release", nil, 400, api.CodeInvalidArgument, "body"},
		{"extend without owner", "POST", "/v1/locks/x/extend", `{"ttl_ms":1000}`, 400, api.CodeInvalidArgument, "owner"},
		{"extend naming another lock", "POST", "/v1/locks/x/extend", `{"name":"y","owner":"h"}`, 400, api.CodeInvalidArgument, "name"},
		{"extend ttl too short", "POST", "/v1/locks/x/extend", `{"owner":"h","ttl_ms":10}`, 400, api.CodeInvalidArgument, "ttl_ms"},
		{"list prefix not UTF-8", "GET", "/v1/locks?prefix=%FF", nil, 400, api.CodeInvalidArgument, "prefix"},
		{"wrong method", "PUT", "/v1/locks/x/acquire", nil, 405, api.CodeMethodNotAllowed, ""},
		{"wrong method on a lock", "POST", "/v1/locks/x", nil, 405, api.CodeMethodNotAllowed, ""},
		{"unknown action", "POST", "/v1/locks/x/steal", nil, 404, api.CodeNotFound, ""},
		{"unescaped slash", "POST", "/v1/locks/a/b/acquire", nil, 404, api.CodeNotFound, ""},
		{"unknown endpoint", "GET", "/v1/nothing", nil, 404, api.CodeNotFound, ""},
		{"unknown page", "GET", "/secret", nil, 404, api.CodeNotFound, ""},
	}
	for _, tc := range cases {
		r := call(t, tc.method, s.url+tc.path, "", tc.body)
		if r.status != tc.status || r.code(t) != tc.code {
			t.Errorf("%s: HTTP %d %s, want %d %s", tc.what, r.status, r.body, tc.status, tc.code)
			continue
		}
		if tc.arg != "" && r.errField(t, "arg") != tc.arg {
			t.Errorf("%s: arg %v, want %q", tc.what, r.errField(t, "arg"), tc.arg)
		}
		if msg, _ := r.errField(t, "message").(string); msg == "" {
			t.Errorf("%s: no message", tc.what)
		}
		if tc.status == 405 && r.header.Get("Allow") == "" {
			t.Errorf("%s: no Allow header", tc.what)
		}
	}
	after, _ := s.eng.Inspect(context.Background(), "x")
	if after.Owner != before.Owner || after.Token != before.Token || after.Count != before.Count || after.TTL > before.TTL {
		t.Fatalf("bad input changed the lock: %+v -> %+v", before, after)
	}
	if info, _, _ := s.eng.(engine.Lister).List(context.Background(), "", "", 100); len(info) != 1 {
		t.Fatalf("bad input created locks: %+v", info)
	}
}

// TestBackendUnavailable: an engine failure is backend_unavailable (503),
// never locked.
func TestBackendUnavailable(t *testing.T) {
	s := start(t, failing{})
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/locks/x/acquire", ""},
		{"POST", "/v1/locks/x/acquire", `{"wait_ms":300}`},
		{"POST", "/v1/locks/x/release", `{"owner":"o"}`},
		{"POST", "/v1/locks/x/extend", `{"owner":"o"}`},
		{"POST", "/v1/extend", `{"locks":[{"name":"x","owner":"o"}]}`},
		{"POST", "/v1/locks/x/fence", `{"owner":"o","token":5}`},
		{"GET", "/v1/locks/x", ""},
		{"DELETE", "/v1/locks/x", ""},
		{"GET", "/v1/locks", ""},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		r := call(t, c.method, s.url+c.path, "", body)
		want(t, c.method+" "+c.path, r, http.StatusServiceUnavailable, api.CodeBackendUnavailable)
		if !strings.Contains(string(r.body), "engine down") {
			t.Fatalf("%s %s: the cause is not in the message: %s", c.method, c.path, r.body)
		}
	}
}

// TestHealthAndInfo: /healthz needs no token; /v1/info names the engine.
func TestHealthAndInfo(t *testing.T) {
	s := start(t, nil)
	want(t, "healthz", call(t, "GET", s.url+"/healthz", "", nil), 200, "")
	r := call(t, "GET", s.url+"/v1/info", "", nil)
	want(t, "info", r, 200, "")
	if m := r.json(t); m["engine"] != "embedded" || m["role"] != "admin" || m["auth"] != false {
		t.Fatalf("info: %s", r.body)
	}
}

// TestForceReleaseOwner: DELETE ?owner= frees only that owner's hold: 409
// not_held when it holds nothing (the lock stays held), 400 for an empty
// owner; the freed holder's extend is answered not_held, held_by_other
// (taken over).
func TestForceReleaseOwner(t *testing.T) {
	s := start(t, nil)
	want(t, "acquire", call(t, "POST", lockURL(s, "one", "acquire"), "", map[string]any{"ttl_ms": 60000, "owner": "o1"}), 200, "")
	want(t, "another owner", call(t, "DELETE", lockURL(s, "one", "")+"?owner=o2", "", nil), 409, api.CodeNotHeld)
	want(t, "an empty owner", call(t, "DELETE", lockURL(s, "one", "")+"?owner=", "", nil), 400, api.CodeInvalidArgument)
	if r := call(t, "GET", lockURL(s, "one", ""), "", nil); r.json(t)["held"] != true {
		t.Fatalf("a refused force-release changed the lock: %s", r.body)
	}
	r := call(t, "DELETE", lockURL(s, "one", "")+"?owner=o1", "", nil)
	want(t, "the holder's own", r, 200, "")
	if j := r.json(t); j["was_held"] != true || j["owner"] != "o1" {
		t.Fatalf("force-release of o1: %s", r.body)
	}
	r = call(t, "POST", lockURL(s, "one", "extend"), "", map[string]any{"owner": "o1", "ttl_ms": 60000})
	want(t, "the freed holder's extend", r, 409, api.CodeNotHeld)
	if !strings.Contains(string(r.body), api.StatusHeldByOther) {
		t.Fatalf("the freed holder's extend: %s, want status %s (taken over)", r.body, api.StatusHeldByOther)
	}
}

// TestGrantTokenOverHTTP: a client of the HTTP API that names its grant's
// token in an extension or a release, after a force-release and a new
// grant to the same owner, is answered not_held (held_by_other) and
// changes nothing: the newer grant keeps its ttl and its hold. Without a
// token, the owner's hold is renewed and released, whatever its grant.
func TestGrantTokenOverHTTP(t *testing.T) {
	s := start(t, nil)
	body := map[string]any{"owner": "shared-owner", "ttl_ms": 60000}
	r := call(t, "POST", lockURL(s, "job", "acquire"), "", body)
	want(t, "first grant", r, 200, "")
	old := num(t, r, "token")
	want(t, "force-release", call(t, "DELETE", lockURL(s, "job", ""), "", nil), 200, "")
	r = call(t, "POST", lockURL(s, "job", "acquire"), "", body)
	want(t, "second grant", r, 200, "")
	newer := num(t, r, "token")
	if newer <= old {
		t.Fatalf("second grant's token %d not above the first's %d", newer, old)
	}

	r = call(t, "POST", lockURL(s, "job", "extend"), "", map[string]any{"owner": "shared-owner", "ttl_ms": 1000, "token": old})
	want(t, "extension naming the freed grant", r, 409, api.CodeNotHeld)
	if st := r.errField(t, "status"); st != "held_by_other" {
		t.Fatalf("extension naming the freed grant: status %v, want held_by_other: %s", st, r.body)
	}
	r = call(t, "POST", lockURL(s, "job", "release"), "", map[string]any{"owner": "shared-owner", "token": old})
	want(t, "release naming the freed grant", r, 409, api.CodeNotHeld)
	if st := r.errField(t, "status"); st != "held_by_other" {
		t.Fatalf("release naming the freed grant: status %v, want held_by_other: %s", st, r.body)
	}
	info, err := s.eng.Inspect(context.Background(), "job")
	if err != nil || !info.Held || info.Owner != "shared-owner" || info.Token != newer || info.TTL < 30*time.Second {
		t.Fatalf("after the freed grant's extension and release: %+v, %v; want held with token %d and most of 60s left", info, err, newer)
	}
	// The server's own count of holders still has the newer grant's hold.
	if n := metric(t, scrape(t, s), "distlock_holders"); n != 1 {
		t.Fatalf("distlock_holders = %v after the freed grant's extension and release, want 1 (the newer grant's)", n)
	}

	r = call(t, "POST", lockURL(s, "job", "extend"), "", map[string]any{"owner": "shared-owner", "ttl_ms": 60000, "token": newer})
	want(t, "extension naming the newer grant", r, 200, "")
	r = call(t, "POST", lockURL(s, "job", "extend"), "", map[string]any{"owner": "shared-owner", "ttl_ms": 60000})
	want(t, "extension naming no grant", r, 200, "")
	r = call(t, "POST", lockURL(s, "job", "release"), "", map[string]any{"owner": "shared-owner"})
	want(t, "release naming no grant", r, 200, "")
	if info, err := s.eng.Inspect(context.Background(), "job"); err != nil || info.Held {
		t.Fatalf("after the release: %+v, %v; want free", info, err)
	}
	if n := metric(t, scrape(t, s), "distlock_holders"); n != 0 {
		t.Fatalf("distlock_holders = %v after the last release, want 0", n)
	}
}

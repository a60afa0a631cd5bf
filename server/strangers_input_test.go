package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/server/api"
)

// TestUnknownQueryRefused: a query parameter a request does not take is
// invalid_argument naming it, and changes nothing: a typo in an admin's
// force-release (?ownr= for ?owner=) used to free every holder.
func TestUnknownQueryRefused(t *testing.T) {
	s := start(t, nil)
	for _, o := range []string{"a", "b"} {
		want(t, "acquire "+o, call(t, "POST", lockURL(s, "sem", "acquire"), "", map[string]any{"owner": o, "kind": "semaphore", "limit": 2}), 200, "")
	}
	for _, u := range []string{
		lockURL(s, "sem", "") + "?ownr=a",
		lockURL(s, "sem", "") + "?owner=a&force=1",
	} {
		r := call(t, "DELETE", u, "", nil)
		want(t, "DELETE "+u, r, 400, api.CodeInvalidArgument)
	}
	for _, u := range []string{
		lockURL(s, "sem", "") + "?knd=shared",
		s.url + "/v1/locks?prefx=s",
	} {
		want(t, "GET "+u, call(t, "GET", u, "", nil), 400, api.CodeInvalidArgument)
	}
	r := call(t, "GET", lockURL(s, "sem", "")+"?kind=shared", "", nil)
	want(t, "status", r, 200, "")
	if holders, _ := r.json(t)["holders"].([]any); len(holders) != 2 {
		t.Fatalf("after the refused force-releases: %s, want both holders", r.body)
	}
	want(t, "list", call(t, "GET", s.url+"/v1/locks?prefix=s&limit=5", "", nil), 200, "")
}

// TestUnknownQueryRefusedEveryRoute: on every route, a query parameter the
// request does not take, a repeated one, or a query that does not parse is
// invalid_argument naming it, answered before anything changes: the
// routes other than GET and DELETE /v1/locks[/{name}] used to ignore their
// query and act (POST /v1/locks/x/acquire?ttl_ms=1000 took the lock for
// the default 30 s), and DELETE ?owner=a&owner=b freed a's hold.
func TestUnknownQueryRefusedEveryRoute(t *testing.T) {
	s := start(t, nil)
	r := call(t, "POST", lockURL(s, "held", "acquire"), "", map[string]any{"owner": "o", "ttl_ms": 60000, "metadata": "m0"})
	want(t, "acquire held", r, 200, "")
	token := num(t, r, "token")
	mustAcquire(t, s, "sem", map[string]any{"owner": "a", "kind": "semaphore", "limit": 2})
	r = call(t, "POST", lockURL(s, "held", "acquire"), "", map[string]any{"owner": "w", "waiter": "w1", "waiter_ttl_ms": 3600000})
	want(t, "queue w1 on held", r, 409, "")
	want(t, "latch set", call(t, "POST", latchURL(s, "l", "set"), "", api.LatchSetRequest{Count: 2}), 200, "")
	r = call(t, "POST", electionURL(s, "e", "campaign"), "", api.CampaignRequest{Value: "v", Owner: "lead", TTLMs: 60000})
	want(t, "campaign e", r, 200, "")
	term := num(t, r, "token")

	// state is what the requests below could change, without the times.
	state := func() string {
		var b strings.Builder
		get := func(u string) {
			r := call(t, "GET", u, "", nil)
			var m any
			_ = json.Unmarshal(r.body, &m)
			fmt.Fprintf(&b, "%s: %d %v\n", u[len(s.url):], r.status, timeless(m))
		}
		for _, n := range []string{"held", "sem", "free", "free2"} {
			get(lockURL(s, n, ""))
		}
		for _, n := range []string{"l", "l2"} {
			get(latchURL(s, n, ""))
		}
		for _, n := range []string{"e", "e2"} {
			get(electionURL(s, n, ""))
		}
		return b.String()
	}
	before := state()
	if !strings.Contains(before, `/v1/locks/held: 200`) || !strings.Contains(before, "waiters:1") {
		t.Fatalf("the state before: %s, want held with one waiter", before)
	}

	const bogus = "?bogus=1"
	for _, c := range []struct {
		method, url string
		body        any
	}{
		{"POST", lockURL(s, "free", "acquire") + "?ttl_ms=1000&wait_ms=5000", map[string]any{}},
		{"POST", lockURL(s, "held", "extend") + bogus, map[string]any{"owner": "o", "ttl_ms": 120000}},
		{"POST", lockURL(s, "held", "release") + bogus, map[string]any{"owner": "o"}},
		{"POST", lockURL(s, "held", "fence") + bogus, api.FenceRequest{Owner: "o", Token: token + 100}},
		{"POST", lockURL(s, "held", "metadata") + bogus, api.MetadataRequest{Owner: "o", Metadata: "m1"}},
		{"POST", lockURL(s, "held", "leave") + bogus, api.LeaveRequest{Waiter: "w1"}},
		{"POST", lockURL(s, "sem", "limit") + bogus, map[string]any{"limit": 5}},
		{"GET", lockURL(s, "held", "events") + bogus, nil},
		{"GET", lockURL(s, "held", "") + bogus, nil},
		{"DELETE", lockURL(s, "held", "") + bogus, nil},
		{"GET", s.url + "/v1/locks" + bogus, nil},
		{"POST", s.url + "/v1/extend" + bogus, api.ExtendBatchRequest{Locks: []api.ExtendRequest{{Name: "held", Owner: "o", TTLMs: 120000}}}},
		{"POST", s.url + "/v1/sets/acquire" + bogus, api.SetAcquireRequest{Locks: []api.SetLock{{Name: "free2"}}}},
		{"POST", s.url + "/v1/sets/release" + bogus, api.SetReleaseRequest{Locks: []api.SetOwner{{Name: "held", Owner: "o"}}}},
		{"GET", s.url + "/v1/waitfor" + bogus, nil},
		{"GET", s.url + "/v1/info" + bogus, nil},
		{"GET", s.url + "/v1/dashboard/events" + bogus, nil},
		{"GET", s.url + "/metrics" + bogus, nil},
		{"GET", s.url + "/healthz" + bogus, nil},
		{"GET", s.url + "/" + bogus, nil},
		{"GET", s.url + "/app.js" + bogus, nil},
		{"GET", electionURL(s, "e", "") + bogus, nil},
		{"POST", electionURL(s, "e2", "campaign") + bogus, api.CampaignRequest{Value: "v"}},
		{"POST", electionURL(s, "e", "proclaim") + bogus, api.TermRequest{Owner: "lead", Term: term, Value: "v2"}},
		{"POST", electionURL(s, "e", "resign") + bogus, api.TermRequest{Owner: "lead", Term: term}},
		{"GET", electionURL(s, "e", "watch") + bogus, nil},
		{"GET", latchURL(s, "l", "") + bogus, nil},
		{"POST", latchURL(s, "l2", "set") + bogus, api.LatchSetRequest{Count: 3}},
		{"POST", latchURL(s, "l", "countdown") + bogus, api.LatchCountDownRequest{ID: "c1"}},
		// repeated: even a parameter the request takes
		{"DELETE", lockURL(s, "sem", "") + "?owner=a&owner=b", nil},
		{"DELETE", lockURL(s, "held", "") + "?owner=o&owner=o", nil},
		{"GET", lockURL(s, "held", "") + "?kind=mutex&kind=shared", nil},
		{"GET", s.url + "/v1/locks?limit=1&limit=2", nil},
		{"GET", lockURL(s, "held", "events") + "?waiter=w1&waiter=w2", nil},
		// a query that does not parse (';', bad escapes): url.Query drops
		// the pair, so ?owner=a;b would free every holder
		{"DELETE", lockURL(s, "sem", "") + "?owner=a;b", nil},
		{"DELETE", lockURL(s, "sem", "") + "?owner=%zz", nil},
		{"POST", lockURL(s, "free", "acquire") + "?%zz", map[string]any{}},
	} {
		what := c.method + " " + c.url[len(s.url):]
		// a stream the query failed to stop would not end: bound it
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		r, err := tryCall(ctx, c.method, c.url, c.body)
		cancel()
		switch {
		case err != nil:
			t.Errorf("%s: %v (not refused)", what, err)
		case r.status != 400 || r.code(t) != api.CodeInvalidArgument:
			t.Errorf("%s: HTTP %d %s, want 400 %s", what, r.status, r.body, api.CodeInvalidArgument)
		default:
			arg, _ := r.errField(t, "arg").(string)
			if arg == "" || !strings.Contains(string(r.body), arg) {
				t.Errorf("%s: %s, want the parameter named in arg", what, r.body)
			}
		}
		if after := state(); after != before {
			t.Errorf("%s changed the state:\n%s\nwant\n%s", what, after, before)
			before = after // judge the next request on its own
		}
	}
	// the parameters a request takes still work, and a refused one is
	// named: the typo, not its neighbour
	r = call(t, "DELETE", lockURL(s, "sem", "")+"?owner=a&ownr=b", "", nil)
	want(t, "owner and ownr", r, 400, api.CodeInvalidArgument)
	if r.errField(t, "arg") != "ownr" {
		t.Fatalf("owner and ownr: %s, want arg ownr", r.body)
	}
	want(t, "status ?kind=mutex", call(t, "GET", lockURL(s, "held", "")+"?kind=mutex", "", nil), 200, "")
	want(t, "metrics", call(t, "GET", s.url+"/metrics", "", nil), 200, "")
	want(t, "release held", call(t, "POST", lockURL(s, "held", "release"), "", map[string]any{"owner": "o"}), 200, "")
	want(t, "DELETE ?owner=a", call(t, "DELETE", lockURL(s, "sem", "")+"?owner=a", "", nil), 200, "")
}

// timeless is a decoded answer without the times that pass: a ttl_ms is
// whether it is above 0 and not extended past the 60 s given.
func timeless(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			switch k {
			case "since_ms", "waited_ms":
				delete(v, k)
			case "ttl_ms":
				ttl, _ := e.(float64)
				v[k] = ttl > 0 && ttl <= 60000
			default:
				v[k] = timeless(e)
			}
		}
	case []any:
		for i, e := range v {
			v[i] = timeless(e)
		}
	}
	return v
}

// tryCall is call that hands back its error (a stream cut by ctx).
func tryCall(ctx context.Context, method, url string, body any) (reply, error) {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return reply{}, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return reply{}, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, err
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: data}, nil
}

// TestSetReleaseOfSharedHolder: a set release naming a name its owner holds
// as a semaphore answers other_kind with the reason, releases nothing of
// it (a set takes mutexes), and still releases the set's other locks; it
// used to answer missing, telling the caller its hold was gone while it
// was still held.
func TestSetReleaseOfSharedHolder(t *testing.T) {
	s := start(t, nil)
	want(t, "permit", call(t, "POST", lockURL(s, "sem", "acquire"), "", map[string]any{"owner": "o", "kind": "semaphore", "limit": 2}), 200, "")
	want(t, "mutex", call(t, "POST", lockURL(s, "mx", "acquire"), "", map[string]any{"owner": "o", "ttl_ms": 60000}), 200, "")
	r := call(t, "POST", s.url+"/v1/sets/release", "", api.SetReleaseRequest{Locks: []api.SetOwner{{Name: "mx", Owner: "o"}, {Name: "sem", Owner: "o"}}})
	want(t, "set release", r, 200, "")
	var out api.SetReleaseResponse
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Results) != 2 || out.Results[0].Status != api.StatusReleased ||
		out.Results[1].Status != api.StatusOtherKind || !strings.Contains(out.Results[1].Reason, "semaphore") {
		t.Fatalf("set release: %s, want released, then other_kind naming the semaphore", r.body)
	}
	r = call(t, "GET", lockURL(s, "sem", "")+"?kind=shared", "", nil)
	if holders, _ := r.json(t)["holders"].([]any); len(holders) != 1 {
		t.Fatalf("the permit after the set release: %s, want still held", r.body)
	}
}

// TestReleaseOfOtherSharedKind: a semaphore's permit released as an RW
// lock's hold (and a reader released as a semaphore's permit) is
// invalid_argument naming the lock's kind, and the hold stays.
func TestReleaseOfOtherSharedKind(t *testing.T) {
	s := start(t, nil)
	want(t, "permit", call(t, "POST", lockURL(s, "sem", "acquire"), "", map[string]any{"owner": "o", "kind": "semaphore", "limit": 2}), 200, "")
	want(t, "reader", call(t, "POST", lockURL(s, "rw", "acquire"), "", map[string]any{"owner": "o", "kind": "rwlock"}), 200, "")
	for _, c := range []struct{ name, asked, is string }{{"sem", "rwlock", "semaphore"}, {"rw", "semaphore", "rwlock"}} {
		r := call(t, "POST", lockURL(s, c.name, "release"), "", map[string]any{"owner": "o", "kind": c.asked})
		want(t, c.name+" released as "+c.asked, r, 400, api.CodeInvalidArgument)
		if !strings.Contains(string(r.body), c.is) {
			t.Fatalf("%s released as %s: %s, want the lock's kind named", c.name, c.asked, r.body)
		}
		r = call(t, "GET", lockURL(s, c.name, "")+"?kind=shared", "", nil)
		if holders, _ := r.json(t)["holders"].([]any); len(holders) != 1 {
			t.Fatalf("%s after the refused release: %s, want still held", c.name, r.body)
		}
	}
}

// TestLatchCountBounds: a latch count above engine.MaxLatchCount (what
// every engine keeps exactly) is invalid_argument and sets nothing; the
// largest is kept exactly.
func TestLatchCountBounds(t *testing.T) {
	s := start(t, nil)
	u := s.url + "/v1/latches/big"
	for _, n := range []int64{engine.MaxLatchCount + 1, 1<<62 + 1, 0} {
		want(t, fmt.Sprintf("count %d", n), call(t, "POST", u+"/set", "", map[string]any{"count": n}), 400, api.CodeInvalidArgument)
	}
	if r := call(t, "GET", u, "", nil); num(t, r, "count") != 0 {
		t.Fatalf("after the refusals: %s, want count 0", r.body)
	}
	want(t, "the largest count", call(t, "POST", u+"/set", "", map[string]any{"count": int64(engine.MaxLatchCount)}), 200, "")
	r := call(t, "POST", u+"/countdown", "", map[string]any{"id": "c1"})
	want(t, "countdown", r, 200, "")
	if got := num(t, r, "count"); got != engine.MaxLatchCount-1 {
		t.Fatalf("countdown: %d, want %d", got, int64(engine.MaxLatchCount-1))
	}
}

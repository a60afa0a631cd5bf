package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

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

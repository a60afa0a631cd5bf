package server_test

import (
	"net/url"
	"testing"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/server/api"
)

// latchURL is the URL of the latch name's endpoint action on s.
func latchURL(s *testServer, name, action string) string {
	u := s.url + "/v1/latches/" + url.PathEscape(name)
	if action != "" {
		u += "/" + action
	}
	return u
}

// TestLatchHTTP: the latch endpoints set, count down (a resent id counts
// once) and read a count on the server's engine; bad input is
// invalid_argument and changes nothing; a wrong method or action is
// answered as such.
func TestLatchHTTP(t *testing.T) {
	s := start(t, nil)
	want(t, "count 0", call(t, "POST", latchURL(s, "l", "set"), "", api.LatchSetRequest{Count: 0}), 400, api.CodeInvalidArgument)
	want(t, "a count never set", call(t, "GET", latchURL(s, "l", ""), "", nil), 200, "")
	if r := call(t, "GET", latchURL(s, "l", ""), "", nil); r.json(t)["count"] != 0.0 {
		t.Fatalf("count after a refused set: %s", r.body)
	}
	if r := call(t, "POST", latchURL(s, "l", "set"), "", api.LatchSetRequest{Count: 2}); r.status != 200 || r.json(t)["set"] != true {
		t.Fatalf("set: %d %s", r.status, r.body)
	}
	if r := call(t, "POST", latchURL(s, "l", "set"), "", api.LatchSetRequest{Count: 5}); r.status != 200 || r.json(t)["set"] != false {
		t.Fatalf("set while counting: %d %s", r.status, r.body)
	}
	want(t, "an empty id", call(t, "POST", latchURL(s, "l", "countdown"), "", api.LatchCountDownRequest{}), 400, api.CodeInvalidArgument)
	for range 2 {
		if r := call(t, "POST", latchURL(s, "l", "countdown"), "", api.LatchCountDownRequest{ID: "c1"}); r.status != 200 || r.json(t)["count"] != 1.0 {
			t.Fatalf("countdown c1: %d %s", r.status, r.body)
		}
	}
	if n, err := s.eng.(engine.Latcher).Count(t.Context(), "l"); n != 1 || err != nil {
		t.Fatalf("the engine's count: %d %v, want 1", n, err)
	}
	want(t, "GET countdown", call(t, "GET", latchURL(s, "l", "countdown"), "", nil), 405, api.CodeMethodNotAllowed)
	want(t, "no such action", call(t, "POST", latchURL(s, "l", "reset"), "", nil), 404, api.CodeNotFound)
	want(t, "an empty name", call(t, "GET", s.url+"/v1/latches/", "", nil), 400, api.CodeInvalidArgument)
}

// TestLatchHTTPUnsupported: a server whose engine keeps no latches answers
// not_supported (501) to every latch call.
func TestLatchHTTPUnsupported(t *testing.T) {
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	s := start(t, struct{ engine.Engine }{mem})
	want(t, "count", call(t, "GET", latchURL(s, "l", ""), "", nil), 501, api.CodeNotSupported)
	want(t, "set", call(t, "POST", latchURL(s, "l", "set"), "", api.LatchSetRequest{Count: 1}), 501, api.CodeNotSupported)
	want(t, "countdown", call(t, "POST", latchURL(s, "l", "countdown"), "", api.LatchCountDownRequest{ID: "c"}), 501, api.CodeNotSupported)
}

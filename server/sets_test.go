package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/server/api"
)

// setBody is a set request of names, each with owner and ttlMs.
func setBody(owner string, ttlMs int64, names ...string) api.SetAcquireRequest {
	req := api.SetAcquireRequest{Locks: make([]api.SetLock, len(names))}
	for i, n := range names {
		req.Locks[i] = api.SetLock{Name: n, Owner: owner, TTLMs: ttlMs}
	}
	return req
}

// TestSetEndpoints: POST /v1/sets/acquire grants a set in one engine step
// (owners made by the server, one for the set, tokens per name), refuses a
// set that overlaps a held name whole (409 locked, naming it; the other
// names stay free), answers bad input 400 with the argument, changing
// nothing; POST /v1/sets/release releases the set.
func TestSetEndpoints(t *testing.T) {
	s := start(t, nil)
	r := call(t, "POST", s.url+"/v1/sets/acquire", "", setBody("", 0, "a", "b"))
	want(t, "a set", r, http.StatusOK, "")
	var got api.SetAcquireResponse
	if err := json.Unmarshal(r.body, &got); err != nil || len(got.Locks) != 2 {
		t.Fatalf("answer %s: %v", r.body, err)
	}
	owner := got.Locks[0].Owner
	if owner == "" || got.Locks[1].Owner != owner || got.Locks[0].Token == 0 || got.Locks[0].Name != "a" || got.Locks[1].Name != "b" {
		t.Fatalf("grants %+v; want a then b, one owner made by the server, tokens", got.Locks)
	}

	r = call(t, "POST", s.url+"/v1/sets/acquire", "", setBody("other", 0, "c", "b"))
	want(t, "a set over held b", r, http.StatusConflict, api.CodeLocked)
	if r.errField(t, "name") != "b" || r.errField(t, "holder") != owner {
		t.Fatalf("refusal %s; want b named, held by %s", r.body, owner)
	}
	want(t, "c after the refusal", call(t, "GET", s.url+"/v1/locks/c", "", nil), http.StatusOK, "")
	if info := call(t, "GET", s.url+"/v1/locks/c", "", nil).json(t); info["held"] == true {
		t.Fatalf("c held after a refused set: %v", info)
	}

	many := make([]string, 65)
	for i := range many {
		many[i] = fmt.Sprintf("m%d", i)
	}
	for _, bad := range []struct {
		what string
		body any
		arg  string
	}{
		{"no lock", api.SetAcquireRequest{}, "locks"},
		{"65 locks", setBody("", 0, many...), "locks"},
		{"a repeated name", setBody("", 0, "c", "c"), "locks[1].name"},
		{"an empty name", setBody("", 0, "c", ""), "locks[1].name"},
		{"a ttl of 1 ms", setBody("", 1, "c"), "locks[0].ttl_ms"},
		{"an unknown field", `{"locks":[{"name":"c","x":1}]}`, ""},
	} {
		r := call(t, "POST", s.url+"/v1/sets/acquire", "", bad.body)
		want(t, bad.what, r, http.StatusBadRequest, api.CodeInvalidArgument)
		if bad.arg != "" && r.errField(t, "arg") != bad.arg {
			t.Errorf("%s: arg %v, want %s", bad.what, r.errField(t, "arg"), bad.arg)
		}
	}
	for _, bad := range []api.SetReleaseRequest{{}, {Locks: []api.SetOwner{{Name: "a"}}}, {Locks: []api.SetOwner{{Name: "a", Owner: owner}, {Name: "a", Owner: owner}}}} {
		want(t, fmt.Sprintf("release %+v", bad), call(t, "POST", s.url+"/v1/sets/release", "", bad), http.StatusBadRequest, api.CodeInvalidArgument)
	}
	for _, n := range append(many, "c") {
		if info, err := s.eng.Inspect(t.Context(), n); err != nil || info.Held {
			t.Fatalf("%s after bad input: %+v, %v", n, info, err)
		}
	}

	r = call(t, "POST", s.url+"/v1/sets/release", "", api.SetReleaseRequest{Locks: []api.SetOwner{{Name: "b", Owner: owner}, {Name: "a", Owner: owner}, {Name: "c", Owner: owner}}})
	want(t, "release", r, http.StatusOK, "")
	var rel api.SetReleaseResponse
	if err := json.Unmarshal(r.body, &rel); err != nil || len(rel.Results) != 3 || rel.Results[0].Status != api.StatusReleased ||
		rel.Results[1].Status != api.StatusReleased || rel.Results[2].Status != api.StatusMissing {
		t.Fatalf("release answer %s: %v; want released, released, missing", r.body, err)
	}
	for _, n := range []string{"a", "b"} {
		if info, err := s.eng.Inspect(t.Context(), n); err != nil || info.Held {
			t.Fatalf("%s after the release: %+v, %v", n, info, err)
		}
	}
}

// TestSetNotAtomic: a server whose engine has no sets answers not_atomic
// (501) and changes nothing; its release endpoint releases name by name.
func TestSetNotAtomic(t *testing.T) {
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	s := start(t, plain{mem}) // no engine.MultiAcquirer, no engine.MultiReleaser
	want(t, "a set", call(t, "POST", s.url+"/v1/sets/acquire", "", setBody("o", 0, "a", "b")), http.StatusNotImplemented, api.CodeNotAtomic)
	if info, err := mem.Inspect(t.Context(), "a"); err != nil || info.Held {
		t.Fatalf("a after not_atomic: %+v, %v", info, err)
	}
	want(t, "acquire a", call(t, "POST", s.url+"/v1/locks/a/acquire", "", api.AcquireRequest{Owner: "o"}), http.StatusOK, "")
	r := call(t, "POST", s.url+"/v1/sets/release", "", api.SetReleaseRequest{Locks: []api.SetOwner{{Name: "a", Owner: "o"}, {Name: "b", Owner: "o"}}})
	want(t, "release", r, http.StatusOK, "")
	var rel api.SetReleaseResponse
	if err := json.Unmarshal(r.body, &rel); err != nil || rel.Results[0].Status != api.StatusReleased || rel.Results[1].Status != api.StatusMissing {
		t.Fatalf("release answer %s: %v", r.body, err)
	}
}

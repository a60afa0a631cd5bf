package server_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/engine/quorum"
	"github.com/distlock/distlock/server/api"
)

// TestPartialAnswers: on a quorum with a node that does not answer, a
// lock's state and a listing page are the other nodes' and carry
// "partial" naming the node; with every node answering, no such field.
func TestPartialAnswers(t *testing.T) {
	q, err := quorum.New([]engine.Engine{memory.New(), memory.New(), failing{}}, quorum.WithoutFencing())
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, q)
	c := distlock.New(q)
	defer c.Close()
	l, err := c.Acquire(context.Background(), "partial")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Release(context.Background()) }()

	var info api.LockInfo
	r := call(t, "GET", s.url+"/v1/locks/partial", "", nil)
	if err := json.Unmarshal(r.body, &info); r.status != 200 || err != nil {
		t.Fatalf("state: %d %s (%v)", r.status, r.body, err)
	}
	if !info.Held || info.Partial == nil || !slices.Equal(info.Partial.Unanswered, []string{"node 2"}) {
		t.Fatalf("state: %s, want held, partial naming node 2", r.body)
	}
	var list api.ListResponse
	r = call(t, "GET", s.url+"/v1/locks", "", nil)
	if err := json.Unmarshal(r.body, &list); r.status != 200 || err != nil {
		t.Fatalf("list: %d %s (%v)", r.status, r.body, err)
	}
	if len(list.Locks) != 1 || list.Locks[0].Name != "partial" || list.Partial == nil || !slices.Equal(list.Partial.Unanswered, []string{"node 2"}) {
		t.Fatalf("list: %s, want the lock, partial naming node 2", r.body)
	}

	whole := start(t, nil)
	for _, u := range []string{whole.url + "/v1/locks/partial", whole.url + "/v1/locks"} {
		if _, ok := call(t, "GET", u, "", nil).json(t)["partial"]; ok {
			t.Fatalf("GET %s: a partial field on an engine of one part", u)
		}
	}
}

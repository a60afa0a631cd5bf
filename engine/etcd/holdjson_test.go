package etcd

import (
	"encoding/json"
	"testing"
)

// TestHoldEncode: a hold's value is byte for byte what json.Marshal writes,
// for plain strings (the hand-written path) and for strings JSON escapes.
func TestHoldEncode(t *testing.T) {
	for _, h := range []hold{
		{Owner: "o1", Count: 1, TTL: 30},
		{Owner: "o1", Count: 3, Attempt: "a1", Metadata: "job=7 host:x", TTL: 2, releases: releases{Rel: "r9"}},
		{Owner: "o1", Count: 3, TTL: 2, releases: releases{Rels: []string{"r8", "r9"}}},
		{Owner: "", Count: 0, TTL: 0},
		{Owner: `q"uote`, Count: 1, Metadata: "back\\slash", TTL: 5},
		{Owner: "o", Count: 1, Metadata: "<a&b>", TTL: 5},
		{Owner: "o", Count: 1, Metadata: "tab\tnew\nline é \xff", TTL: 5},
	} {
		want, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		if got := h.encode(); got != string(want) {
			t.Errorf("encode(%+v) = %s, want %s", h, got, want)
		}
	}
}

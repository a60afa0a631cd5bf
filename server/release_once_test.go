package server_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
)

// plainEngine hides its engine's optional interfaces: an engine whose
// releases cannot apply once.
type plainEngine struct{ engine.Engine }

// TestReleaseIDAppliesOnce: a release carrying a release_id drops one
// hold, and a copy of it (same id: a client resending a release whose
// answer was lost) drops none, answered with the holds left; GET /v1/info
// says release_once. On a server whose engine cannot release once,
// /v1/info says nothing of it, and a release with an id is refused
// not_supported, dropping nothing.
func TestReleaseIDAppliesOnce(t *testing.T) {
	for _, tc := range []struct {
		what string
		eng  engine.Engine
		once bool
	}{
		{"embedded engine", memory.New(), true},
		{"an engine without ReleaseOnce", plainEngine{memory.New()}, false},
	} {
		t.Run(tc.what, func(t *testing.T) {
			s := start(t, tc.eng)
			info := call(t, "GET", s.url+"/v1/info", "", nil)
			want(t, "info", info, 200, "")
			var got struct {
				ReleaseOnce bool `json:"release_once"`
			}
			if err := json.Unmarshal(info.body, &got); err != nil || got.ReleaseOnce != tc.once {
				t.Fatalf("info %s: release_once %v, want %v", info.body, got.ReleaseOnce, tc.once)
			}
			for range 2 {
				mustAcquire(t, s, "r", map[string]any{"owner": "w", "ttl_ms": 60000})
			}
			release := map[string]any{"owner": "w", "release_id": "id-1"}
			if !tc.once {
				want(t, "release with an id", call(t, "POST", lockURL(s, "r", "release"), "", release), 501, "not_supported")
				if in, err := tc.eng.Inspect(context.Background(), "r"); err != nil || in.Count != 2 {
					t.Fatalf("after the refused release: %+v, %v; want two holds", in, err)
				}
				return
			}
			for copy := range 2 {
				r := call(t, "POST", lockURL(s, "r", "release"), "", release)
				want(t, "release", r, 200, "")
				if left := num(t, r, "remaining"); left != 1 {
					t.Fatalf("copy %d of the release: remaining %d, want 1: %s", copy, left, r.body)
				}
			}
			if in, err := tc.eng.Inspect(context.Background(), "r"); err != nil || in.Count != 1 {
				t.Fatalf("after two copies of one release: %+v, %v; want one hold", in, err)
			}
		})
	}
}

package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
	"github.com/distlock/distlock/server/api"
)

// TestKindRefusedOverHTTP (issue 23): an acquire of a name held as another
// kind, in both orders (a mutex of a semaphore's or an rwlock's name, a
// semaphore or an rwlock of a mutex's), waiting or not, is answered at once
// 400 invalid_argument with arg "name" and the engine's message naming
// both kinds, and changes nothing; on the embedded engine and on Redis.
func TestKindRefusedOverHTTP(t *testing.T) {
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
			want(t, "semaphore", call(t, "POST", lockURL(s, "sem", "acquire"), "", map[string]any{"owner": "a", "kind": "semaphore", "limit": 2}), 200, "")
			want(t, "reader", call(t, "POST", lockURL(s, "rw", "acquire"), "", map[string]any{"owner": "r", "kind": "rwlock"}), 200, "")
			want(t, "mutex", call(t, "POST", lockURL(s, "m", "acquire"), "", map[string]any{"owner": "m"}), 200, "")
			for _, tc := range []struct {
				what, name string
				body       map[string]any
				message    string
			}{
				{"a mutex of a semaphore", "sem", map[string]any{}, `"sem" is a semaphore, not a mutex`},
				{"a mutex of a read-locked name", "rw", map[string]any{}, `"rw" is a rwlock, not a mutex`},
				{"an election of a read-locked name", "rw", map[string]any{"announce": true, "metadata": "leader"}, `"rw" is a rwlock, not a mutex`},
				{"a semaphore of a mutex", "m", map[string]any{"kind": "semaphore", "limit": 2}, `"m" is a mutex, not a semaphore`},
				{"a reader of a mutex", "m", map[string]any{"kind": "rwlock"}, `"m" is a mutex, not a rwlock`},
			} {
				for _, wait := range []int{0, 10000} {
					tc.body["wait_ms"] = wait
					begin := time.Now()
					r := call(t, "POST", lockURL(s, tc.name, "acquire"), "", tc.body)
					want(t, tc.what, r, 400, api.CodeInvalidArgument)
					if arg := r.errField(t, "arg"); arg != "name" {
						t.Errorf("%s: arg %v, want name: %s", tc.what, arg, r.body)
					}
					if msg, _ := r.errField(t, "message").(string); !strings.Contains(msg, tc.message) {
						t.Errorf("%s: message %q, want %q", tc.what, msg, tc.message)
					}
					if d := time.Since(begin); wait > 0 && d > 5*time.Second {
						t.Errorf("%s, waiting: refused after %v, not at once", tc.what, d)
					}
				}
			}
			ctx := context.Background()
			for _, name := range []string{"sem", "rw"} {
				if info := sharedInfo(t, s.eng, name); len(info.Holders) != 1 || info.Waiters != 0 {
					t.Errorf("the refusals changed %s: %+v", name, info)
				}
				if info, err := s.eng.Inspect(ctx, name); err != nil || info.MutexView().Held {
					t.Errorf("a mutex of %s after the refusals: %+v, %v", name, info, err)
				}
			}
			if info, err := s.eng.Inspect(ctx, "m"); err != nil || !info.Held || info.Owner != "m" || info.Count != 1 {
				t.Errorf("the refusals changed the mutex: %+v, %v", info, err)
			}
			if info := sharedInfo(t, s.eng, "m"); info.Held || info.Waiters != 0 {
				t.Errorf("a shared lock of the mutex's name after the refusals: %+v", info)
			}
		})
	}
}

// TestReleaseOrExtendAsOtherKind: a release or an extension that names
// another kind than the owner's hold (a mutex released as a semaphore, a
// semaphore's permit released or extended as a mutex's, a mutex extended
// as a shared hold) is refused as a kind error (400) and changes nothing:
// the hold stays, and the right request then succeeds. Before, the answer
// was 409 not_held "missing" (the lease gone) while it was held.
func TestReleaseOrExtendAsOtherKind(t *testing.T) {
	s := start(t, nil)
	mustAcquire(t, s, "m", map[string]any{"owner": "o", "ttl_ms": 60000})
	mustAcquire(t, s, "s", map[string]any{"kind": "semaphore", "limit": 2, "owner": "o", "ttl_ms": 60000})
	for _, c := range []struct {
		what, name, action string
		body               map[string]any
	}{
		{"a mutex released as a semaphore", "m", "release", map[string]any{"owner": "o", "kind": "semaphore"}},
		{"a mutex released as an RW lock", "m", "release", map[string]any{"owner": "o", "kind": "rwlock"}},
		{"a semaphore released as a mutex", "s", "release", map[string]any{"owner": "o"}},
		{"a mutex extended as a shared hold", "m", "extend", map[string]any{"owner": "o", "ttl_ms": 60000, "shared": true}},
		{"a semaphore extended as a mutex", "s", "extend", map[string]any{"owner": "o", "ttl_ms": 60000}},
	} {
		r := call(t, "POST", lockURL(s, c.name, c.action), "", c.body)
		want(t, c.what, r, http.StatusBadRequest, api.CodeInvalidArgument)
	}
	for _, name := range []string{"m", "s"} {
		r := call(t, "GET", lockURL(s, name, ""), "", nil)
		if r.status != 200 || !strings.Contains(string(r.body), `"held":true`) {
			t.Fatalf("%s after the refused requests: %d %s, want it still held", name, r.status, r.body)
		}
	}
	want(t, "the mutex released as one", call(t, "POST", lockURL(s, "m", "release"), "", map[string]any{"owner": "o"}), 200, "")
	want(t, "the semaphore released as one", call(t, "POST", lockURL(s, "s", "release"), "", map[string]any{"owner": "o", "kind": "semaphore"}), 200, "")
	r := call(t, "POST", lockURL(s, "m", "release"), "", map[string]any{"owner": "o", "kind": "semaphore"})
	want(t, "a released mutex released again as a semaphore", r, http.StatusConflict, api.CodeNotHeld)
}

package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/server"
	"github.com/distlock/distlock/server/api"
)

// decodeInto decodes r's body into v.
func decodeInto(t *testing.T, r reply, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("answer %d: %v: %s", r.status, err, r.body)
	}
}

// sharedInfo inspects name's shared lock on the engine.
func sharedInfo(t *testing.T, eng engine.Engine, name string) engine.Info {
	t.Helper()
	info, err := eng.Inspect(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return info.SharedView()
}

// TestSharedLifecycle: a semaphore's permits over HTTP: acquire with a
// weight, a refusal when they do not fit, status with every holder, the
// mutex view of the name, extend and release with shared.
func TestSharedLifecycle(t *testing.T) {
	s := start(t, nil)
	sem := func(owner string, weight int) map[string]any {
		return map[string]any{"owner": owner, "kind": "semaphore", "limit": 3, "weight": weight, "metadata": owner + " meta"}
	}
	r := call(t, "POST", lockURL(s, "sem", "acquire"), "", sem("a", 2))
	want(t, "acquire a", r, 200, "")
	var ar api.AcquireResponse
	decodeInto(t, r, &ar)
	if ar.Kind != api.KindSemaphore || ar.Weight != 2 || ar.Token == 0 || ar.Count != 1 {
		t.Fatalf("acquire a: %+v", ar)
	}
	r = call(t, "POST", lockURL(s, "sem", "acquire"), "", sem("b", 2))
	want(t, "acquire b (does not fit)", r, 409, api.CodeLocked)
	want(t, "acquire c", call(t, "POST", lockURL(s, "sem", "acquire"), "", sem("c", 1)), 200, "")

	for _, q := range []string{"", "?kind=shared"} {
		r = call(t, "GET", lockURL(s, "sem", "")+q, "", nil)
		want(t, "status"+q, r, 200, "")
		var li api.LockInfo
		decodeInto(t, r, &li)
		if li.Kind != api.KindSemaphore || li.Limit != 3 || !li.Held || len(li.Holders) != 2 || li.Token == 0 {
			t.Fatalf("status%s: %s", q, r.body)
		}
		if h := li.Holders[0]; h.Owner != "a" || h.Weight != 2 || h.Metadata != "a meta" || h.HolderID == "" || h.TTLMs <= 0 || h.Mode != "" {
			t.Fatalf("status%s: first holder %+v", q, h)
		}
	}
	r = call(t, "GET", lockURL(s, "sem", "")+"?kind=mutex", "", nil)
	want(t, "status as a mutex", r, 200, "")
	if m := r.json(t); m["held"] != false || m["kind"] != nil {
		t.Fatalf("status as a mutex: %s", r.body)
	}
	want(t, "status kind=bogus", call(t, "GET", lockURL(s, "sem", "")+"?kind=bogus", "", nil), 400, api.CodeInvalidArgument)

	r = call(t, "POST", s.url+"/v1/extend", "", map[string]any{"locks": []map[string]any{
		{"name": "sem", "owner": "a", "ttl_ms": 60000, "shared": true},
		{"name": "sem", "owner": "a", "ttl_ms": 60000},
	}})
	want(t, "extend batch", r, 200, "")
	var eb api.ExtendBatchResponse
	decodeInto(t, r, &eb)
	if eb.Results[0].Status != api.StatusExtended || eb.Results[0].Token != ar.Token || eb.Results[1].Status != api.StatusMissing {
		t.Fatalf("extend batch: %s", r.body)
	}
	want(t, "extend one", call(t, "POST", lockURL(s, "sem", "extend"), "", map[string]any{"owner": "c", "ttl_ms": 60000, "shared": true}), 200, "")

	want(t, "release a", call(t, "POST", lockURL(s, "sem", "release"), "", map[string]any{"owner": "a", "shared": true}), 200, "")
	want(t, "release a again", call(t, "POST", lockURL(s, "sem", "release"), "", map[string]any{"owner": "a", "shared": true}), 409, api.CodeNotHeld)
	// c holds a permit: a release as a mutex names the wrong kind (400), and
	// changes nothing (TestReleaseOrExtendAsOtherKind).
	want(t, "release c as a mutex", call(t, "POST", lockURL(s, "sem", "release"), "", map[string]any{"owner": "c"}), 400, api.CodeInvalidArgument)
	if info := sharedInfo(t, s.eng, "sem"); len(info.Holders) != 1 || info.Holders[0].Owner != "c" {
		t.Fatalf("after the releases: %+v", info)
	}

	// A reader-writer lock: mode on the wire, in the answer and the status.
	r = call(t, "POST", lockURL(s, "rw", "acquire"), "", map[string]any{"owner": "w", "kind": "rwlock", "mode": "write"})
	want(t, "write lock", r, 200, "")
	decodeInto(t, r, &ar)
	if ar.Kind != api.KindRWLock || ar.Mode != api.ModeWrite || ar.Weight != engine.RWPermits {
		t.Fatalf("write lock: %s", r.body)
	}
	r = call(t, "GET", lockURL(s, "rw", ""), "", nil)
	var li api.LockInfo
	decodeInto(t, r, &li)
	if li.Kind != api.KindRWLock || li.Mode != api.ModeWrite || li.Limit != 0 || len(li.Holders) != 1 || li.Holders[0].Mode != api.ModeWrite {
		t.Fatalf("rw status: %s", r.body)
	}
}

// TestSharedBadInput: every bad shared-lock input is refused with
// invalid_argument (or upgrade_refused) and changes nothing.
func TestSharedBadInput(t *testing.T) {
	s := start(t, nil)
	want(t, "setup", call(t, "POST", lockURL(s, "sem", "acquire"), "", map[string]any{"owner": "a", "kind": "semaphore", "limit": 3}), 200, "")
	want(t, "setup rw", call(t, "POST", lockURL(s, "rw", "acquire"), "", map[string]any{"owner": "r", "kind": "rwlock"}), 200, "")
	want(t, "setup mutex", call(t, "POST", lockURL(s, "m", "acquire"), "", map[string]any{"owner": "m"}), 200, "")
	for _, tc := range []struct {
		what, name string
		body       map[string]any
		arg        string
	}{
		{"unknown kind", "x", map[string]any{"kind": "barrier"}, "kind"},
		{"limit 0", "x", map[string]any{"kind": "semaphore"}, "limit"},
		{"limit too large", "x", map[string]any{"kind": "semaphore", "limit": engine.RWPermits}, "limit"},
		{"negative weight", "x", map[string]any{"kind": "semaphore", "limit": 2, "weight": -1}, "weight"},
		{"weight above the limit", "x", map[string]any{"kind": "semaphore", "limit": 2, "weight": 3}, "weight"},
		{"weight above the stored limit", "sem", map[string]any{"kind": "semaphore", "limit": 5, "weight": 4}, "weight"},
		{"mode on a semaphore", "x", map[string]any{"kind": "semaphore", "limit": 2, "mode": "read"}, "mode"},
		{"weight on an rwlock", "x", map[string]any{"kind": "rwlock", "weight": 1}, "weight"},
		{"unknown mode", "x", map[string]any{"kind": "rwlock", "mode": "append"}, "mode"},
		{"weight on a mutex", "x", map[string]any{"weight": 2}, "weight"},
		{"announce on a semaphore", "x", map[string]any{"kind": "semaphore", "limit": 2, "announce": true}, "announce"},
		{"a semaphore as an rwlock", "sem", map[string]any{"kind": "rwlock"}, "name"},
		{"a mutex as a semaphore", "m", map[string]any{"kind": "semaphore", "limit": 2}, "name"},
		{"a semaphore as a mutex", "sem", map[string]any{}, "name"},
	} {
		r := call(t, "POST", lockURL(s, tc.name, "acquire"), "", tc.body)
		want(t, tc.what, r, 400, api.CodeInvalidArgument)
		if arg := r.errField(t, "arg"); arg != tc.arg {
			t.Errorf("%s: arg %v, want %q: %s", tc.what, arg, tc.arg, r.body)
		}
	}
	// Waiting changes nothing either: refused at once, not after wait_ms
	// (which outlasts the test client's 30s timeout).
	want(t, "a weight above the stored limit, waiting", call(t, "POST", lockURL(s, "sem", "acquire"), "", map[string]any{"kind": "semaphore", "limit": 5, "weight": 4, "wait_ms": server.DefaultMaxWait.Milliseconds()}), 400, api.CodeInvalidArgument)
	r := call(t, "POST", lockURL(s, "rw", "acquire"), "", map[string]any{"owner": "r", "kind": "rwlock", "mode": "write", "wait_ms": 10000})
	want(t, "upgrade", r, 409, api.CodeUpgradeRefused)
	if info := sharedInfo(t, s.eng, "sem"); info.Limit != 3 || len(info.Holders) != 1 || info.Waiters != 0 {
		t.Fatalf("bad input changed the semaphore: %+v", info)
	}
	if info := sharedInfo(t, s.eng, "rw"); len(info.Holders) != 1 || info.Holders[0].Weight != 1 || info.Waiters != 0 {
		t.Fatalf("the refused upgrade changed the lock: %+v", info)
	}
	want(t, "limit 0", call(t, "POST", lockURL(s, "sem", "limit"), "", map[string]any{"limit": 0}), 400, api.CodeInvalidArgument)
	want(t, "limit of an rwlock", call(t, "POST", lockURL(s, "rw", "limit"), "", map[string]any{"limit": 2}), 400, api.CodeInvalidArgument)

	// SetLimit: the new limit and the previous one; a request that declares
	// the old one is served under the new one (here: full), not refused.
	r = call(t, "POST", lockURL(s, "sem", "limit"), "", map[string]any{"limit": 1})
	want(t, "set limit", r, 200, "")
	var lr api.LimitResponse
	decodeInto(t, r, &lr)
	if lr.Limit != 1 || lr.Previous != 3 {
		t.Fatalf("set limit: %s", r.body)
	}
	want(t, "the old limit, full", call(t, "POST", lockURL(s, "sem", "acquire"), "", map[string]any{"kind": "semaphore", "limit": 3}), 409, api.CodeLocked)
	want(t, "the new limit, full", call(t, "POST", lockURL(s, "sem", "acquire"), "", map[string]any{"kind": "semaphore", "limit": 1}), 409, api.CodeLocked)
	want(t, "set limit 2", call(t, "POST", lockURL(s, "sem", "limit"), "", map[string]any{"limit": 2}), 200, "")
	want(t, "the old limit, served", call(t, "POST", lockURL(s, "sem", "acquire"), "", map[string]any{"kind": "semaphore", "limit": 3}), 200, "")
}

// plain hides every optional interface of its engine but the queue: a
// server on it keeps no shared locks.
type plain struct{ engine.Engine }

// TestSharedNotSupported: a server whose engine keeps no shared locks
// answers not_supported for every shared-lock request, and a batch's
// shared items missing.
func TestSharedNotSupported(t *testing.T) {
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	s := start(t, plain{mem})
	for _, c := range []struct {
		what, method, url string
		body              any
	}{
		{"acquire", "POST", lockURL(s, "x", "acquire"), map[string]any{"kind": "semaphore", "limit": 2}},
		{"rw acquire", "POST", lockURL(s, "x", "acquire"), map[string]any{"kind": "rwlock", "wait_ms": 1000}},
		{"release", "POST", lockURL(s, "x", "release"), map[string]any{"owner": "a", "shared": true}},
		{"extend", "POST", lockURL(s, "x", "extend"), map[string]any{"owner": "a", "shared": true}},
		{"limit", "POST", lockURL(s, "x", "limit"), map[string]any{"limit": 2}},
		{"status", "GET", lockURL(s, "x", "") + "?kind=shared", nil},
	} {
		want(t, c.what, call(t, c.method, c.url, "", c.body), 501, api.CodeNotSupported)
	}
	want(t, "mutex status", call(t, "GET", lockURL(s, "x", ""), "", nil), 200, "")
	r := call(t, "POST", s.url+"/v1/extend", "", map[string]any{"locks": []map[string]any{{"name": "x", "owner": "a", "shared": true}}})
	want(t, "extend batch", r, 200, "")
	var eb api.ExtendBatchResponse
	decodeInto(t, r, &eb)
	if len(eb.Results) != 1 || eb.Results[0].Status != api.StatusMissing {
		t.Fatalf("extend batch: %s", r.body)
	}
}

// TestSharedWaiting: held-open shared acquires wait in the lock's queue in
// arrival order (a writer first, then a reader that would fit a reader's
// lock), with the server's own entries kept alive by their heartbeats
// beyond distlock.WaiterTTL, and are answered on the releases.
func TestSharedWaiting(t *testing.T) {
	mem := &beats{Engine: memory.New()}
	t.Cleanup(func() { _ = mem.Close() })
	s := start(t, mem)
	rw := func(owner, mode string, wait int) map[string]any {
		return map[string]any{"owner": owner, "kind": "rwlock", "mode": mode, "wait_ms": wait, "ttl_ms": 60000}
	}
	want(t, "reader", call(t, "POST", lockURL(s, "rw", "acquire"), "", rw("r1", "read", 0)), 200, "")
	got := make(chan heldOpenAnswer, 2)
	ask := func(owner, mode string) {
		r := call(t, "POST", lockURL(s, "rw", "acquire"), "", rw(owner, mode, 30000))
		got <- heldOpenAnswer{owner, r, time.Now()}
	}
	go ask("w", "write")
	waitFor(t, patience, "the writer to queue", func() bool { return sharedInfo(t, s.eng, "rw").Waiters == 1 })
	// A reader that tries now, while a reader holds the lock, is told
	// that the waiters queued first come first: the lock is not "free".
	tried := call(t, "POST", lockURL(s, "rw", "acquire"), "", rw("r3", "read", 0))
	want(t, "a reader's try behind the writer", tried, 409, api.CodeLocked)
	if m, _ := tried.json(t)["error"].(map[string]any)["message"].(string); !strings.Contains(m, "kept for the waiters queued first") || strings.Contains(m, "free") {
		t.Fatalf("a reader's try behind the writer: %s", tried.body)
	}
	go ask("r2", "read")
	waitFor(t, patience, "the reader to queue behind it", func() bool { return sharedInfo(t, s.eng, "rw").Waiters == 2 })
	queued := time.Now()
	// The entries outlive their heartbeat ttl only by heartbeats.
	waitFor(t, 3*distlock.WaiterTTL, "the queue to outlive WaiterTTL", func() bool {
		return time.Since(queued) > distlock.WaiterTTL+distlock.WaiterTTL/2
	})
	if n := sharedInfo(t, s.eng, "rw").Waiters; n != 2 {
		t.Fatalf("%d waiters after WaiterTTL, want 2 (heartbeats lost?)", n)
	}
	if n := mem.shared.Load(); n < 2 {
		t.Fatalf("%d shared waiter heartbeats, want one per waiter every WaiterTTL/3", n)
	}
	noAnswerYet(t, got, "the reader held")
	want(t, "release r1", call(t, "POST", lockURL(s, "rw", "release"), "", map[string]any{"owner": "r1", "shared": true}), 200, "")
	first := nextAnswer(t, got, "the reader's release")
	if first.who != "w" {
		t.Fatalf("%s was answered first, want the writer: %s", first.who, first.r.body)
	}
	want(t, "writer", first.r, 200, "")
	noAnswerYet(t, got, "the writer held")
	want(t, "release w", call(t, "POST", lockURL(s, "rw", "release"), "", map[string]any{"owner": "w", "shared": true}), 200, "")
	second := nextAnswer(t, got, "the writer's release")
	want(t, "reader r2", second.r, 200, "")
	if num(t, second.r, "token") <= num(t, first.r, "token") {
		t.Fatalf("reader token %d not above the writer's %d", num(t, second.r, "token"), num(t, first.r, "token"))
	}
	if n := sharedInfo(t, s.eng, "rw").Waiters; n != 0 {
		t.Fatalf("%d waiters left", n)
	}

	// A waiting request that gives up leaves the queue.
	r := call(t, "POST", lockURL(s, "rw", "acquire"), "", rw("w2", "write", 300))
	want(t, "writer gives up", r, 409, api.CodeLocked)
	if r.errField(t, "waited_ms") == nil {
		t.Fatalf("no waited_ms: %s", r.body)
	}
	if n := sharedInfo(t, s.eng, "rw").Waiters; n != 0 {
		t.Fatalf("%d waiters left after the wait ended", n)
	}
}

// heldOpenAnswer is the answer to a held-open acquire: whose, and when.
type heldOpenAnswer struct {
	who string
	r   reply
	at  time.Time
}

// nextAnswer returns the next answer on got, failing the test when none
// comes within patience (after what).
func nextAnswer(t *testing.T, got <-chan heldOpenAnswer, after string) heldOpenAnswer {
	t.Helper()
	select {
	case a := <-got:
		return a
	case <-time.After(patience):
		t.Fatalf("nobody was answered after %s", after)
		return heldOpenAnswer{}
	}
}

// noAnswerYet fails the test when got has an answer already (while
// nobody should have been).
func noAnswerYet(t *testing.T, got <-chan heldOpenAnswer, while string) {
	t.Helper()
	select {
	case a := <-got:
		t.Fatalf("%s answered while %s: %s", a.who, while, a.r.body)
	default:
	}
}

// beats counts the shared queue's heartbeats its engine is sent.
type beats struct {
	*memory.Engine
	shared atomic.Int64
}

func (b *beats) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	for _, r := range rs {
		if r.Waiter && r.Kind.Shared() {
			b.shared.Add(1)
		}
	}
	return b.Engine.Extend(ctx, rs)
}

// TestSharedListAndDashboard: the listing and the dashboard's snapshot
// show shared locks (which the embedded engine's List leaves out) with
// their kind, every holder's weight or mode, and hide owners from readers.
func TestSharedListAndDashboard(t *testing.T) {
	s := start(t, nil, server.WithTokens(tokens(t)))
	post := func(name string, body map[string]any) {
		t.Helper()
		want(t, "acquire "+name, call(t, "POST", lockURL(s, name, "acquire"), adminTok, body), 200, "")
	}
	post("a-mutex", map[string]any{"owner": "m"})
	post("b-sem", map[string]any{"owner": "s1", "kind": "semaphore", "limit": 4, "weight": 3})
	post("b-sem", map[string]any{"owner": "s2", "kind": "semaphore", "limit": 4})
	post("c-rw", map[string]any{"owner": "r1", "kind": "rwlock"})
	post("c-rw", map[string]any{"owner": "r2", "kind": "rwlock", "mode": "read"})

	r := call(t, "GET", s.url+"/v1/locks", adminTok, nil)
	want(t, "list", r, 200, "")
	var lr api.ListResponse
	decodeInto(t, r, &lr)
	if len(lr.Locks) != 3 || lr.Locks[0].Name != "a-mutex" || lr.Locks[1].Name != "b-sem" || lr.Locks[2].Name != "c-rw" {
		t.Fatalf("list: %s", r.body)
	}
	if l := lr.Locks[1]; l.Kind != api.KindSemaphore || l.Limit != 4 || len(l.Holders) != 2 || l.Holders[0].Weight != 3 || l.Holders[0].Owner != "s1" {
		t.Fatalf("list: the semaphore: %+v", l)
	}
	if l := lr.Locks[2]; l.Kind != api.KindRWLock || l.Mode != api.ModeRead || len(l.Holders) != 2 || l.Holders[1].Mode != api.ModeRead {
		t.Fatalf("list: the rwlock: %+v", l)
	}
	r = call(t, "GET", s.url+"/v1/locks?prefix=b-&limit=1", readTok, nil)
	decodeInto(t, r, &lr)
	if len(lr.Locks) != 1 || lr.Locks[0].Name != "b-sem" || lr.Locks[0].Holders[0].Owner != "" || lr.Locks[0].Holders[0].HolderID == "" {
		t.Fatalf("list by a reader, prefix b-: %s", r.body)
	}

	snap := dashboardSnapshot(t, s, readTok)
	var kinds []string
	for _, l := range snap.Locks {
		kinds = append(kinds, l.Name+":"+l.Kind)
		for _, h := range l.Holders {
			if h.Owner != "" {
				t.Fatalf("the dashboard shows an owner token: %+v", l)
			}
		}
	}
	if strings.Join(kinds, ",") != "a-mutex:,b-sem:semaphore,c-rw:rwlock" {
		t.Fatalf("dashboard locks: %v", kinds)
	}
	if l := snap.Locks[2]; l.Mode != api.ModeRead || len(l.Holders) != 2 {
		t.Fatalf("dashboard rwlock: %+v", l)
	}

	// Released locks drop out of the listing.
	for _, o := range []string{"r1", "r2"} {
		want(t, "release", call(t, "POST", lockURL(s, "c-rw", "release"), adminTok, map[string]any{"owner": o, "shared": true}), 200, "")
	}
	decodeInto(t, call(t, "GET", s.url+"/v1/locks", adminTok, nil), &lr)
	if len(lr.Locks) != 2 {
		t.Fatalf("list after the releases: %+v", lr.Locks)
	}
}

// dashboardSnapshot reads the first snapshot of the dashboard stream.
func dashboardSnapshot(t *testing.T, s *testServer, token string) struct{ Locks []api.LockInfo } {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/v1/dashboard/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		if e, ok := strings.CutPrefix(line, "event: "); ok {
			event = e
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok && event == "snapshot" {
			var snap struct{ Locks []api.LockInfo }
			if err := json.Unmarshal([]byte(d), &snap); err != nil {
				t.Fatal(err)
			}
			return snap
		}
	}
	t.Fatalf("no snapshot: %v", sc.Err())
	return struct{ Locks []api.LockInfo }{}
}

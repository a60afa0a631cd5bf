package redis

// TestKeysLayout: the keys of one lock, built in one allocation, are the
// names every script and reader expects.

import (
	"fmt"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
)

func TestKeysLayout(t *testing.T) {
	e := &Engine{prefix: "distlock:"}
	k := e.keys("a/b")
	want := []string{"distlock:{a/b}", "distlock:{a/b}:q", "distlock:{a/b}:qd", "distlock:{a/b}:qs", "distlock:{a/b}:fence"}
	for i := range want {
		if k[i] != want[i] {
			t.Fatalf("%d: %q want %q", i, k[i], want[i])
		}
	}
	if e.queueKey("a/b") != k[1] || e.lockKey("a/b") != k[0] || e.fenceKey("a/b") != k[4] {
		t.Fatal("keys and the single-key helpers disagree")
	}
}

// TestScriptArgs: the acquire and release commands, built with their
// strings boxed by pointer, carry the keys and arguments that Script.Run
// would send, and go-redis writes and prints them as strings. The digest's
// place stays empty until the command is sent (script.send).
func TestScriptArgs(t *testing.T) {
	e := &Engine{prefix: "distlock:", fenceArg: "604800000", publish: "SPUBLISH", id: "e1"}
	render := func(argv []any) []string {
		out := make([]string, len(argv))
		for i, a := range argv {
			switch v := a.(type) {
			case *strArg:
				b, err := v.MarshalBinary()
				if err != nil || string(b) != v.String() || fmt.Sprint(v) != v.String() {
					t.Fatalf("argument %d: %q, %v, %q", i, b, err, fmt.Sprint(v))
				}
				out[i] = string(b)
			default:
				out[i] = fmt.Sprint(v)
			}
		}
		return out
	}
	keys := e.keys("a/b")
	sh := e.sharedKeys("a/b") // the shared lock's hash, holders and waiters' deadlines: sh[1], sh[2], sh[4]
	cases := []struct {
		got, want []any
	}{
		{e.acquireArgs(engine.AcquireRequest{Name: "a/b", Owner: "o", TTL: 30 * time.Second, OneOff: true, Attempt: "o"}, allKeys),
			[]any{"evalsha", nil, 8, keys[0], keys[1], keys[2], keys[3], sh[1], sh[2], sh[4], keys[4], "o", "30000", "", "604800000", "o", ""}},
		{e.acquireArgs(engine.AcquireRequest{Name: "a/b", Owner: "o", TTL: 30 * time.Second, OneOff: true, Attempt: "o"}, fewKeys),
			[]any{"evalsha", nil, 6, keys[0], keys[1], sh[1], sh[2], sh[4], keys[4], "o", "30000", "", "604800000", "o", ""}},
		{e.acquireArgs(engine.AcquireRequest{Name: "a/b", Owner: "o", TTL: 1500 * time.Millisecond, Metadata: "m", Attempt: "at", Waiting: true}, allKeys),
			[]any{"evalsha", nil, 8, keys[0], keys[1], keys[2], keys[3], sh[1], sh[2], sh[4], keys[4], "o", "1500", "m", "604800000", "at", "1"}},
		{e.acquireArgs(engine.AcquireRequest{Name: "a/b", Owner: "o", TTL: time.Second, Attempt: "at", Waiting: true,
			Waiter: "w", WaiterTTL: 3 * time.Second, Order: engine.OrderFair}, allKeys),
			[]any{"evalsha", nil, 8, keys[0], keys[1], keys[2], keys[3], sh[1], sh[2], sh[4], keys[4], "o", "1000", "", "604800000", "at", "1",
				"", "w", "3000", "1", "1", "SPUBLISH", queueReserveUS, queueStarveUS, "", "distlock:{a/b}:w:e1"}},
		{e.acquireArgs(engine.AcquireRequest{Name: "a/b", Owner: "o", TTL: time.Second, Attempt: "at", Waiting: true,
			Waiter: "w", WaiterTTL: 3 * time.Second, Order: engine.OrderNoReserve}, allKeys),
			[]any{"evalsha", nil, 8, keys[0], keys[1], keys[2], keys[3], sh[1], sh[2], sh[4], keys[4], "o", "1000", "", "604800000", "at", "1",
				"", "w", "3000", "", "", "SPUBLISH", queueReserveUS, queueStarveUS, "1", "distlock:{a/b}:w:e1"}},
		{e.releaseArgs(engine.ReleaseRequest{Name: "a/b", Owner: "o"}, "id-1", allKeys),
			[]any{"evalsha", nil, 4, keys[0], keys[1], keys[2], keys[3], "o", "SPUBLISH", "id-1"}},
		{e.releaseArgs(engine.ReleaseRequest{Name: "a/b", Owner: "o"}, "id-1", fewKeys),
			[]any{"evalsha", nil, 1, keys[0], "o", "SPUBLISH", "id-1"}},
		{e.releaseArgs(engine.ReleaseRequest{Name: "a/b", Owner: "o", Token: 7}, "id-1", allKeys),
			[]any{"evalsha", nil, 4, keys[0], keys[1], keys[2], keys[3], "o", "SPUBLISH", "id-1", "7"}},
		{e.releaseArgs(engine.ReleaseRequest{Name: "a/b", Owner: "o", Undo: true}, "id-1", allKeys),
			[]any{"evalsha", nil, 4, keys[0], keys[1], keys[2], keys[3], "o", "SPUBLISH", "id-1", "", "1"}},
	}
	for i, c := range cases {
		got, want := render(c.got), render(c.want)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%d:\n got %q\nwant %q", i, got, want)
		}
	}
	proposed := engine.AcquireRequest{Name: "a/b", Owner: "o", TTL: time.Second, OneOff: true, TokenProposal: 1795996463527528}
	if got := render(e.acquireArgs(proposed, allKeys)); len(got) != 18 || got[17] != "1795996463527528" {
		t.Errorf("a proposed token: %q", got)
	}
	e.noFloor = "0"
	got := render(e.acquireArgs(engine.AcquireRequest{Name: "a/b", Owner: "o", TTL: time.Second, OneOff: true}, allKeys))
	if len(got) != 18 || got[17] != "0" {
		t.Errorf("without the time floor: %q", got)
	}
	if got := render(e.acquireArgs(proposed, allKeys)); len(got) != 18 || got[17] != "0" {
		t.Errorf("a proposed token without the time floor: %q", got)
	}
}

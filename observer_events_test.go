package distlock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/memory"
)

// ctxKey marks the contexts an eventRecorder hands back.
type ctxKey struct{}

// eventRecorder is an EventObserver that records its events, checks that
// each receives the context its predecessor returned, and stamps grants
// with a fixed traceparent per call.
type eventRecorder struct {
	recorder
	stamp  string
	mu     sync.Mutex
	events []string
	evs    []distlock.Event
	bad    []string
}

func (r *eventRecorder) add(ctx context.Context, want, what string, ev distlock.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if got, _ := ctx.Value(ctxKey{}).(string); got != want {
		r.bad = append(r.bad, what+" got context "+got+", want "+want)
	}
	r.events = append(r.events, what)
	r.evs = append(r.evs, ev)
}

func (r *eventRecorder) StartAcquire(ctx context.Context, ev distlock.Event) (context.Context, string) {
	r.add(context.WithValue(ctx, ctxKey{}, "caller"), "caller", "start", ev)
	return context.WithValue(ctx, ctxKey{}, "call"), r.stamp
}
func (r *eventRecorder) AcquireWaiting(ctx context.Context, ev distlock.Event) {
	r.add(ctx, "call", "waiting", ev)
}
func (r *eventRecorder) EndAcquire(ctx context.Context, ev distlock.Event) context.Context {
	r.add(ctx, "call", "end", ev)
	return context.WithValue(ctx, ctxKey{}, "hold")
}
func (r *eventRecorder) LeaseRenewed(ctx context.Context, ev distlock.Event) {
	r.add(ctx, "hold", "renewed", ev)
}
func (r *eventRecorder) LeaseEnded(ctx context.Context, ev distlock.Event) {
	r.add(ctx, "hold", "ended", ev)
}

func (r *eventRecorder) snapshot() ([]string, []distlock.Event, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...), append([]distlock.Event(nil), r.evs...), append([]string(nil), r.bad...)
}

const testStamp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// TestEventObserver: an EventObserver hears a call's start, wait (with the
// holder's metadata, stamp included), end and its lease's renewal and
// release, each with the context the previous event returned; the stamp
// is stored after the caller's metadata and TraceMetadata splits it off.
// On the fake clock (testing/synctest): the release comes one poll after
// the first renewal, never after a second one or the 300ms ttl, however
// late the machine runs the test.
func TestEventObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		eng := memory.New()
		holderRec := &eventRecorder{stamp: testStamp}
		holder := distlock.New(eng, distlock.WithObserver(holderRec))
		defer holder.Close()
		waiterRec := &eventRecorder{}
		waiter := distlock.New(eng, distlock.WithObserver(waiterRec))
		defer waiter.Close()

		l, err := holder.Acquire(ctx, "ev", distlock.WithMetadata("job 7"), distlock.WithTTL(300*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		info, err := holder.Inspect(ctx, "ev")
		if err != nil {
			t.Fatal(err)
		}
		md, tp := distlock.TraceMetadata(info.Metadata)
		if md != "job 7" || tp != testStamp {
			t.Fatalf("stored metadata %q splits into %q, %q", info.Metadata, md, tp)
		}

		got := make(chan error, 1)
		go func() {
			wl, err := waiter.Acquire(ctx, "ev", distlock.WithOwner("w1"))
			if err == nil {
				err = wl.Release(ctx)
			}
			got <- err
		}()
		// The waiter's queue entry names its explicit owner.
		deadline := time.Now().Add(time.Minute) // a bound for a hang, not a speed
		for {
			if time.Now().After(deadline) {
				t.Fatal("the waiter never showed in the queue")
			}
			info, err := holder.Inspect(ctx, "ev")
			if err != nil {
				t.Fatal(err)
			}
			if len(info.Queue) == 1 {
				if o := distlock.WaiterOwner(info.Queue[0].ID); o != "w1" {
					t.Fatalf("waiter id %q names owner %q, want w1", info.Queue[0].ID, o)
				}
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		// Held past a renewal (ttl/3).
		for {
			if ev, _, _ := holderRec.snapshot(); len(ev) >= 3 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no renewal was observed")
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatal(err)
		}

		hev, hevs, bad := holderRec.snapshot()
		if len(bad) > 0 {
			t.Fatal(bad)
		}
		if strings.Join(hev, ",") != "start,end,renewed,ended" {
			t.Fatalf("holder's events %v", hev)
		}
		end := hevs[1]
		if end.Token != l.Token() || end.Owner != l.Owner() || end.Kind != "mutex" || end.Engine == "" || !end.Wait {
			t.Fatalf("end event %+v, lease token %d owner %s", end, l.Token(), l.Owner())
		}
		if hevs[2].Err != nil || hevs[3].Cause != 0 || hevs[3].Held <= 0 {
			t.Fatalf("renewed %+v, ended %+v", hevs[2], hevs[3])
		}

		wev, wevs, bad := waiterRec.snapshot()
		if len(bad) > 0 {
			t.Fatal(bad)
		}
		if strings.Join(wev, ",") != "start,waiting,end,ended" {
			t.Fatalf("waiter's events %v", wev)
		}
		if hs := wevs[1].Holders; len(hs) != 1 || hs[0].Owner != l.Owner() || hs[0].Metadata != info.Metadata {
			t.Fatalf("waiting event's holders %+v", hs)
		}
		if e := wevs[2]; !e.Contended || !e.Queued || e.Owner != "w1" || e.Err != nil {
			t.Fatalf("waiter's end event %+v", e)
		}
		if _, tp := distlock.TraceMetadata(func() string { i, _ := waiter.Inspect(ctx, "ev"); return i.Metadata }()); tp != "" {
			t.Fatalf("an observer without a stamp stored %q", tp)
		}
	})
}

// TestEventObserverFailedCall: a refused TryAcquire ends with its error.
func TestEventObserverFailedCall(t *testing.T) {
	ctx := context.Background()
	eng := memory.New()
	c1 := distlock.New(eng)
	defer c1.Close()
	l, err := c1.Acquire(ctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	rec := &eventRecorder{}
	c2 := distlock.New(eng, distlock.WithObserver(rec))
	defer c2.Close()
	if _, err := c2.TryAcquire(ctx, "f"); !errors.Is(err, distlock.ErrLocked) {
		t.Fatal(err)
	}
	ev, evs, _ := rec.snapshot()
	if strings.Join(ev, ",") != "start,end" || !errors.Is(evs[1].Err, distlock.ErrLocked) || !evs[1].Contended || evs[1].Wait {
		t.Fatalf("events %v %+v", ev, evs)
	}
}

// TestTraceMetadata: only a well-formed traceparent after the mark is
// split off; anything else is the caller's metadata, whole.
func TestTraceMetadata(t *testing.T) {
	for _, tc := range []struct{ stored, md, tp string }{
		{"plain", "plain", ""},
		{"", "", ""},
		{"a\x1etraceparent=" + testStamp, "a", testStamp},
		{"\x1etraceparent=" + testStamp, "", testStamp},
		{"a\x1etraceparent=00-XYZ", "a\x1etraceparent=00-XYZ", ""},
		{"a\x1etraceparent=" + strings.ToUpper(testStamp), "a\x1etraceparent=" + strings.ToUpper(testStamp), ""},
		{"traceparent=" + testStamp, "traceparent=" + testStamp, ""},
	} {
		md, tp := distlock.TraceMetadata(tc.stored)
		if md != tc.md || tp != tc.tp {
			t.Errorf("TraceMetadata(%q) = %q, %q; want %q, %q", tc.stored, md, tp, tc.md, tc.tp)
		}
	}
	const tok = "0af7651916cd43dd8448eb211c80319c"
	for _, tc := range []struct{ token, owner, id string }{
		{tok, "job-7", tok + ":job-7"},
		{tok, "", tok},
		{tok, strings.Repeat("o", distlock.MaxOwnerLen-32), tok}, // would not fit
		{"not-a-token", "job-7", "not-a-token"},
	} {
		id := distlock.WaiterID(tc.token, tc.owner)
		if id != tc.id {
			t.Errorf("WaiterID(%q, %q) = %q, want %q", tc.token, tc.owner, id, tc.id)
		}
		want := ""
		if id != tc.token {
			want = tc.owner
		}
		if distlock.WaiterOwner(id) != want {
			t.Errorf("WaiterOwner(%q) = %q, want %q", id, distlock.WaiterOwner(id), want)
		}
	}
	for _, id := range []string{"", "abc", "0af7651916cd43dd8448eb211c80319c", "0af7651916cd43dd8448eb211c80319c:", "0AF7651916CD43DD8448EB211C80319C:x", "0af7651916cd43dd8448eb211c80319cxowner"} {
		if o := distlock.WaiterOwner(id); o != "" {
			t.Errorf("WaiterOwner(%q) = %q, want none", id, o)
		}
	}
}

// TestStampNeverHurtsMetadata: the caller's metadata always wins. A stamp
// that would make it longer than MaxMetadataLen is dropped (the grant is
// stored with the caller's metadata alone); metadata too long is refused
// with an *ArgumentError as without an observer, and nothing is stored; a
// malformed stamp is not stored; an election's value is never stamped.
func TestStampNeverHurtsMetadata(t *testing.T) {
	ctx := context.Background()
	eng := memory.New()
	rec := &eventRecorder{stamp: testStamp}
	c := distlock.New(eng, distlock.WithObserver(rec))
	defer c.Close()
	stored := func(name string) string {
		t.Helper()
		info, err := c.Inspect(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return info.Metadata
	}

	full := strings.Repeat("m", distlock.MaxMetadataLen)
	l, err := c.Acquire(ctx, "full", distlock.WithMetadata(full))
	if err != nil {
		t.Fatal(err)
	}
	if got := stored("full"); got != full {
		t.Fatalf("metadata of the maximum length stored as %d bytes, want it unchanged", len(got))
	}
	_ = l.Release(ctx)

	room := strings.Repeat("m", distlock.MaxMetadataLen-len(testStamp)-len("\x1etraceparent="))
	l, err = c.Acquire(ctx, "room", distlock.WithMetadata(room))
	if err != nil {
		t.Fatal(err)
	}
	if md, tp := distlock.TraceMetadata(stored("room")); md != room || tp != testStamp {
		t.Fatalf("metadata with just room for the stamp: %d bytes and %q", len(md), tp)
	}
	_ = l.Release(ctx)

	var ae *distlock.ArgumentError
	if _, err := c.Acquire(ctx, "long", distlock.WithMetadata(full+"x")); !errors.As(err, &ae) {
		t.Fatalf("metadata too long: %v, want an *ArgumentError", err)
	}
	if info, _ := c.Inspect(ctx, "long"); info.Held {
		t.Fatal("a refused acquire left the lock held")
	}

	bad := distlock.New(eng, distlock.WithObserver(&eventRecorder{stamp: "not a traceparent"}))
	defer bad.Close()
	l, err = bad.Acquire(ctx, "bad", distlock.WithMetadata("x"))
	if err != nil {
		t.Fatal(err)
	}
	if got := stored("bad"); got != "x" {
		t.Fatalf("a malformed stamp was stored: %q", got)
	}
	_ = l.Release(ctx)

	ld, err := c.Campaign(ctx, "elect", "leader-1")
	if err != nil {
		t.Fatal(err)
	}
	defer ld.Resign(ctx)
	if got := stored("elect"); got != "leader-1" {
		t.Fatalf("an election's value was stamped: %q", got)
	}
}

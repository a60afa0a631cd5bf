package wire

import (
	"reflect"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/server/api"
)

// TestInfoRoundTrip: an engine.Info of every kind comes back from its wire
// form (LockInfo, then Info) as it was, for a caller that sees owner
// tokens; for one that does not, each holder comes back as "holder:" and
// its fingerprint, and each queued waiter as "waiter:" and its id's
// fingerprint, with nothing else lost and no owner token or waiter id on
// the wire. A partial answer keeps its mark.
func TestInfoRoundTrip(t *testing.T) {
	partial := &engine.PartialError{Unanswered: []string{"node-2", "node-4"}}
	reader := func(o string, tok uint64) engine.Holder {
		return engine.Holder{Owner: o, Count: 1, Token: tok, TTL: 2 * time.Second, Weight: 1}
	}
	cases := []struct {
		name string
		in   engine.Info
	}{
		{"free mutex", engine.Info{Name: "m", HighWater: 7}},
		{"held mutex", engine.Info{Name: "m", Held: true, Owner: "o1", Count: 2, Metadata: "md", Token: 9, TTL: 1500 * time.Millisecond,
			HighWater: 9, Waiters: 3, Subscribers: 4, Queue: []engine.Waiter{{ID: "w1", Waited: time.Second}, {ID: "w2"}, {ID: "w3", Waited: time.Millisecond}}}},
		{"permanent mutex", engine.Info{Name: "m", Held: true, Owner: "o1", Count: 1, Token: 5, TTL: -1, HighWater: 5}},
		{"election", engine.Info{Name: "e", Held: true, Owner: "leader", Count: 1, Metadata: "http://leader:8080", Token: 12,
			TTL: 3 * time.Second, HighWater: 12, Waiters: 2, Subscribers: 5}},
		{"semaphore", engine.Info{Name: "s", Held: true, Kind: engine.Semaphore, Limit: 5, Token: 21, HighWater: 21, Waiters: 1,
			Holders: []engine.Holder{
				{Owner: "a", Count: 1, Token: 20, TTL: time.Second, Weight: 2, Metadata: "x"},
				{Owner: "b", Count: 3, Token: 21, TTL: 4 * time.Second, Weight: 3}},
			Queue: []engine.Waiter{{ID: "w", Waited: 2 * time.Second}}}},
		{"free semaphore", engine.Info{Name: "s", Kind: engine.Semaphore, Limit: 2, HighWater: 3}},
		{"traced mutex", engine.Info{Name: "m", Held: true, Owner: "o1", Count: 1, Metadata: traced("deploy"), Token: 9, TTL: time.Second, HighWater: 9}},
		{"traced semaphore", engine.Info{Name: "s", Held: true, Kind: engine.Semaphore, Limit: 2, Token: 4, HighWater: 4,
			Holders: []engine.Holder{{Owner: "a", Count: 1, Token: 4, TTL: time.Second, Weight: 1, Metadata: traced("")}}}},
		{"rw readers", engine.Info{Name: "rw", Held: true, Kind: engine.RWLock, Limit: engine.RWPermits, Token: 31, HighWater: 31,
			Holders: []engine.Holder{reader("r1", 30), reader("r2", 31)}}},
		{"rw writer", engine.Info{Name: "rw", Held: true, Kind: engine.RWLock, Limit: engine.RWPermits, Token: 40, HighWater: 40, Waiters: 2,
			Holders: []engine.Holder{{Owner: "w", Count: 1, Token: 40, TTL: time.Second, Weight: engine.RWPermits}}}},
		{"partial mutex", engine.Info{Name: "m", Held: true, Owner: "o", Count: 1, Token: 3, TTL: time.Second, HighWater: 3, Partial: partial}},
		{"partial semaphore", engine.Info{Name: "s", Kind: engine.Semaphore, Limit: 1, Partial: partial}},
	}
	for _, c := range cases {
		if got := Info(LockInfo(c.in, true)); !reflect.DeepEqual(got, c.in) {
			t.Errorf("%s (owners shown): %+v came back as %+v", c.name, c.in, got)
		}
		j := LockInfo(c.in, false)
		if j.Owner != "" {
			t.Errorf("%s: owner %q on the wire for a caller without owners", c.name, j.Owner)
		}
		for _, h := range j.Holders {
			if h.Owner != "" {
				t.Errorf("%s: holder owner %q on the wire for a caller without owners", c.name, h.Owner)
			}
		}
		for _, w := range j.Queue {
			if w.Waiter != "" {
				t.Errorf("%s: waiter id %q on the wire for a caller without owners", c.name, w.Waiter)
			}
		}
		want := c.in
		if want.Held && !want.Kind.Shared() {
			want.Owner = "holder:" + api.HolderID(want.Owner)
		}
		want.Holders = nil
		for _, h := range c.in.Holders {
			h.Owner = "holder:" + api.HolderID(h.Owner)
			want.Holders = append(want.Holders, h)
		}
		want.Queue = nil
		for _, w := range c.in.Queue {
			w.ID = "waiter:" + api.HolderID(w.ID)
			want.Queue = append(want.Queue, w)
		}
		if got := Info(j); !reflect.DeepEqual(got, want) {
			t.Errorf("%s (owners withheld): came back as %+v, want %+v", c.name, got, want)
		}
	}
}

// TestInfoWire: the wire form's kind-specific fields: an RW lock's mode
// (write while a writer holds it) and holder modes, a semaphore's limit,
// an RW lock's limit left off (it is always RWPermits); an empty queue
// listing reads back as none (Waiters says there is nothing to list).
func TestInfoWire(t *testing.T) {
	w := LockInfo(engine.Info{Name: "rw", Held: true, Kind: engine.RWLock, Limit: engine.RWPermits,
		Holders: []engine.Holder{{Owner: "w", Weight: engine.RWPermits}}}, true)
	if w.Kind != api.KindRWLock || w.Mode != api.ModeWrite || w.Limit != 0 || w.Holders[0].Mode != api.ModeWrite {
		t.Errorf("rw writer: %+v", w)
	}
	r := LockInfo(engine.Info{Name: "rw", Held: true, Kind: engine.RWLock, Limit: engine.RWPermits,
		Holders: []engine.Holder{{Owner: "a", Weight: 1}, {Owner: "b", Weight: 1}}}, true)
	if r.Mode != api.ModeRead || r.Holders[1].Mode != api.ModeRead {
		t.Errorf("rw readers: %+v", r)
	}
	s := LockInfo(engine.Info{Name: "s", Kind: engine.Semaphore, Limit: 4}, true)
	if s.Kind != api.KindSemaphore || s.Limit != 4 || s.Mode != "" {
		t.Errorf("semaphore: %+v", s)
	}
	if got := Info(LockInfo(engine.Info{Name: "m", Queue: []engine.Waiter{}}, true)); got.Queue != nil || got.Waiters != 0 {
		t.Errorf("empty queue: %+v", got)
	}
	if m := LockInfo(engine.Info{Name: "m", HighWater: 2}, true); m.Kind != "" || m.HolderID != "" || m.Token != 0 || m.Holders != nil {
		t.Errorf("free mutex: %+v", m)
	}
	if PartialOf(nil) != nil || Partial(nil) != nil {
		t.Error("a whole answer is marked partial")
	}
}

// tracedParent is a W3C traceparent, as a traced client stores it with a
// grant's metadata (distlock.JoinTraceMetadata).
const tracedParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// traced is metadata as stored with tracedParent.
func traced(metadata string) string { return distlock.JoinTraceMetadata(metadata, tracedParent) }

// TestTraceparentApart: on the wire a holder's metadata and the trace
// context stored with it travel apart (metadata, traceparent), so a
// listing shows the caller's metadata without the record separator and
// the traceparent after it; metadata without a stamp travels whole.
func TestTraceparentApart(t *testing.T) {
	j := LockInfo(engine.Info{Name: "m", Held: true, Owner: "o", Count: 1, Metadata: traced("deploy"), Token: 1}, true)
	if j.Metadata != "deploy" || j.Traceparent != tracedParent {
		t.Fatalf("mutex on the wire: metadata %q, traceparent %q", j.Metadata, j.Traceparent)
	}
	j = LockInfo(engine.Info{Name: "s", Held: true, Kind: engine.Semaphore, Limit: 2, Token: 1,
		Holders: []engine.Holder{{Owner: "a", Count: 1, Token: 1, Weight: 1, Metadata: traced("job-7")}}}, true)
	if h := j.Holders[0]; h.Metadata != "job-7" || h.Traceparent != tracedParent {
		t.Fatalf("semaphore holder on the wire: metadata %q, traceparent %q", h.Metadata, h.Traceparent)
	}
	plain := "a\x1etraceparent=not-one"
	if j := LockInfo(engine.Info{Name: "m", Held: true, Owner: "o", Count: 1, Metadata: plain, Token: 1}, true); j.Metadata != plain || j.Traceparent != "" {
		t.Fatalf("metadata without a stamp on the wire: metadata %q, traceparent %q", j.Metadata, j.Traceparent)
	}
}

package enginetest

import (
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
)

// badKindInput: engine.Acquire refuses kind fields no engine takes
// (engine.CheckKind) with an *engine.ArgumentError naming the field, on
// every engine, shared locks or not, before anything changes: a free name
// stays free and kindless, and a held mutex keeps its holder, token and
// count (a release of an unknown kind too).
func (s *suite) badKindInput(t *testing.T) {
	e := s.h.New(t)
	ctx := ctxTimeout(t, 30*time.Second)
	free, held := lockName(t), lockName(t)+"-held"
	g, err := e.Acquire(ctx, engine.AcquireRequest{Name: held, Owner: "holder", Attempt: "holder", TTL: time.Minute})
	if err != nil || !g.Acquired {
		t.Fatalf("the mutex: %+v, %v", g, err)
	}
	defer func() { _, _ = e.Release(ctx, engine.ReleaseRequest{Name: held, Owner: "holder"}) }()
	cases := []struct {
		what   string
		arg    string
		kind   engine.Kind
		limit  int
		weight int
	}{
		{"an unknown kind", "kind", 9, 2, 1},
		{"a mutex with a limit", "limit", engine.Mutex, 2, 0},
		{"a mutex with a weight", "weight", engine.Mutex, 0, 2},
		{"a semaphore's limit below 0", "limit", engine.Semaphore, -1, 1},
		{"a semaphore's limit of RWPermits", "limit", engine.Semaphore, engine.RWPermits, 1},
		{"a semaphore's weight 0", "weight", engine.Semaphore, 2, 0},
		{"a semaphore's weight below 0", "weight", engine.Semaphore, 2, -1},
		{"an RW lock's weight 2", "weight", engine.RWLock, engine.RWPermits, 2},
		{"an RW lock's limit 5", "limit", engine.RWLock, 5, 1},
	}
	for _, tc := range cases {
		for _, name := range []string{free, held} {
			_, err := e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "bad", Attempt: "bad", TTL: time.Minute,
				Kind: tc.kind, Limit: tc.limit, Weight: tc.weight})
			var ae *engine.ArgumentError
			if !errors.As(err, &ae) || ae.Arg != tc.arg || ae.Reason == "" {
				t.Errorf("%s on %s: %v, want an *engine.ArgumentError about the %s", tc.what, name, err, tc.arg)
			}
		}
	}
	var ae *engine.ArgumentError
	if _, err := e.Release(ctx, engine.ReleaseRequest{Name: held, Owner: "holder", Kind: 9}); !errors.As(err, &ae) || ae.Arg != "kind" {
		t.Errorf("a release of an unknown kind: %v, want an *engine.ArgumentError about the kind", err)
	}
	if info, err := e.Inspect(ctx, free); err != nil || info.Held || info.Kind != engine.Mutex || info.Limit != 0 || info.Waiters != 0 {
		t.Errorf("the refused requests changed the free name: %+v, %v", info, err)
	}
	if info, err := e.Inspect(ctx, held); err != nil || info.Owner != "holder" || info.Token != g.Token || info.Count != 1 {
		t.Errorf("the refused requests changed the held mutex: %+v, %v; want holder's token %d, one hold", info, err, g.Token)
	}
}

package check

import (
	"testing"

	"github.com/distlock/distlock/safety/history"
)

// grantEv is a granted acquire at [from, until] with weight and access.
func grantEv(client, owner string, token uint64, from, until int64, weight int, access string) history.Event {
	return history.Event{Kind: history.KindAcquire, Client: client, Owner: owner, Token: token, Invoke: from - 1,
		Complete: from, Deadline: until, Result: history.OK, Weight: weight, Access: access}
}

func relEv(owner string, at int64) history.Event {
	return history.Event{Kind: history.KindRelease, Owner: owner, Invoke: at, Complete: at + 1, Result: history.OK}
}

func TestSemaphoreLimit(t *testing.T) {
	ok := []history.Event{
		grantEv("a", "a1", 1, 10, 100, 1, ""), grantEv("b", "b1", 2, 20, 100, 1, ""),
		relEv("a1", 50), grantEv("c", "c1", 3, 60, 100, 1, ""),
	}
	r := Run(ok, Params{Limit: 2})
	if len(r.OverLimit) != 0 || r.MaxHeld != 2 {
		t.Fatalf("within the limit: over %d, max %d", len(r.OverLimit), r.MaxHeld)
	}
	// A weight-2 grant while one permit is held: 3 > 2.
	bad := []history.Event{grantEv("a", "a1", 1, 10, 100, 1, ""), grantEv("b", "b1", 2, 20, 100, 2, "")}
	if r := Run(bad, Params{Limit: 2}); len(r.OverLimit) != 1 || r.MaxHeld != 3 {
		t.Fatalf("over the limit (weights counted) not caught: %d, max %d", len(r.OverLimit), r.MaxHeld)
	}
	// A window that ends at its deadline frees its permits then.
	expired := []history.Event{grantEv("a", "a1", 1, 10, 30, 2, ""), grantEv("b", "b1", 2, 40, 100, 2, "")}
	if r := Run(expired, Params{Limit: 2}); len(r.OverLimit) != 0 {
		t.Fatalf("expired permits counted: %d", len(r.OverLimit))
	}
}

func TestWriterExclusion(t *testing.T) {
	ok := []history.Event{
		grantEv("a", "a1", 1, 10, 100, 1, history.AccessRead), grantEv("b", "b1", 2, 20, 100, 1, history.AccessRead),
		relEv("a1", 40), relEv("b1", 45), grantEv("c", "c1", 3, 50, 100, 1, history.AccessWrite),
	}
	if r := Run(ok, Params{Shared: true}); len(r.WriterOverlaps) != 0 {
		t.Fatalf("readers then a writer: %d violations", len(r.WriterOverlaps))
	}
	for _, bad := range [][]history.Event{
		{grantEv("a", "a1", 1, 10, 100, 1, history.AccessRead), grantEv("c", "c1", 2, 20, 100, 1, history.AccessWrite)},
		{grantEv("c", "c1", 1, 10, 100, 1, history.AccessWrite), grantEv("a", "a1", 2, 20, 100, 1, history.AccessRead)},
		{grantEv("c", "c1", 1, 10, 100, 1, history.AccessWrite), grantEv("d", "d1", 2, 20, 100, 1, history.AccessWrite)},
	} {
		if r := Run(bad, Params{Shared: true}); len(r.WriterOverlaps) != 1 {
			t.Fatalf("a writer with another holder not caught: %d", len(r.WriterOverlaps))
		}
	}
}

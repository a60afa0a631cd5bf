package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
)

// TestNotices: an announced grant and a new value reach a plain
// subscriber with the holder's term and value; a release carries no
// notice, so the observer reads.
func TestNotices(t *testing.T) {
	ctx := context.Background()
	e := memory.New()
	defer e.Close()
	sub, err := e.Subscribe(ctx, "n")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	notices := sub.(engine.Noticer)
	g, err := e.Acquire(ctx, engine.AcquireRequest{Name: "n", Owner: "o", TTL: time.Minute, Metadata: "v", Announce: true})
	if err != nil || !g.Acquired {
		t.Fatal(g, err)
	}
	<-sub.C()
	if n, ok := notices.Notice(); !ok || !n.Held || n.Token != g.Token || n.Metadata != "v" || n.TTL <= 0 {
		t.Fatalf("grant: %+v %v, want term %d, value v", n, ok, g.Token)
	}
	if st, err := e.SetMetadata(ctx, engine.MetadataRequest{Name: "n", Owner: "o", Metadata: "w"}); err != nil || st != engine.Extended {
		t.Fatal(st, err)
	}
	<-sub.C()
	if n, ok := notices.Notice(); !ok || n.Token != g.Token || n.Metadata != "w" {
		t.Fatalf("proclaim: %+v %v", n, ok)
	}
	if _, err := e.Release(ctx, engine.ReleaseRequest{Name: "n", Owner: "o"}); err != nil {
		t.Fatal(err)
	}
	<-sub.C()
	if n, ok := notices.Notice(); ok {
		t.Fatalf("release: notice %+v trusted, want a read", n)
	}
	g, err = e.Acquire(ctx, engine.AcquireRequest{Name: "n", Owner: "p", TTL: time.Minute, Metadata: "x", Announce: true})
	if err != nil || !g.Acquired {
		t.Fatal(g, err)
	}
	<-sub.C() // its notice waits in the subscription
	if _, err := e.Release(ctx, engine.ReleaseRequest{Name: "n", Owner: "p"}); err != nil {
		t.Fatal(err)
	}
	<-sub.C()
	if n, ok := notices.Notice(); ok {
		t.Fatalf("release after a grant: notice %+v trusted, want a read", n)
	}
}

package remote_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/engine/quorum"
	"github.com/distlock/distlock/internal/servertest"
)

// silent is an embedded node that does not answer reads (a hung Redlock
// node, as its admin views see it).
type silent struct{ *memory.Engine }

var errSilent = errors.New("no answer")

func (silent) Inspect(context.Context, string) (engine.Info, error) { return engine.Info{}, errSilent }
func (silent) List(context.Context, string, string, int) ([]engine.Info, string, error) {
	return nil, "", errSilent
}

// TestPartialThroughServer: a server on a quorum whose node does not
// answer marks its answers partial, and the remote engine hands the mark
// on: Info.Partial on Inspect (a mutex and a shared lock), an *engine.PartialError
// with the page on List, naming the node; a whole answer carries none.
func TestPartialThroughServer(t *testing.T) {
	third := silent{memory.New()}
	nodes := []engine.Engine{memory.New(), memory.New(), third}
	q, err := quorum.New(nodes, quorum.WithoutFencing())
	if err != nil {
		t.Fatal(err)
	}
	_, url := servertest.Start(t, q, false)
	e := newRemote(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := distlock.New(e)
	defer c.Close()
	l, err := c.Acquire(ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Release(ctx) }()
	s, err := c.Semaphore("s", 1).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Release(ctx) }()
	want := []string{"node 2"}

	info, err := e.Inspect(ctx, "m")
	if err != nil || !info.Held || info.Partial == nil || !slices.Equal(info.Partial.Unanswered, want) {
		t.Fatalf("Inspect: %+v, %v; want held, partial naming %v", info, err, want)
	}
	info, err = e.Inspect(ctx, "s")
	if err != nil || !info.Held || info.Partial == nil || !slices.Equal(info.Partial.Unanswered, want) {
		t.Fatalf("Inspect: %+v, %v; want held, partial naming %v", info, err, want)
	}
	infos, _, err := e.List(ctx, "", "", 10)
	p, ok := engine.AsPartial(err)
	if !ok || !slices.Equal(p.Unanswered, want) || len(infos) != 2 {
		t.Fatalf("List: %d locks, %v; want both locks and a partial error naming %v", len(infos), err, want)
	}

	whole, err := quorum.New([]engine.Engine{memory.New(), memory.New(), memory.New()}, quorum.WithoutFencing())
	if err != nil {
		t.Fatal(err)
	}
	_, wholeURL := servertest.Start(t, whole, false)
	w := newRemote(t, wholeURL)
	if info, err := w.Inspect(ctx, "m"); err != nil || info.Partial != nil {
		t.Fatalf("Inspect of a whole quorum: %+v, %v; want no partial mark", info, err)
	}
	if _, _, err := w.List(ctx, "", "", 10); err != nil {
		t.Fatalf("List of a whole quorum: %v", err)
	}
}

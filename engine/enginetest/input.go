package enginetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/quorum"
)

// badInput: every bad input gets a typed error and changes nothing.
func (s *suite) badInput(t *testing.T) {
	c := s.client(t)
	name := lockName(t)
	ctx := ctxTimeout(t, 30*time.Second)
	// No renewal: a renewal during the cases would lengthen the ttl they
	// must leave alone (a minute outlasts them on a starved machine).
	l, err := c.Acquire(ctx, name, distlock.WithTTL(time.Minute), distlock.WithAutoRenew(false), distlock.WithMetadata("m"))
	if err != nil {
		t.Fatal(err)
	}
	// On a quorum the grant returns once a majority granted; a straggler's
	// late grant still mints a token there. Wait until the state settles:
	// on a quorum, until every node holds the lock for l (what the nodes
	// recorded: two equal reads can both come before a straggler's grant).
	var before distlock.Info
	nodes, _ := s.h.New(t).(interface {
		InspectNodes(context.Context, string) []quorum.NodeInfo
	})
	WaitFor(t, 20*time.Second, "the grant to settle", func() bool {
		prev := before
		before, err = c.Inspect(ctx, name)
		return err == nil && prev.HighWater == before.HighWater && prev.Token == before.Token &&
			(nodes == nil || everyNodeHolds(nodes.InspectNodes(ctx, name), l.Owner()))
	})
	var nilCtx context.Context
	long := strings.Repeat("x", distlock.MaxNameLen+1)
	cases := []struct {
		name string
		call func() error
		want error
	}{
		{"empty name", func() error { _, err := c.TryAcquire(ctx, ""); return err }, distlock.ErrInvalidArgument},
		{"name over 512 bytes", func() error { _, err := c.TryAcquire(ctx, long); return err }, distlock.ErrInvalidArgument},
		{"name not UTF-8", func() error { _, err := c.TryAcquire(ctx, "a\xffb"); return err }, distlock.ErrInvalidArgument},
		{"ttl zero", func() error { _, err := c.TryAcquire(ctx, name, distlock.WithTTL(0)); return err }, distlock.ErrInvalidArgument},
		{"ttl negative", func() error { _, err := c.Acquire(ctx, name, distlock.WithTTL(-time.Second)); return err }, distlock.ErrInvalidArgument},
		{"ttl above 24h", func() error { _, err := c.Acquire(ctx, name, distlock.WithTTL(25*time.Hour)); return err }, distlock.ErrInvalidArgument},
		{"ttl too short to renew", func() error { _, err := c.Acquire(ctx, name, distlock.WithTTL(49*time.Millisecond)); return err }, distlock.ErrInvalidArgument},
		{"metadata too long", func() error {
			_, err := c.TryAcquire(ctx, name, distlock.WithMetadata(strings.Repeat("m", 5000)))
			return err
		}, distlock.ErrInvalidArgument},
		{"metadata not UTF-8", func() error {
			_, err := c.TryAcquire(ctx, name, distlock.WithMetadata("a\xffb"))
			return err
		}, distlock.ErrInvalidArgument},
		{"nil context acquire", func() error { _, err := c.Acquire(nilCtx, name); return err }, distlock.ErrInvalidArgument},
		{"nil context inspect", func() error { _, err := c.Inspect(nilCtx, name); return err }, distlock.ErrInvalidArgument},
		{"nil context release", func() error { return l.Release(nilCtx) }, distlock.ErrInvalidArgument},
		{"nil context extend", func() error { return l.Extend(nilCtx, time.Second) }, distlock.ErrInvalidArgument},
		{"extend ttl zero", func() error { return l.Extend(ctx, 0) }, distlock.ErrInvalidArgument},
		{"extend ttl above 24h", func() error { return l.Extend(ctx, 48*time.Hour) }, distlock.ErrInvalidArgument},
		{"attach empty owner", func() error { _, err := c.Attach(ctx, name, ""); return err }, distlock.ErrInvalidArgument},
		{"attach foreign owner", func() error { _, err := c.Attach(ctx, name, "not-the-owner"); return err }, distlock.ErrNotHeld},
		{"release foreign owner", func() error {
			// Attach fails first; a handle with a foreign token cannot be made.
			_, err := s.client(t).Attach(ctx, name, "intruder")
			return err
		}, distlock.ErrNotHeld},
		{"acquire held lock", func() error { _, err := s.client(t).TryAcquire(ctx, name); return err }, distlock.ErrLocked},
	}
	for _, tc := range cases {
		err := tc.call()
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
			continue
		}
		var ae *distlock.ArgumentError
		if tc.want == distlock.ErrInvalidArgument && (!errors.As(err, &ae) || ae.Reason == "") {
			t.Errorf("%s: %v is not an *ArgumentError with a reason", tc.name, err)
		}
		after, ierr := c.Inspect(ctx, name)
		if ierr != nil {
			t.Fatal(ierr)
		}
		if after.Owner != before.Owner || after.Token != before.Token || after.Count != before.Count ||
			after.Metadata != before.Metadata || after.HighWater != before.HighWater || after.TTL > before.TTL {
			t.Errorf("%s changed the lock: before %+v, after %+v", tc.name, before, after)
		}
	}
	s.engineNameRule(t, c)
	if l.Err() != nil {
		t.Fatalf("bad input disturbed the lease: %v", l.Err())
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); !errors.Is(err, distlock.ErrReleased) {
		t.Fatalf("double release: %v", err)
	}
	if info, _ := c.Inspect(ctx, name); info.Held {
		t.Fatalf("double release changed something: %+v", info)
	}
}

// engineNameRule: a name is refused or taken alike on every engine (one
// rule, engine.ValidateName): a leading '}' (which would empty a Redis
// Cluster hash tag) and a NUL byte (which PostgreSQL's text cannot hold)
// are refused before any call, by Acquire, TryAcquire, Semaphore, RWMutex,
// Campaign and Inspect alike, with an *ArgumentError for the name and
// nothing changed; a '}' elsewhere in a name is an ordinary character.
func (s *suite) engineNameRule(t *testing.T, c *distlock.Client) {
	ctx := ctxTimeout(t, 30*time.Second)
	base := lockName(t)
	calls := map[string]func(name string) error{
		"TryAcquire": func(name string) error { _, err := c.TryAcquire(ctx, name); return err },
		"Acquire":    func(name string) error { _, err := c.Acquire(ctx, name); return err },
		"Semaphore":  func(name string) error { _, err := c.Semaphore(name, 1).TryAcquire(ctx); return err },
		"RWMutex":    func(name string) error { _, err := c.RWMutex(name).TryRLock(ctx); return err },
		"Campaign":   func(name string) error { _, err := c.Campaign(ctx, name, "v"); return err },
		"Inspect":    func(name string) error { _, err := c.Inspect(ctx, name); return err },
	}
	for call, f := range calls {
		for _, name := range []string{"}" + base + call, base + call + "\x00nul"} {
			var ae *distlock.ArgumentError
			if err := f(name); !errors.As(err, &ae) || ae.Arg != "name" || !errors.Is(err, distlock.ErrInvalidArgument) {
				t.Errorf("%s(%q) = %v, want an *ArgumentError for the name", call, name, err)
			}
		}
	}
	inner := base + "}x"
	l, err := c.TryAcquire(ctx, inner)
	if err != nil {
		t.Fatalf("TryAcquire(%q) = %v, want a grant", inner, err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// everyNodeHolds reports whether every node of a quorum answered and holds
// the lock for owner.
func everyNodeHolds(nodes []quorum.NodeInfo, owner string) bool {
	for _, n := range nodes {
		if n.Err != nil || !n.Info.Held || n.Info.Owner != owner {
			return false
		}
	}
	return true
}

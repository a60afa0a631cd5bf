package zookeeper_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	zkengine "github.com/distlock/distlock/engine/zookeeper"
)

// hangGuard bounds how long a test waits for an Open that should return:
// far above every bound under test, it only turns a hang into a failure.
const hangGuard = 2 * time.Minute

// openWithin opens u in the background and returns its result, failing
// the test when Open has not returned after hangGuard.
func openWithin(t *testing.T, ctx context.Context, u string) (engine.Engine, error) {
	t.Helper()
	type result struct {
		eng engine.Engine
		err error
	}
	done := make(chan result, 1)
	go func() {
		eng, err := engine.Open(ctx, u)
		done <- result{eng, err}
	}()
	select {
	case r := <-done:
		if r.eng != nil && r.err == nil {
			t.Cleanup(func() { _ = r.eng.Close() })
		}
		return r.eng, r.err
	case <-time.After(hangGuard):
		t.Fatalf("engine.Open(%q) has not returned after %v", u, hangGuard)
		return nil, nil
	}
}

// TestOpenUnreachable: Open of an ensemble nobody answers returns, also
// with a context that has no deadline (after DefaultOpenTimeout), and its
// error is a *BackendError of the deadline, not a bad URL; no engine is
// returned.
func TestOpenUnreachable(t *testing.T) {
	t.Parallel()
	short, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for _, ctx := range []context.Context{context.Background(), short} {
		eng, err := openWithin(t, ctx, "zookeeper://127.0.0.1:1")
		var be *zkengine.BackendError
		if !errors.As(err, &be) || errors.Is(err, engine.ErrBadURL) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Open of an ensemble nobody answers: %v, want a *BackendError of the deadline, not ErrBadURL", err)
		}
		if err != nil && !strings.Contains(err.Error(), "127.0.0.1:1") {
			t.Errorf("the error does not name the servers: %v", err)
		}
		if eng != nil {
			t.Errorf("Open failed and returned an engine: %#v", eng)
		}
	}
	// distlock.Open reports it as the backend's failure, not bad input.
	c, err := distlock.Open(short, "zookeeper://127.0.0.1:1")
	if c != nil || !errors.Is(err, distlock.ErrBackend) || errors.Is(err, distlock.ErrInvalidArgument) {
		t.Errorf("distlock.Open of an ensemble nobody answers: %v, want ErrBackend, not ErrInvalidArgument", err)
	}
}

// TestOpenNoDeadline: a context without a deadline opens a live ensemble
// (the session is granted within DefaultOpenTimeout) with the session
// timeout it granted.
func TestOpenNoDeadline(t *testing.T) {
	t.Parallel()
	ens := shared(t, 1)
	eng, err := openWithin(t, context.Background(), "zookeeper://"+strings.Join(ens.Servers(), ",")+"?session_timeout=20s")
	if err != nil {
		t.Fatal(err)
	}
	if got := eng.(*zkengine.Engine).SessionTimeout(); got <= 0 || got > 20*time.Second {
		t.Errorf("SessionTimeout %v, want the one granted for 20s asked", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if info, err := eng.Inspect(ctx, "opened-no-deadline"); err != nil || info.Held {
		t.Fatalf("Inspect: %+v, %v", info, err)
	}
}

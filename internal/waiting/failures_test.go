package waiting

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
)

// TestRunEndsOnFailingEngine: Run stops trying an engine that fails with a
// *FailedError (wrapping the last attempt's error), at once for an error
// no retry mends, and once transient failures have lasted the budget,
// counted from a failure before Run (FailingSince by Note); its attempts'
// contexts end with the budget (cause ErrNoAnswer). An answer in between
// starts the count anew. The wait's context has no deadline: only the
// budget can end it (the test's guard asserts no speed).
func TestRunEndsOnFailingEngine(t *testing.T) {
	eng := memory.New()
	t.Cleanup(func() { _ = eng.Close() })
	const budget = 200 * time.Millisecond
	transient := errors.New("connection refused")
	run := func(f *Failures, try func(ctx context.Context, n int) Answer) (int, error) {
		n := 0
		l := Loop{Engine: eng, Name: "n", Failures: f, Try: func(ctx context.Context) Answer { n++; return try(ctx, n) }}
		done := make(chan error, 1)
		go func() { done <- l.Run(context.Background()) }()
		select {
		case err := <-done:
			return n, err
		case <-time.After(time.Minute):
			t.Fatal("Run did not return")
			return n, nil
		}
	}

	f := &Failures{Engine: eng, Budget: budget}
	n, err := run(f, func(context.Context, int) Answer {
		return Answer{Failed: true, Err: &engine.ArgumentError{Arg: "name", Reason: "bad"}}
	})
	var fe *FailedError
	if !errors.As(err, &fe) || !fe.Permanent || n != 1 {
		t.Fatalf("a permanent error: Run = %v after %d attempts, want a permanent *FailedError after 1", err, n)
	}

	f = &Failures{Engine: eng, Budget: budget}
	first := time.Now()
	if err := f.Note(first, transient); err != nil {
		t.Fatal(err)
	}
	answered := false
	n, err = run(f, func(ctx context.Context, n int) Answer {
		if dl, ok := ctx.Deadline(); !ok || (!answered && dl.After(first.Add(budget))) {
			t.Errorf("attempt %d: deadline %v, want at most the budget's end %v", n, dl, first.Add(budget))
		}
		if n == 2 {
			answered = true // an answer: the count starts anew
			return Answer{Grant: engine.Grant{HolderTTL: time.Millisecond}}
		}
		return Answer{Failed: true, Err: transient}
	})
	if !errors.As(err, &fe) || fe.Permanent || !errors.Is(err, transient) || fe.Failing < budget || n < 4 {
		t.Fatalf("transient failures: Run = %v (%+v) after %d attempts, want a *FailedError after the budget", err, fe, n)
	}

	f = &Failures{Engine: eng, Budget: budget}
	ctx, cancel := f.Context(context.Background(), time.Now())
	<-ctx.Done()
	cancel()
	if !errors.Is(context.Cause(ctx), ErrNoAnswer) {
		t.Fatalf("an attempt's context ended with %v, want ErrNoAnswer", context.Cause(ctx))
	}
	if f := (&Failures{}); f.Left() >= 0 || f.Note(time.Now(), transient) != nil {
		t.Fatal("no budget: a bound all the same")
	}
}

package waiting

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/distlock/distlock/engine"
)

// ErrNoAnswer is the cause of an attempt's context that ended because the
// failure budget ran out while the attempt waited for its answer.
var ErrNoAnswer = errors.New("no answer within the backend failure budget")

// Failures decides when a wait must stop trying a failing engine: at once
// for an error no retry can mend (engine.IsPermanent), and once attempts
// have kept failing for Budget. A wait's first attempt (made before Run)
// and the loop's share one Failures, so the run of failures is counted from
// the first. Its zero Budget means no bound (the wait's context alone).
type Failures struct {
	// Engine classifies errors (engine.PermanentClassifier).
	Engine engine.Engine
	// Budget bounds a run of consecutive failures; 0 for none.
	Budget time.Duration

	since time.Time // send time of the run's first failed attempt; zero when the last succeeded
}

// FailedError is Run's error (and Note's) when a wait stopped trying a
// failing engine. It wraps the last attempt's error.
type FailedError struct {
	// Err is the last attempt's error.
	Err error
	// Failing is how long the attempts had kept failing (zero for a
	// permanent error, which ends the wait at once).
	Failing time.Duration
	// Permanent: Err is one that no retry can mend.
	Permanent bool
}

func (e *FailedError) Error() string {
	if e.Permanent {
		return "gave up at once: " + e.Err.Error()
	}
	return fmt.Sprintf("gave up after failing for %v: %v", e.Failing.Round(time.Millisecond), e.Err)
}

// Unwrap returns the last attempt's error.
func (e *FailedError) Unwrap() error { return e.Err }

// Context returns the context of an attempt sent now: ctx, ended with cause
// ErrNoAnswer when the budget runs out (counted from the run's first
// failure, or from now), so that an attempt that hangs is a failure within
// the budget too.
func (f *Failures) Context(ctx context.Context, now time.Time) (context.Context, context.CancelFunc) {
	if f == nil || f.Budget <= 0 {
		return ctx, func() {}
	}
	from := now
	if !f.since.IsZero() {
		from = f.since
	}
	return context.WithDeadlineCause(ctx, from.Add(f.Budget), ErrNoAnswer)
}

// Note records the outcome of an attempt sent at sent: err is the engine's
// error, nil when it answered. It returns a *FailedError when the wait must
// stop trying: err is permanent, or the failures have lasted the budget.
func (f *Failures) Note(sent time.Time, err error) error {
	if f == nil {
		return nil
	}
	if err == nil {
		f.since = time.Time{}
		return nil
	}
	if f.since.IsZero() {
		f.since = sent
	}
	if engine.IsPermanent(f.Engine, err) {
		return &FailedError{Err: err, Permanent: true}
	}
	if failing := time.Since(f.since); f.Budget > 0 && failing >= f.Budget {
		return &FailedError{Err: err, Failing: failing}
	}
	return nil
}

// Began records a failure of the wait's engine seen outside its attempts
// (a heartbeat of its queue entry sent at t that failed): the run of
// failures begins at t unless it began earlier. A zero t, or a nil f,
// changes nothing; an attempt that is answered ends the run (Note).
func (f *Failures) Began(t time.Time) {
	if f == nil || t.IsZero() {
		return
	}
	if f.since.IsZero() || t.Before(f.since) {
		f.since = t
	}
}

// Left is how long the run of failures may go on: negative for no bound,
// the whole budget when the last attempt did not fail.
func (f *Failures) Left() time.Duration {
	if f == nil || f.Budget <= 0 {
		return -1
	}
	if f.since.IsZero() {
		return f.Budget
	}
	return max(0, f.Budget-time.Since(f.since))
}

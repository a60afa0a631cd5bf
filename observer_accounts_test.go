package distlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/memory"
)

// logObserver is an EventObserver that logs every call it hears, in
// order, and keeps the sums the metrics keep: the holders gauge (Acquired
// less Released and Lost) and the waiters gauge.
type logObserver struct {
	mu                sync.Mutex
	log               []string
	holders, waiting  int
	starts, ends      int
	acquired, failed  int
	released, lostCnt int
	ended             []distlock.Event
}

func (r *logObserver) note(format string, args ...any) {
	r.log = append(r.log, fmt.Sprintf(format, args...))
}

func (r *logObserver) Acquired(n string, _ time.Duration, _ bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.acquired++
	r.holders++
	r.note("Acquired(%s)", n)
}
func (r *logObserver) AcquireFailed(n string, _ time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed++
	r.note("AcquireFailed(%s,%s)", n, distlock.FailureReason(err))
}
func (r *logObserver) Waiting(n string, d int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waiting += d
	r.note("Waiting(%s,%d)", n, d)
}
func (r *logObserver) Renewed(string, bool) {}
func (r *logObserver) Released(n string, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.released++
	r.holders--
	r.note("Released(%s)", n)
}
func (r *logObserver) Lost(n string, c distlock.LossCause, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lostCnt++
	r.holders--
	r.note("Lost(%s,%s)", n, c.Label())
}
func (r *logObserver) StartAcquire(ctx context.Context, ev distlock.Event) (context.Context, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.starts++
	r.note("StartAcquire(%s)", ev.Name)
	return ctx, ""
}
func (r *logObserver) AcquireWaiting(context.Context, distlock.Event) {}
func (r *logObserver) EndAcquire(ctx context.Context, ev distlock.Event) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ends++
	if ev.Err != nil {
		r.note("EndAcquire(%s,%s)", ev.Name, distlock.FailureReason(ev.Err))
	} else {
		r.note("EndAcquire(%s)", ev.Name)
	}
	return ctx
}
func (r *logObserver) LeaseRenewed(context.Context, distlock.Event) {}
func (r *logObserver) LeaseEnded(_ context.Context, ev distlock.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = append(r.ended, ev)
	r.note("LeaseEnded(%s,%d)", ev.Name, ev.Cause)
}

func (r *logObserver) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.log, " ")
}

// TestObserverCountsEngineRefusals: an acquire the engine refuses
// (a semaphore on a mutex's name, a read-to-write upgrade) gave up with
// reason refused: the Observer hears its AcquireFailed, as the
// EventObserver hears its EndAcquire. Only the Client's own refusals of
// its input (an empty name) are heard by neither. Before the fix the
// Observer heard none of the engine's refusals.
func TestObserverCountsEngineRefusals(t *testing.T) {
	rec := &logObserver{}
	eng := memory.New()
	defer eng.Close()
	c := distlock.New(eng, distlock.WithObserver(rec))
	defer c.Close()
	ctx := context.Background()

	l, err := c.Acquire(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if _, err := c.Semaphore("x", 3).TryAcquire(ctx); distlock.FailureReason(err) != "refused" {
		t.Fatalf("a semaphore on a mutex's name: %v, want a refusal", err)
	}
	rw := c.RWMutex("rw")
	r, err := rw.RLock(ctx, distlock.WithOwner("o"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release(ctx)
	if _, err := rw.TryLock(ctx, distlock.WithOwner("o")); !errors.Is(err, distlock.ErrUpgrade) {
		t.Fatalf("upgrade: %v", err)
	}
	if _, err := c.TryAcquire(ctx, ""); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("empty name: %v", err)
	}
	rec.mu.Lock()
	failed, ends := rec.failed, rec.ends
	rec.mu.Unlock()
	if ends != 4 || failed != 2 {
		t.Errorf("EndAcquire %d, AcquireFailed %d; want 4 and 2 (two engine refusals): %s", ends, failed, rec)
	}
	if got := rec.String(); !strings.Contains(got, "AcquireFailed(x,refused)") || !strings.Contains(got, "AcquireFailed(rw,refused)") {
		t.Errorf("events %s, want both refusals with reason refused", got)
	}
}

// TestObserverWaitEndedByClose: five waits for a held name; two are
// cancelled, the other three end with Client.Close. Every wait is one
// AcquireFailed with its reason: canceled twice, closed three times (the
// *WaitError of a closed wait matches ErrLocked too, through its last
// attempt's *LockedError; before the fix it was labelled locked).
func TestObserverWaitEndedByClose(t *testing.T) {
	rec := &logObserver{}
	eng := memory.New()
	defer eng.Close()
	ctx := context.Background()
	holder := distlock.New(eng)
	defer holder.Close()
	hl, err := holder.Acquire(ctx, "w", distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer hl.Release(ctx)
	c := distlock.New(eng, distlock.WithObserver(rec))
	errs := make(chan error, 5)
	cancels := make([]context.CancelFunc, 5)
	for i := range cancels {
		cctx, cancel := context.WithCancel(ctx)
		cancels[i] = cancel
		go func() {
			_, err := c.Acquire(cctx, "w")
			errs <- err
		}()
	}
	defer func() {
		for _, cancel := range cancels {
			cancel()
		}
	}()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		rec.mu.Lock()
		w := rec.waiting
		rec.mu.Unlock()
		if w == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiting", w)
		}
	}
	cancels[0]()
	cancels[1]()
	<-errs
	<-errs
	c.Close()
	for range 3 {
		if err := <-errs; !errors.Is(err, distlock.ErrClosed) {
			t.Fatalf("a wait ended by Close: %v", err)
		}
	}
	log := rec.String()
	if n, m := strings.Count(log, "AcquireFailed(w,canceled)"), strings.Count(log, "AcquireFailed(w,closed)"); n != 2 || m != 3 {
		t.Errorf("canceled %d, closed %d; want 2 and 3: %s", n, m, log)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.waiting != 0 || rec.failed != 5 {
		t.Errorf("waiting %d, failed %d; want 0 and 5", rec.waiting, rec.failed)
	}
}

// TestObserverAttachHolders: a lease rebuilt with Attach is a hold like
// any: the Observer hears it begin (Acquired) and end (Released), so the
// holders gauge returns to 0. Before the fix it heard only the end, and
// the gauge went to -1.
func TestObserverAttachHolders(t *testing.T) {
	eng := memory.New()
	defer eng.Close()
	ctx := context.Background()
	first := distlock.New(eng)
	defer first.Close()
	l, err := first.Acquire(ctx, "att", distlock.WithTTL(time.Minute), distlock.WithAutoRenew(false))
	if err != nil {
		t.Fatal(err)
	}
	rec := &logObserver{}
	c := distlock.New(eng, distlock.WithObserver(rec))
	defer c.Close()
	al, err := c.Attach(ctx, "att", l.Owner())
	if err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	mid := rec.holders
	rec.mu.Unlock()
	if err := al.Release(ctx); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if mid != 1 || rec.holders != 0 {
		t.Errorf("holders %d while attached, %d after its release; want 1 and 0: %v", mid, rec.holders, rec.log)
	}
}

// TestObserverReleaseAfterForceRelease: a lease force-released behind its
// holder's back and then released, before any renewal could tell: Release
// answers a *LostError TakenOver, and the Observer hears the same, once
// (Lost taken_over; LeaseEnded with that cause), not a release. Before the
// fix it heard Released and LeaseEnded cause 0.
func TestObserverReleaseAfterForceRelease(t *testing.T) {
	rec := &logObserver{}
	eng := memory.New()
	defer eng.Close()
	c := distlock.New(eng, distlock.WithObserver(rec))
	defer c.Close()
	ctx := context.Background()

	l, err := c.Acquire(ctx, "f", distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if held, err := c.ForceRelease(ctx, "f"); err != nil || !held {
		t.Fatal(held, err)
	}
	err = l.Release(ctx)
	var lost *distlock.LostError
	if !errors.As(err, &lost) || lost.Cause != distlock.TakenOver {
		t.Fatalf("Release after a force-release: %v, want a *LostError TakenOver", err)
	}
	if err := l.Release(ctx); !errors.Is(err, distlock.ErrReleased) {
		t.Fatalf("second Release: %v", err)
	}
	rec.mu.Lock()
	released, lostN, ended := rec.released, rec.lostCnt, rec.ended
	rec.mu.Unlock()
	if released != 0 || lostN != 1 {
		t.Errorf("released %d, lost %d; want 0 and 1: %s", released, lostN, rec)
	}
	if len(ended) != 1 || ended[0].Cause != distlock.TakenOver {
		t.Errorf("LeaseEnded %+v, want once with cause TakenOver", ended)
	}

	// A lease released while held is still a release, heard once.
	l, err = c.Acquire(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	released, holders := rec.released, rec.holders
	rec.mu.Unlock()
	if released != 1 || holders != 0 {
		t.Errorf("released %d, holders %d; want 1 and 0: %s", released, holders, rec)
	}
}

// TestObserverTryAcquireAllRefused: a TryAcquireAll refused because one
// name is held, on an engine that takes sets in one step (memory), gave
// up: the Observer hears AcquireFailed(locked) for the blocking name, as
// on the name-by-name path; the EventObserver hears each member's acquire
// end. Before the fix it heard nothing.
func TestObserverTryAcquireAllRefused(t *testing.T) {
	rec := &logObserver{}
	eng := memory.New()
	defer eng.Close()
	ctx := context.Background()
	other := distlock.New(eng)
	defer other.Close()
	hl, err := other.Acquire(ctx, "s2", distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer hl.Release(ctx)
	c := distlock.New(eng, distlock.WithObserver(rec))
	defer c.Close()
	if _, err := c.TryAcquireAll(ctx, []string{"s1", "s2"}); !errors.Is(err, distlock.ErrLocked) {
		t.Fatalf("TryAcquireAll: %v", err)
	}
	rec.mu.Lock()
	failed, acquired, starts, ends := rec.failed, rec.acquired, rec.starts, rec.ends
	rec.mu.Unlock()
	if failed != 1 || acquired != 0 || !strings.Contains(rec.String(), "AcquireFailed(s2,locked)") {
		t.Errorf("events %s, want one AcquireFailed(s2,locked) and no grant", rec)
	}
	if starts != 2 || ends != 2 {
		t.Errorf("StartAcquire %d, EndAcquire %d; want 2 and 2: %s", starts, ends, rec)
	}
}

// TestObserverAcquireAllOneStep: a set taken in one step (memory) is
// observed as the name-by-name path observes it: each member's acquire
// (StartAcquire, EndAcquire), its grant (Acquired) and its hold's end
// (LeaseEnded, Released). Before the fix the EventObserver heard neither
// the acquires nor the holds' ends.
func TestObserverAcquireAllOneStep(t *testing.T) {
	rec := &logObserver{}
	eng := memory.New()
	defer eng.Close()
	ctx := context.Background()
	c := distlock.New(eng, distlock.WithObserver(rec))
	defer c.Close()
	s, err := c.AcquireAll(ctx, []string{"b", "a"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	starts, ends, acquired, released, ended, holders := rec.starts, rec.ends, rec.acquired, rec.released, len(rec.ended), rec.holders
	rec.mu.Unlock()
	if starts != 2 || ends != 2 || acquired != 2 || released != 2 || ended != 2 || holders != 0 {
		t.Errorf("start %d end %d acquired %d released %d ended %d holders %d; want 2 of each and 0 holders: %s",
			starts, ends, acquired, released, ended, holders, rec)
	}
}

// TestObserverAcquireAllWaits: a set whose one-step attempt is refused
// for contention goes on name by name, each member's call taking over the
// observation its one-step attempt started: each member's acquire is
// observed once (two StartAcquire, two EndAcquire for a set of two), not
// once for the attempt and again for the call.
func TestObserverAcquireAllWaits(t *testing.T) {
	rec := &logObserver{}
	eng := memory.New()
	defer eng.Close()
	ctx := context.Background()
	other := distlock.New(eng)
	defer other.Close()
	hl, err := other.Acquire(ctx, "w2", distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	c := distlock.New(eng, distlock.WithObserver(rec))
	defer c.Close()
	got := make(chan error, 1)
	go func() {
		s, err := c.AcquireAll(ctx, []string{"w1", "w2"})
		if err == nil {
			err = s.Release(ctx)
		}
		got <- err
	}()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(2 * time.Millisecond) {
		rec.mu.Lock()
		w := rec.waiting
		rec.mu.Unlock()
		if w == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never waited: %s", rec)
		}
	}
	if err := hl.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	starts, ends, acquired, holders, ended := rec.starts, rec.ends, rec.acquired, rec.holders, len(rec.ended)
	rec.mu.Unlock()
	if starts != 2 || ends != 2 || acquired != 2 || holders != 0 || ended != 2 {
		t.Errorf("start %d end %d acquired %d holders %d ended %d; want 2, 2, 2, 0, 2: %s", starts, ends, acquired, holders, ended, rec)
	}
}

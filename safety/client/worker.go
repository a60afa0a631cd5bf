package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/quorum"
	"github.com/distlock/distlock/safety/history"
)

// Worker is one client's loop: acquire, read-modify-write the resource a
// few times, release; over and over until its context ends.
type Worker struct {
	cfg    Config
	rec    func(history.Event)
	locker Locker
	res    Store
	slow   *Slow
	rng    *rand.Rand
	seq    int
}

// NewWorker connects a worker; rec receives its history events (from
// several goroutines, one at a time is not guaranteed).
func NewWorker(cfg Config, rec func(history.Event)) (*Worker, error) {
	w := &Worker{cfg: cfg, rec: rec, rng: rand.New(rand.NewPCG(cfg.Seed, 0x5afe))}
	w.slow = NewSlow(func(kind string, start, end time.Time) {
		rec(history.Event{Kind: history.KindFault, Class: 2, Target: cfg.ID, Start: history.Mono(start),
			End: history.Mono(end), Detail: kind})
	})
	entered := func(waiter string, sent, reply time.Time, head bool) {
		ev := history.Event{Kind: history.KindQueued, Client: cfg.ID, Name: cfg.Name, Waiter: waiter,
			Invoke: history.Mono(sent), At: history.Mono(reply), Policy: cfg.Policy}
		if head {
			ev.Detail = "head"
		}
		rec(ev)
	}
	l, err := NewLocker(cfg, w.slow, entered)
	if err != nil {
		return nil, err
	}
	w.locker = l
	if w.res, err = NewStore(cfg); err != nil {
		_ = l.Close()
		return nil, err
	}
	return w, nil
}

// Slow returns the worker's delay injector.
func (w *Worker) Slow() *Slow { return w.slow }

// Close closes the worker's connections.
func (w *Worker) Close() error {
	return errors.Join(w.locker.Close(), w.res.Close())
}

// Run loops until ctx ends; the hold in progress is finished (released)
// first.
func (w *Worker) Run(ctx context.Context) {
	w.rec(history.Event{Kind: history.KindClientStart, Client: w.cfg.ID, At: history.Now(), Detail: w.cfg.Impl + "/" + w.cfg.Style})
	for ctx.Err() == nil {
		w.hold(ctx)
		sleepCtx(ctx, jitterDur(w.cfg.TTL/20))
	}
}

// hold is one acquisition and what is done under it.
func (w *Worker) hold(ctx context.Context) {
	cfg := w.cfg
	ev := history.Event{Kind: history.KindAcquire, Client: cfg.ID, Name: cfg.Name, Invoke: history.Now(), TTL: int64(cfg.TTL), Detail: cfg.Impl}
	actx, cancel := context.WithTimeout(ctx, cfg.Budget)
	if cfg.Style == StyleWait && cfg.Policy != "" {
		// The queue scenarios: the call's start, before its first attempt
		// (the fair-order check compares these), and when its budget ends.
		ev.Policy = cfg.Policy
		dl, _ := actx.Deadline()
		w.rec(history.Event{Kind: history.KindWait, Client: cfg.ID, Name: cfg.Name, Invoke: ev.Invoke,
			Deadline: history.Mono(dl), Policy: cfg.Policy})
	}
	var (
		lease Lease
		err   error
	)
	if cfg.Shared != "" {
		lease, err = w.acquireShared(actx, &ev)
	} else {
		lease, err = w.locker.Acquire(actx, cfg.Name, cfg.Style == StyleWait)
	}
	cancel()
	ev.Complete = history.Now()
	if err != nil {
		ev.Result, ev.Err = classify(err), err.Error()
		w.rec(ev)
		if cfg.Style == StylePoll {
			sleepCtx(ctx, jitterDur(cfg.TTL/20))
		}
		return
	}
	ev.Result, ev.Token, ev.Owner, ev.Deadline = history.OK, lease.Token(), lease.Owner(), history.Mono(lease.Deadline())
	w.rec(ev)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); w.watch(lease, stop) }()
	leader, elected := lease.(Leader)
	var ended atomic.Int64 // when the leadership's Done closed, as the leader saw it
	if elected {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-lease.Done():
				ended.Store(history.Now())
			case <-stop:
			}
		}()
	}

	n := 1 + w.rng.IntN(max(cfg.MaxOps, 1))
	until := time.Now().Add(cfg.MinHold)
	for i := 0; ctx.Err() == nil; i++ {
		op := w.rmw
		if cfg.Shared != "" {
			op = w.checkOnly
		}
		if !op(lease) || (i >= n-1 && !time.Now().Before(until)) {
			break
		}
		sleepCtx(ctx, jitterDur(cfg.Think))
	}

	if elected {
		w.leaderEnd(leader, ev.Complete, ended.Load())
	}
	rel := history.Event{Kind: history.KindRelease, Client: cfg.ID, Name: cfg.Name, Owner: lease.Owner(), Token: lease.Token(), Invoke: history.Now()}
	rctx, rcancel := context.WithTimeout(context.Background(), 2*cfg.TTL)
	err = lease.Release(rctx)
	rcancel()
	rel.Complete = history.Now()
	switch {
	case err == nil:
		rel.Result = history.OK
	case errors.Is(err, distlock.ErrNotHeld):
		rel.Result, rel.Err = history.Fail, err.Error()
	default:
		rel.Result, rel.Err = history.Unknown, err.Error()
	}
	close(stop)
	wg.Wait()
	w.rec(rel)
}

// leaderEnd records the end of a leadership elected at elected (history
// time): the leader stops acting now (it is about to resign), or stopped
// when its leadership's Done closed (ended, 0 if it has not), whichever
// came first; a leader that ignores its loss signal stopped now, and the
// deadline it honours is its leadership's plus its grace.
func (w *Worker) leaderEnd(l Leader, elected, ended int64) {
	now := history.Now()
	ev := history.Event{Kind: history.KindLeaderEnd, Client: w.cfg.ID, Name: w.cfg.Name, Owner: l.Owner(), Token: l.Token(),
		Invoke: elected, At: now, Cause: "resigned"}
	at, cause, lost := l.Loss()
	if lost {
		ev.Cause = "lost: " + cause
	}
	// The deadline the leader honours: its leadership's, or (the
	// control) that plus the time it goes on acting past a loss.
	ev.Deadline = history.Mono(l.Deadline().Add(l.Ignores()))
	if l.Ignores() == 0 {
		if ended > 0 && ended < now {
			ev.At = ended
		}
	} else if lost {
		ev.Cause += fmt.Sprintf(", acted %v past it", time.Since(at).Round(time.Millisecond))
	}
	w.rec(ev)
}

// watch records the lease's validity as it is renewed, and its loss.
func (w *Worker) watch(l Lease, stop <-chan struct{}) {
	cfg := w.cfg
	every := min(10*time.Millisecond, max(cfg.TTL/50, time.Millisecond))
	t := time.NewTicker(every)
	defer t.Stop()
	last := l.Deadline()
	check := func() {
		if d := l.Deadline(); d.After(last) {
			last = d
			w.rec(history.Event{Kind: history.KindValidity, Client: cfg.ID, Name: cfg.Name, Owner: l.Owner(), Token: l.Token(),
				At: history.Now(), Deadline: history.Mono(d)})
		}
	}
	// loss records the lease's loss signal, if it was lost: when Done
	// closes, or when the hold stopped first (the holder saw the loss
	// through Valid before this loop saw Done).
	loss := func() {
		if at, cause, lost := l.Loss(); lost {
			w.rec(history.Event{Kind: history.KindLoss, Client: cfg.ID, Name: cfg.Name, Owner: l.Owner(), Token: l.Token(),
				At: history.Mono(at), Deadline: history.Mono(l.Deadline()), Cause: cause})
		}
	}
	for {
		select {
		case <-l.Done():
			check()
			loss()
			return
		case <-t.C:
			check()
		case <-stop:
			check()
			loss()
			return
		}
	}
}

// rmw is one read-modify-write of both resource copies under lease. It
// reports whether the hold may go on: a stale or unknown outcome ends it
// (after an unknown write, writing again under the same token could be
// overtaken by the late one, which the fence accepts: same holder).
func (w *Worker) rmw(l Lease) bool {
	cfg := w.cfg
	token, owner := l.Token(), l.Owner()
	w.seq++
	elem := fmt.Sprintf("%d:%s-%d", token, cfg.ID, w.seq)

	var fs, cs State
	var ferr, cerr error
	fr := history.Event{Kind: history.KindRead, Client: cfg.ID, Name: cfg.Name, Owner: owner, Token: token, Res: history.Fenced}
	cr := history.Event{Kind: history.KindRead, Client: cfg.ID, Name: cfg.Name, Owner: owner, Token: token, Res: history.Control}
	fr.Invoke = history.Now()
	cr.Invoke = fr.Invoke
	w.begin(fr)
	w.begin(cr)
	parallel(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.OpTimeout)
		defer cancel()
		fs, ferr = w.res.ReadFenced(ctx, token, owner)
		fr.Complete = history.Now()
	}, func() {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.OpTimeout)
		defer cancel()
		cs, cerr = w.res.ReadControl(ctx)
		cr.Complete = history.Now()
	})
	fr.Result, cr.Result = applyResult(ferr), applyResult(cerr)
	if ferr == nil {
		fr.Value = fs.Digest()
	} else {
		fr.Err = ferr.Error()
	}
	if cerr == nil {
		cr.Value = cs.Digest()
	} else {
		cr.Err = cerr.Error()
	}
	w.rec(fr)
	w.rec(cr)
	if cerr != nil && ferr != nil {
		return false
	}

	// The check before the write; a "not sure yet" lease (naive) is
	// waited for, up to the acquire budget.
	for waited := time.Duration(0); ; waited += 5 * time.Millisecond {
		ok, over := l.Valid()
		if ok {
			break
		}
		if over || waited > cfg.Budget {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	w.rec(history.Event{Kind: history.KindChecked, Client: cfg.ID, Name: cfg.Name, Owner: owner, Token: token,
		At: history.Now(), Deadline: history.Mono(l.Deadline())})
	time.Sleep(cfg.Gap)

	fw := history.Event{Kind: history.KindWrite, Client: cfg.ID, Name: cfg.Name, Owner: owner, Token: token, Res: history.Fenced, Add: elem}
	cw := history.Event{Kind: history.KindWrite, Client: cfg.ID, Name: cfg.Name, Owner: owner, Token: token, Res: history.Control, Add: elem}
	var fwErr, cwErr error
	var writes []func()
	if ferr == nil {
		ns := fs.With(elem)
		fw.Value = ns.Digest()
		fw.Invoke = history.Now()
		w.begin(fw)
		writes = append(writes, func() {
			ctx, cancel := context.WithTimeout(context.Background(), cfg.OpTimeout)
			defer cancel()
			fwErr = w.res.WriteFenced(ctx, token, owner, ns)
			fw.Complete = history.Now()
		})
	}
	if cerr == nil {
		ns := cs.With(elem)
		cw.Value = ns.Digest()
		cw.Invoke = history.Now()
		w.begin(cw)
		writes = append(writes, func() {
			ctx, cancel := context.WithTimeout(context.Background(), cfg.OpTimeout)
			defer cancel()
			cwErr = w.res.WriteControl(ctx, ns)
			cw.Complete = history.Now()
		})
	}
	parallel(writes...)
	goOn := ferr == nil && cerr == nil
	if ferr == nil {
		fw.Result = applyResult(fwErr)
		if fwErr != nil {
			fw.Err = fwErr.Error()
			goOn = false
		}
		w.rec(fw)
	}
	if cerr == nil {
		cw.Result = applyResult(cwErr)
		if cwErr != nil {
			cw.Err = cwErr.Error()
			goOn = false
		}
		w.rec(cw)
	}
	return goOn
}

// begin records that the apply e (its Invoke set) is about to be sent
// (history.KindApplyBegin): if the process dies before it records e, the
// checks still know the resource may have applied it.
func (w *Worker) begin(e history.Event) {
	e.Detail, e.Kind = e.Kind, history.KindApplyBegin
	w.rec(e)
}

// acquireShared takes a shared lock's grant (Config.Shared): its weight
// and access are drawn here and recorded on the acquire event.
func (w *Worker) acquireShared(ctx context.Context, ev *history.Event) (Lease, error) {
	cfg := w.cfg
	sl, ok := w.locker.(SharedLocker)
	if !ok {
		return nil, fmt.Errorf("lease implementation %q has no shared locks", cfg.Impl)
	}
	name := cfg.Name
	if cfg.Split {
		name += "/" + cfg.ID
	}
	limit, weight, write := 0, 1, false
	switch cfg.Shared {
	case SharedSemaphore:
		limit = max(cfg.Limit, 1)
		weight = 1 + w.rng.IntN(min(2, limit))
	case SharedRW:
		write = w.rng.IntN(3) == 0
		ev.Access = history.AccessRead
		if write {
			ev.Access = history.AccessWrite
		}
	default:
		return nil, fmt.Errorf("unknown shared lock kind %q", cfg.Shared)
	}
	ev.Weight = weight
	return sl.AcquireShared(ctx, name, cfg.Style == StyleWait, limit, weight, write)
}

// checkOnly is a shared hold's step: check the lease (KindChecked, the
// faults' trigger), nothing else. It reports whether the hold may go on.
func (w *Worker) checkOnly(l Lease) bool {
	if ok, _ := l.Valid(); !ok {
		return false
	}
	w.rec(history.Event{Kind: history.KindChecked, Client: w.cfg.ID, Name: w.cfg.Name, Owner: l.Owner(), Token: l.Token(),
		At: history.Now(), Deadline: history.Mono(l.Deadline())})
	time.Sleep(w.cfg.Gap)
	return true
}

// parallel runs fns concurrently and waits for all.
func parallel(fns ...func()) {
	var wg sync.WaitGroup
	for _, f := range fns {
		wg.Go(f)
	}
	wg.Wait()
}

// classify maps an Acquire error to fail (definitely not granted) or
// unknown (the lock service may have granted it; the client released it by
// owner token in the background).
func classify(err error) string {
	switch {
	case errors.Is(err, distlock.ErrLocked), errors.Is(err, errNaiveLocked), errors.Is(err, errNaiveLate):
		return history.Fail
	case errors.Is(err, quorum.ErrValidityUsedUp):
		return history.Fail
	case errors.Is(err, distlock.ErrBackend) && isValidityUsedUp(err):
		return history.Fail
	case errors.Is(err, distlock.ErrBackend):
		return history.Unknown
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		var we *distlock.WaitError
		if errors.As(err, &we) && we.Last != nil && errors.Is(we.Last, distlock.ErrBackend) {
			return history.Unknown
		}
		return history.Fail
	}
	return history.Unknown
}

// isValidityUsedUp recognises distlock's single-node "grant arrived after
// its validity was used up" (not exported).
func isValidityUsedUp(err error) bool {
	var be *distlock.BackendError
	return errors.As(err, &be) && be.Err != nil && be.Err.Error() == "grant arrived after its validity was used up"
}

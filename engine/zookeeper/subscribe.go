package zookeeper

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/engine"
)

// Subscribe implements engine.Engine: a watch of the name node's data,
// which every grant, release (expiry, force-release) and proclaimed
// metadata writes, and one of the name's countdown latch (latch.go). Each
// firing wakes the subscription and the watch is set again; a lost
// connection wakes it too (the watch may have missed a change). The
// latch's watch is set again only once it fired: the client library keeps
// every unfired watch's channel.
func (e *Engine) Subscribe(ctx context.Context, name string) (engine.Subscription, error) {
	var latch <-chan zk.Event
	return e.subscribe(ctx, func(ctx context.Context) (watches, error) {
		chs, _, err := e.watchName(ctx, name)
		if err != nil {
			return watches{}, err
		}
		if latch == nil || spent(latch) {
			if latch, err = e.watchLatch(ctx, name); err != nil {
				latch = nil
				return watches{}, err
			}
		}
		return watches{zk: append(chs, latch)}, nil
	})
}

// watches are what a subscription waits on: ZooKeeper watches (a firing
// wakes the subscriber) and a local signal to set them again without a
// wake-up (a waiter took its place in line: from then on it watches its
// predecessor, not the name).
type watches struct {
	zk    []<-chan zk.Event
	rearm <-chan struct{}
	// gone: only a deletion wakes (a predecessor's heartbeats rewrite its
	// data, which fires the watch too: that sets it again, silently).
	gone bool
	// target is the path watched (the place before, or the name's node).
	target string
	// held: the name's node is watched and says the lock is held (a
	// waiter that just became the head has nothing to try until a release).
	held bool
	// placeless: a waiter with no place in line yet watches the name's
	// node; a change that leaves the lock held (a grant) has nothing for
	// it to try, and wakes it only when the lock may be free.
	placeless bool
}

// SubscribeWaiter implements engine.Queuer: the waiter watches only the
// child just before its own (no herd). Before its first attempt made its
// child, it watches the name as Subscribe does.
func (e *Engine) SubscribeWaiter(ctx context.Context, name, waiter string) (engine.Subscription, error) {
	k := key{name, waiter}
	head := "" // the place last seen heading the line
	return e.subscribe(ctx, func(ctx context.Context) (watches, error) {
		rearm := e.placeSignal(k)
		w, ok := e.waiter(k)
		if !ok || w.path == head {
			// Before a place, or its place headed the line: no place
			// can come before it since (places come in arrival order),
			// so the name is watched without listing the line again.
			chs, seen, err := e.watchName(ctx, name)
			if ok && err == nil {
				e.setHead(k, w.path, seen)
			}
			return watches{zk: chs, rearm: rearm, target: e.namePath(name), held: !seen.free, placeless: !ok}, err
		}
		chs, target, held, err := e.watchBefore(ctx, name, waiter, w.path)
		if err == nil && target == e.namePath(name) {
			head = w.path
		}
		return watches{zk: chs, rearm: rearm, gone: target != e.namePath(name), target: target, held: held}, err
	})
}

// Leave implements engine.Queuer: every kind, dispatched once on r.Kind
// (engine.LeaveByKind); a mutex's and a shared lock's waiters stand on the
// name's one line, and leave it alike (leave).
func (e *Engine) Leave(ctx context.Context, r engine.LeaveRequest) error {
	return engine.LeaveByKind(ctx, r, e.leave, e.leave)
}

// leave is Leave's one path: the waiter's child is deleted, which wakes
// the waiter behind it (leaveLine). A waiter this engine did not queue
// (another process's, whose session owns the child) leaves all the same:
// its child is found in the line by its waiter id.
func (e *Engine) leave(ctx context.Context, r engine.LeaveRequest) error {
	if err := e.check(ctx); err != nil {
		return err
	}
	k := key{r.Name, r.Waiter}
	w, ok := e.waiter(k)
	if !ok {
		return e.leaveOthers(ctx, r)
	}
	if err := e.leaveLine(ctx, r.Name, w.path); err != nil {
		return err
	}
	e.dropWaiter(k)
	return nil
}

// leaveOthers deletes the place in r.Name's line of the waiter r.Waiter
// that another engine queued: its session, not this one, keeps the
// child, which ZooKeeper lets any session delete. The waiter's process
// learns it left at its next heartbeat (the child is gone) and queues
// again if it still waits, as after its entry expired.
func (e *Engine) leaveOthers(ctx context.Context, r engine.LeaveRequest) error {
	if r.Waiter == "" {
		return nil
	}
	// The child is found by the waiter's tag in its name: one listing,
	// no child's data read.
	l, err := e.read(ctx, r.Name)
	if err != nil {
		return err
	}
	for _, c := range l.kids {
		if c.wait == tag(r.Waiter) {
			return e.leaveLine(ctx, r.Name, c.path)
		}
	}
	return nil
}

// leaveLine deletes the place in name's line. A place heading the line of
// a free lock after a release (one the lock is reserved for: reservedFor)
// goes with the release recorded again, in one transaction (passOn), so
// that the next head's reservation counts from its coming to the front,
// as every engine's queue passes a reservation on (engine.Queuer), not
// from the release: a head that came to the front late would be dropped
// before it could take the lock.
func (e *Engine) leaveLine(ctx context.Context, name, place string) error {
	// The line is read after a catch-up: the member the session reads from
	// may not have applied another session's release yet, and a reading
	// from before it would take a reserved head for one of a held lock
	// (a Leave is rare: a waiter giving up). The version checks of the
	// deletion guard the writes after it.
	if err := e.catchUp(ctx); err != nil {
		return err
	}
	for range maxConflicts {
		l, err := e.readLine(ctx, name, place, decisionChildren) // the place read with its stat
		if err != nil {
			return err
		}
		line, _ := l.waiters(l.now)
		if l.parent == nil || len(line) == 0 || line[0].path != place {
			break
		}
		if done, err := e.dropHead(ctx, &l, line[0]); err != nil || done {
			return err
		}
	}
	if err := e.del(ctx, place, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	return nil
}

// watchName watches the name node's data (its creation when missing),
// and returns what it read.
func (e *Engine) watchName(ctx context.Context, name string) ([]<-chan zk.Event, nameSeen, error) {
	p := e.namePath(name)
	type got struct {
		b  []byte
		st *zk.Stat
		ch <-chan zk.Event
	}
	g, err := do(ctx, e, "watch", func() (got, error) {
		b, st, ch, err := e.conn.GetW(p)
		return got{b, st, ch}, err
	})
	if errors.Is(err, zk.ErrNoNode) {
		ch, err := do(ctx, e, "watch", func() (<-chan zk.Event, error) {
			_, _, ch, err := e.conn.ExistsW(p)
			return ch, err
		})
		return []<-chan zk.Event{ch}, nameSeen{free: true}, err
	}
	if err != nil {
		return []<-chan zk.Event{g.ch}, nameSeen{free: true}, err
	}
	var ev event
	_ = json.Unmarshal(g.b, &ev)
	return []<-chan zk.Event{g.ch}, nameSeen{free: ev.Kind != evGranted && ev.Kind != evMetadata, released: ev.Kind == evReleased, version: g.st.Version}, nil
}

// nameSeen is what a watch of the name node read: whether the lock may be
// free (its last event is not a grant or proclaimed metadata), and whether
// that event was a release (and the node's version with it).
type nameSeen struct {
	free, released bool
	version        int32
}

// watchBefore watches the place in line just before own (no herd), or,
// for the head of the line, the name node's data (a release, a grant); it
// returns the path it watches, and for the head whether the lock is held.
func (e *Engine) watchBefore(ctx context.Context, name, waiter, own string) ([]<-chan zk.Event, string, bool, error) {
	for {
		chs, target, held, gone, err := e.watchBeforeOnce(ctx, name, waiter, own)
		if err != nil || !gone {
			return chs, target, held, err
		}
		// The place before went between the listing and the watch: a
		// watch on a missing node fires only when it is created again,
		// which it never is. Look at the line again.
	}
}

// watchBeforeOnce is one try of watchBefore; gone reports that the place
// before it meant to watch had gone already.
func (e *Engine) watchBeforeOnce(ctx context.Context, name, waiter, own string) (_ []<-chan zk.Event, _ string, _ bool, gone bool, _ error) {
	p := e.namePath(name)
	kids, err := e.children(ctx, p)
	if err != nil {
		return nil, "", false, false, err
	}
	var line []child
	for _, k := range kids {
		if c, ok := parseChild(p, k); ok && (c.wait != heldTag || c.path == own) {
			line = append(line, c)
		}
	}
	slices.SortFunc(line, func(a, b child) int { return strings.Compare(a.seq, b.seq) })
	i := find(line, own)
	if i <= 0 {
		chs, seen, err := e.watchName(ctx, name)
		if err == nil && i == 0 {
			e.setHead(key{name, waiter}, own, seen)
		}
		return chs, p, !seen.free, false, err
	}
	before := line[i-1].path
	exists := false
	ch, err := do(ctx, e, "watch", func() (<-chan zk.Event, error) {
		ok, _, ch, err := e.conn.ExistsW(before)
		exists = ok
		return ch, err
	})
	return []<-chan zk.Event{ch}, before, false, err == nil && !exists, err
}

// subscribe runs a subscription whose watches arm sets; the first set is
// in place when it returns.
func (e *Engine) subscribe(ctx context.Context, arm func(context.Context) (watches, error)) (engine.Subscription, error) {
	if err := e.check(ctx); err != nil {
		return nil, err
	}
	ws, err := arm(ctx)
	if err != nil {
		return nil, err
	}
	s := &subscription{sig: engine.NewSignal(), stop: make(chan struct{})}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, engine.ErrClosed
	}
	e.bg.Add(1)
	e.mu.Unlock()
	go func() {
		defer e.bg.Done()
		s.run(e, ws, arm)
	}()
	return s, nil
}

// subscription is a Subscription on ZooKeeper watches.
type subscription struct {
	sig  engine.Signal
	stop chan struct{}
	once sync.Once
}

// C implements engine.Subscription.
func (s *subscription) C() <-chan struct{} { return s.sig.C() }

// Close implements engine.Subscription.
func (s *subscription) Close() { s.once.Do(func() { close(s.stop) }) }

// run waits for any of the watches to fire, wakes the subscriber and sets
// them again, until the subscription or the engine closes. A watch that
// could not be set is tried again after a pause, with a wake-up (a change
// may have been missed meanwhile).
func (s *subscription) run(e *Engine, ws watches, arm func(context.Context) (watches, error)) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.stop:
		case <-e.done:
		}
		cancel()
	}()
	for {
		what := firstOf(ctx, ws)
		if what == gone {
			return
		}
		before, wasBefore := ws.target, ws.gone
		for {
			var err error
			if ws, err = arm(ctx); err == nil {
				break
			}
			s.sig.Wake()
			select {
			case <-time.After(reconnectPause):
			case <-ctx.Done():
				return
			}
		}
		// The wake-up comes after the watches are set again: a change
		// between the firing and the new watches is seen by the attempt
		// the wake-up causes; a later one fires the new watches. A silent
		// re-arm wakes too when the watched node changed (the place before
		// may have gone meanwhile). A waiter whose predecessor went and
		// that now heads the line of a held lock is not woken: the
		// release will (the predecessor was granted, or left).
		// A silent re-arm that finds the name's lock free wakes too: the
		// release may have come between the old watch and the new one
		// (a watch fires once, and the old one's event has no reader).
		// A waiter that still watches a place before its own is not
		// woken at all: only the head has an attempt to make (a release
		// wakes it, and its heartbeats sweep a dead head's place, which
		// makes the next one the head).
		freed := what == rearm && !ws.gone && !ws.held
		if (what == fired || ws.target != before || freed) && !(wasBefore && ws.held) && !(ws.placeless && ws.held) && !ws.gone {
			s.sig.Wake()
		}
	}
}

// What firstOf saw first.
const (
	gone  = iota // ctx ended
	fired        // a ZooKeeper watch fired
	rearm        // the local signal
)

// firstOf waits until one of ws fires or ctx ends.
func firstOf(ctx context.Context, ws watches) int {
	ctx, cancel := context.WithCancel(ctx)
	got := make(chan int, len(ws.zk)+1)
	var wg sync.WaitGroup
	for _, ch := range ws.zk {
		wg.Go(func() {
			select {
			case ev := <-ch:
				if ws.gone && ev.Type == zk.EventNodeDataChanged {
					got <- rearm
				} else {
					got <- fired
				}
			case <-ctx.Done():
			}
		})
	}
	if ws.rearm != nil {
		wg.Go(func() {
			select {
			case <-ws.rearm:
				got <- rearm
			case <-ctx.Done():
			}
		})
	}
	what := gone
	select {
	case what = <-got:
	case <-ctx.Done():
	}
	cancel()
	wg.Wait()
	return what
}

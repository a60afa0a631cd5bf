package zookeeper

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/engine"
)

// Subscribe implements engine.Engine: a watch of the name's children (a
// contender arriving or leaving, a holder released or expired and
// deleted) and of the lowest child's data (a grant confirmed, metadata
// proclaimed). Each firing wakes the subscription and the watches are set
// again; a lost connection wakes it too (its watches may have missed a
// change).
func (e *Engine) Subscribe(ctx context.Context, name string) (engine.Subscription, error) {
	return e.subscribe(ctx, func(ctx context.Context) ([]<-chan zk.Event, error) {
		return e.watchName(ctx, name)
	})
}

// SubscribeWaiter implements engine.Queuer: the waiter watches only the
// child just before its own (no herd). Before its first attempt made its
// child, it watches the name as Subscribe does.
func (e *Engine) SubscribeWaiter(ctx context.Context, name, waiter string) (engine.Subscription, error) {
	k := key{name, waiter}
	return e.subscribe(ctx, func(ctx context.Context) ([]<-chan zk.Event, error) {
		w, ok := e.waiter(k)
		if !ok {
			return e.watchName(ctx, name)
		}
		return e.watchBefore(ctx, name, w.path)
	})
}

// Leave implements engine.Queuer: the waiter's child is deleted, which
// wakes the waiter behind it.
func (e *Engine) Leave(ctx context.Context, name, waiter string) error {
	if err := e.check(ctx); err != nil {
		return err
	}
	k := key{name, waiter}
	w, ok := e.waiter(k)
	if !ok {
		return nil
	}
	if err := e.del(ctx, w.path, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	e.dropWaiter(k)
	return nil
}

// watchName sets the watches of Subscribe.
func (e *Engine) watchName(ctx context.Context, name string) ([]<-chan zk.Event, error) {
	p := e.namePath(name)
	type set struct {
		kids []string
		ch   <-chan zk.Event
	}
	s, err := do(ctx, e, "watch", func() (set, error) {
		kids, _, ch, err := e.conn.ChildrenW(p)
		return set{kids, ch}, err
	})
	if errors.Is(err, zk.ErrNoNode) {
		ch, err := do(ctx, e, "watch", func() (<-chan zk.Event, error) {
			_, _, ch, err := e.conn.ExistsW(p)
			return ch, err
		})
		return []<-chan zk.Event{ch}, err
	}
	if err != nil {
		return nil, err
	}
	chs := []<-chan zk.Event{s.ch}
	if low := lowest(s.kids); low != "" {
		ch, err := do(ctx, e, "watch", func() (<-chan zk.Event, error) {
			_, _, ch, err := e.conn.ExistsW(p + "/" + low)
			return ch, err
		})
		if err != nil {
			return nil, err
		}
		chs = append(chs, ch)
	}
	return chs, nil
}

// watchBefore watches the child before own in the name's line (own itself
// when it is the first: its deletion or change).
func (e *Engine) watchBefore(ctx context.Context, name, own string) ([]<-chan zk.Event, error) {
	p := e.namePath(name)
	kids, err := e.children(ctx, p)
	if err != nil {
		return nil, err
	}
	var line []child
	for _, k := range kids {
		if c, ok := parseChild(p, k); ok {
			line = append(line, c)
		}
	}
	slices.SortFunc(line, func(a, b child) int { return strings.Compare(a.seq, b.seq) })
	target := own
	if i := find(line, own); i > 0 {
		target = line[i-1].path
	}
	ch, err := do(ctx, e, "watch", func() (<-chan zk.Event, error) {
		_, _, ch, err := e.conn.ExistsW(target)
		return ch, err
	})
	return []<-chan zk.Event{ch}, err
}

// lowest returns the first contender's child name in line order.
func lowest(kids []string) string {
	low, lowSeq := "", ""
	for _, k := range kids {
		if c, ok := parseChild("", k); ok && (lowSeq == "" || c.seq < lowSeq) {
			low, lowSeq = k, c.seq
		}
	}
	return low
}

// subscribe runs a subscription whose watches arm sets; the first set is
// in place when it returns.
func (e *Engine) subscribe(ctx context.Context, arm func(context.Context) ([]<-chan zk.Event, error)) (engine.Subscription, error) {
	if err := e.check(ctx); err != nil {
		return nil, err
	}
	chs, err := arm(ctx)
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
		s.run(e, chs, arm)
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
func (s *subscription) run(e *Engine, chs []<-chan zk.Event, arm func(context.Context) ([]<-chan zk.Event, error)) {
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
		if !firstOf(ctx, chs) {
			return
		}
		s.sig.Wake()
		for {
			var err error
			if chs, err = arm(ctx); err == nil {
				break
			}
			s.sig.Wake()
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				return
			}
		}
	}
}

// firstOf waits until one of chs fires (true) or ctx ends (false).
func firstOf(ctx context.Context, chs []<-chan zk.Event) bool {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fired := make(chan struct{}, len(chs))
	var wg sync.WaitGroup
	for _, ch := range chs {
		wg.Go(func() {
			select {
			case <-ch:
				fired <- struct{}{}
			case <-ctx.Done():
			}
		})
	}
	ok := false
	select {
	case <-fired:
		ok = true
	case <-ctx.Done():
	}
	cancel()
	wg.Wait()
	return ok
}

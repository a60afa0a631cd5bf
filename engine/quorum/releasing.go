package quorum

import (
	"context"
	"sync"
)

// releasing remembers, per lock name, the releases that returned before
// every node answered (Release returns once a majority did). This engine's
// next acquire or release of the name reaches each node only after that
// node's release answered (or its own per-node timeout ran out), and so
// does its next Extend of a lease on the name: a process never finds its
// own released lock still held on the stragglers, its releases of counted
// holds (re-entry, shared holds) land on every node in the order it made
// them, and an Extend that shortens the hold a re-entry's release left
// reaches every node after that release (sent before it, the node would
// keep the released hold's longer expiry, since Extend never moves a
// hold's expiry before the deadline of another live lease of its owner).
type releasing struct {
	mu sync.Mutex
	m  map[string][]*straggling
}

// straggling is one release's nodes that had not answered when it returned.
type straggling struct {
	mu       sync.Mutex
	answered []bool          // by node, set by late answers
	wait     []chan struct{} // by node; nil for nodes that had answered
	left     int
}

func newStraggling(nodes int) *straggling {
	return &straggling{answered: make([]bool, nodes)}
}

// answer records node i's late answer.
func (s *straggling) answer(i int) (last bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answered[i] = true
	if s.wait == nil || s.wait[i] == nil {
		return false // before start: start sees it
	}
	close(s.wait[i])
	s.left--
	return s.left == 0
}

// start registers s for name with the nodes that had not answered when the
// release returned (done reports whether node i had), unless their late
// answers are all in already.
func (r *releasing) start(name string, s *straggling, done func(i int) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wait = make([]chan struct{}, len(s.answered))
	for i := range s.wait {
		if done(i) || s.answered[i] {
			continue
		}
		s.wait[i] = make(chan struct{})
		s.left++
	}
	if s.left == 0 {
		return
	}
	if r.m == nil {
		r.m = make(map[string][]*straggling)
	}
	r.m[name] = append(r.m[name], s)
}

// finish forgets s once every node answered.
func (r *releasing) finish(name string, s *straggling) {
	r.mu.Lock()
	defer r.mu.Unlock()
	list := r.m[name]
	for i, x := range list {
		if x == s {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(r.m, name)
	} else {
		r.m[name] = list
	}
}

// pending returns the releases of the names that have nodes still out.
func (r *releasing) pending(names ...string) []*straggling {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*straggling
	for _, name := range names {
		out = append(out, r.m[name]...)
	}
	return out
}

// waitNode waits until node i answered every release in ps, or ctx ends.
func waitNode(ctx context.Context, ps []*straggling, i int) error {
	for _, s := range ps {
		s.mu.Lock()
		var ch chan struct{}
		if s.wait != nil && !s.answered[i] {
			ch = s.wait[i]
		}
		s.mu.Unlock()
		if ch == nil {
			continue
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// afterReleases returns fn, run on each node only once this engine's
// releases of name that were still out there when afterReleases was called
// have answered on that node (the call fails with ctx's error if ctx ends
// first). Every acquire and release of a name goes through it.
func afterReleases[T any](e *Engine, name string, fn func(context.Context, node) (T, error)) func(context.Context, node) (T, error) {
	return afterReleasesOf(e, []string{name}, fn)
}

// afterReleasesOf is afterReleases for a call about several names (an
// Extend batch): fn runs on a node once the releases of every one of them
// still out there have answered on it.
func afterReleasesOf[T any](e *Engine, names []string, fn func(context.Context, node) (T, error)) func(context.Context, node) (T, error) {
	earlier := e.releasing.pending(names...)
	if earlier == nil {
		return fn
	}
	return func(ctx context.Context, n node) (T, error) {
		if err := waitNode(ctx, earlier, e.index(n)); err != nil {
			var zero T
			return zero, err
		}
		return fn(ctx, n)
	}
}

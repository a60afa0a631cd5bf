package enginetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
)

// mixedKindsLikeMemory runs one script of every kind on one name, as a
// stranger would (a semaphore's permits, then a mutex, an election, an RW
// lock, a latch and a set over the name, each while another kind holds it;
// Inspect, List, Leaks, Leader, Attach, ForceReleaseHolder and
// ForceRelease with a waiter queued; one owner's permit re-entered from two
// Clients), on the engine and on the embedded engine: every step's outcome
// (granted, locked, a typed refusal, what Inspect and the listings show)
// must be the same, and the engine's tokens must increase through the
// force-releases. Two Clients of the engine stand for two processes. A
// semaphore's limit is 2, or 1 on an engine that keeps no larger one (the
// quorum); the steps of what the engine lacks (latches, listings) are left
// out of both runs.
func (s *suite) mixedKindsLikeMemory(t *testing.T) {
	s.sharer(t)
	ctx := ctxTimeout(t, 30*time.Second)
	e := s.h.New(t)
	limit := 2
	if _, err := e.(engine.Sharer).SetLimit(ctx, lockName(t)+"-probe", 2); errors.Is(err, errors.ErrUnsupported) {
		limit = 1
	}
	_, latches := e.(engine.Latcher)
	lister, _ := e.(engine.Lister)
	leaks, _ := e.(engine.LeakFinder)
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	ref := mixedKinds{limit: limit, latches: latches, list: lister != nil, leaks: leaks != nil,
		lister: mem, leakFinder: mem, engine: "memory"}
	got := mixedKinds{limit: limit, latches: latches, list: lister != nil, leaks: leaks != nil,
		lister: lister, leakFinder: leaks, engine: "the engine"}
	m1, m2 := distlock.New(mem), distlock.New(mem)
	t.Cleanup(func() { _ = m1.Close(); _ = m2.Close() })
	want := ref.run(t, m1, m2, lockName(t))
	have := got.run(t, distlock.New(e), s.client(t), lockName(t))
	if !slices.Equal(have, want) {
		var b strings.Builder
		for i := range max(len(have), len(want)) {
			h, w := "", ""
			if i < len(have) {
				h = have[i]
			}
			if i < len(want) {
				w = want[i]
			}
			mark := "  "
			if h != w {
				mark = "!!"
			}
			fmt.Fprintf(&b, "%s engine %-55s memory %s\n", mark, h, w)
		}
		t.Fatalf("outcomes differ from the embedded engine's:\n%s", b.String())
	}
}

// mixedKinds is the script of mixedKindsLikeMemory, for one engine.
type mixedKinds struct {
	limit                int
	latches, list, leaks bool
	lister               engine.Lister
	leakFinder           engine.LeakFinder
	engine               string
}

// run runs the script on name with Clients a and b (two processes) and
// returns each step's outcome.
func (m mixedKinds) run(t *testing.T, a, b *distlock.Client, name string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t.Cleanup(func() { _ = a.Close() })
	other := name + "-other"
	var out []string
	step := func(what string, err error) { out = append(out, what+": "+outcomeOf(err)) }
	// A waiting call of a refused kind is refused at once, not waited.
	brief := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 2*time.Second) }
	var last uint64
	token := func(what string, tok uint64) {
		t.Helper()
		if tok <= last {
			t.Errorf("%s: %s: token %d not above %d", m.engine, what, tok, last)
		}
		last = tok
	}
	listed := func(what string) {
		if m.list {
			// Every page, each lock once (a listing may show one twice),
			// in name order.
			seen := map[string]string{}
			var err error
			for cursor, first := "", true; err == nil && (first || cursor != ""); first = false {
				var infos []engine.Info
				infos, cursor, err = m.lister.List(ctx, name, cursor, 100)
				for _, i := range infos {
					seen[i.Name] = fmt.Sprintf("listed %q kind %v holders %d waiters %d", strings.TrimPrefix(i.Name, name), i.Kind, len(i.Holders), i.Waiters)
				}
			}
			step(what, err)
			for _, n := range slices.Sorted(maps.Keys(seen)) {
				out = append(out, seen[n])
			}
		}
		if m.leaks {
			l, _, err := m.leakFinder.Leaks(ctx, name, 24*time.Hour, "", 100) // the CLI's default --max-ttl
			step(what+", leaks", err)
			out = append(out, fmt.Sprintf("leaks %d", len(l)))
		}
	}
	const ttl = 1500 * time.Millisecond // a force-released holder is told at its next renewal
	sem := a.Semaphore(name, m.limit)
	p1, err := sem.Acquire(ctx, distlock.WithTTL(ttl))
	step("permit 1", err)
	if err != nil {
		t.Fatalf("%s: %v", m.engine, err)
	}
	token("permit 1", p1.Token())
	wctx, wcancel := brief()
	_, err = b.Campaign(wctx, name, "v")
	wcancel()
	step("campaign over a permit", err)
	wctx, wcancel = brief()
	_, err = b.Acquire(wctx, name)
	wcancel()
	step("mutex over a permit", err)
	wctx, wcancel = brief()
	_, err = b.RWMutex(name).RLock(wctx)
	wcancel()
	step("reader over a permit", err)
	wctx, wcancel = brief()
	_, err = b.AcquireAll(wctx, []string{other, name})
	wcancel()
	step("set over a permit", err)
	info, err := b.Inspect(ctx, other)
	step("the set's other name", err)
	out = append(out, fmt.Sprintf("other held %v", info.Held))
	// A weight above the stored limit can never be granted.
	wctx, wcancel = brief()
	_, err = b.Semaphore(name, m.limit).Acquire(wctx, distlock.WithWeight(m.limit+1))
	wcancel()
	step("a weight above the limit", err)
	if m.latches {
		ok, err := b.CountDownLatch(name).TrySetCount(ctx, 1)
		step(fmt.Sprintf("latch on the name (set %v)", ok), err)
		if ok {
			step("latch count down", b.CountDownLatch(name).CountDown(ctx))
		}
	}
	// The other permits of the limit held, and a request for the whole
	// limit queued behind them.
	var rest []*distlock.Lease
	for i := 2; i <= m.limit; i++ {
		p, err := sem.Acquire(ctx, distlock.WithTTL(ttl))
		step(fmt.Sprintf("permit %d", i), err)
		if err != nil {
			t.Fatalf("%s: %v", m.engine, err)
		}
		token(fmt.Sprintf("permit %d", i), p.Token())
		rest = append(rest, p)
	}
	whole := make(chan *distlock.Lease, 1)
	go func() {
		l, err := b.Semaphore(name, m.limit).Acquire(ctx, distlock.WithWeight(m.limit), distlock.WithTTL(ttl))
		if err != nil {
			t.Errorf("%s: the request for the whole limit: %v", m.engine, err)
		}
		whole <- l
	}()
	WaitFor(t, 20*time.Second, "the request for the whole limit to queue", func() bool {
		info, err := a.Inspect(ctx, name)
		return err == nil && info.Waiters == 1
	})
	info, err = a.Inspect(ctx, name)
	step("inspect", err)
	out = append(out, fmt.Sprintf("kind %v limit %d holders %d waiters %d", info.Kind, info.Limit, len(info.Holders), info.Waiters))
	listed("list")
	_, err = b.Attach(ctx, name, p1.Owner())
	step("attach to a permit", err)
	step("force-release a holder that holds nothing", a.ForceReleaseHolder(ctx, name, "nobody"))
	freed, err := a.ForceRelease(ctx, other)
	step(fmt.Sprintf("force-release a free name (%v)", freed), err)
	info, err = a.Inspect(ctx, other+"-never")
	step("inspect a name never used", err)
	out = append(out, fmt.Sprintf("held %v kind %v limit %d waiters %d", info.Held, info.Kind, info.Limit, info.Waiters))
	leader, err := b.Leader(ctx, name)
	step("leader of the semaphore's name", err)
	out = append(out, fmt.Sprintf("elected %v", leader.Elected()))
	step("force-release permit 1", a.ForceReleaseHolder(ctx, name, p1.Owner()))
	<-p1.Done()
	out = append(out, fmt.Sprintf("permit 1 lost %v", errors.Is(p1.Err(), distlock.ErrLeaseLost)))
	if len(rest) > 0 {
		select {
		case l := <-whole:
			t.Fatalf("%s: the request for the whole limit granted (token %d) beside another permit", m.engine, l.Token())
		default:
		}
		ok, err := a.ForceRelease(ctx, name)
		step(fmt.Sprintf("force-release all (%v)", ok), err)
	}
	l := <-whole
	if l == nil {
		t.Fatalf("%s: the request for the whole limit failed", m.engine)
	}
	token("the request for the whole limit", l.Token())
	// The other permits' holders are told at their next renewal (a
	// force-release is an administrator's repair: documented), not before
	// this grant.
	step("release the whole limit", l.Release(ctx))
	mu, err := a.Acquire(ctx, name)
	step("mutex on the free semaphore's name", err)
	if err == nil {
		token("mutex", mu.Token())
		_, err = b.Semaphore(name, m.limit).TryAcquire(ctx)
		step("permit beside the mutex", err)
		step("set-limit beside the mutex", b.Semaphore(name, m.limit).SetLimit(ctx, m.limit))
		_, err = b.TryAcquire(ctx, name)
		step("mutex beside the mutex", err)
		att, err := b.Attach(ctx, name, mu.Owner())
		step("attach to the mutex", err)
		if err == nil {
			out = append(out, fmt.Sprintf("attached with the holder's token %v", att.Token() == mu.Token()))
			step("release the attached lease", att.Release(ctx))
		}
		step("release the mutex", mu.Release(ctx))
		_, err = b.TryAcquire(ctx, name)
		step("mutex after both releases", err)
		if err == nil {
			info, _ := b.Inspect(ctx, name)
			_, _ = b.ForceRelease(ctx, name)
			out = append(out, fmt.Sprintf("held %v", info.Held))
		}
	}
	_, err = b.RWMutex(name).TryRLock(ctx)
	step("reader on the semaphore's name, free", err)
	ld, err := b.Campaign(ctx, name, "v")
	step("campaign on the free name", err)
	if err == nil {
		token("term", ld.Term())
		wctx, wcancel = brief()
		_, err = a.Semaphore(name, m.limit).Acquire(wctx)
		wcancel()
		step("permit beside the leader", err)
		step("resign", ld.Resign(ctx))
	}
	p, err := sem.TryAcquire(ctx)
	step("permit at the end", err)
	if err == nil {
		token("permit at the end", p.Token())
		_ = p.Release(ctx)
	}
	// One owner's permit re-entered from two Clients (processes), then
	// asked with another weight, then released hold by hold.
	o1 := distlock.WithOwner(name + "-o1")
	r1, err := a.Semaphore(name, m.limit).Acquire(ctx, o1)
	step("owner's permit", err)
	r2, err := b.Semaphore(name, m.limit).Acquire(ctx, o1)
	step("owner's permit again, another Client", err)
	if err == nil {
		out = append(out, fmt.Sprintf("same token %v", r1.Token() == r2.Token()))
	}
	info, err = a.Inspect(ctx, name)
	step("inspect the re-entered permit", err)
	for _, h := range info.Holders {
		out = append(out, fmt.Sprintf("holder weight %d count %d", h.Weight, h.Count))
	}
	_, err = b.Semaphore(name, m.limit).TryAcquire(ctx, o1, distlock.WithWeight(2))
	step("the owner asking another weight", err)
	if r2 != nil {
		step("release one hold", r2.Release(ctx))
	}
	info, err = a.Inspect(ctx, name)
	step("inspect after one release", err)
	out = append(out, fmt.Sprintf("held %v holders %d", info.Held, len(info.Holders)))
	if r1 != nil {
		out = append(out, fmt.Sprintf("the other hold's lease lost %v", r1.Err() != nil))
		step("release the other hold", r1.Release(ctx))
	}
	info, err = a.Inspect(ctx, name)
	step("inspect after both", err)
	out = append(out, fmt.Sprintf("held %v", info.Held))
	// Everything released: the semaphore's kind stays stored (for a
	// while), which is no leak.
	listed("list at the end")
	return out
}

// outcomeOf names a call's error as a user tells it apart.
func outcomeOf(err error) string {
	var ue *distlock.UnsupportedError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &ue):
		return "unsupported"
	case errors.Is(err, distlock.ErrInvalidArgument):
		return "argument"
	case errors.Is(err, distlock.ErrLocked):
		return "locked"
	case errors.Is(err, context.DeadlineExceeded):
		return "waited"
	case errors.Is(err, distlock.ErrNotHeld):
		return "not held"
	}
	return "other: " + err.Error()
}

// releaseOfAnotherKind: a lock held as one kind, released by its owner as
// another (a mutex's release of a permit or a reader, a shared release of
// a mutex, an RW lock's release of a semaphore's permit and the reverse:
// what a client of a server may send), and its owner's election
// metadata set on it (Proclaim, the server's metadata request, which is a
// mutex's), answer as on the embedded engine: the release frees nothing
// (refused: not held, or the kind's argument error) and the metadata is
// not set on a shared holder. Before, on
// ZooKeeper, both found the holder by owner alone: the wrong-kind release
// freed the lock.
func (s *suite) releaseOfAnotherKind(t *testing.T) {
	s.sharer(t)
	e := s.h.New(t)
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	run := func(e engine.Engine, name string) []string {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c := distlock.New(e)
		defer c.Close()
		var out []string
		for _, k := range []struct {
			held  string
			asked engine.Kind
		}{{"permit", engine.Mutex}, {"reader", engine.Mutex}, {"mutex", engine.Semaphore}, {"mutex", engine.RWLock},
			{"permit", engine.RWLock}, {"reader", engine.Semaphore}} {
			name := name + "-" + k.held + "-" + k.asked.String()
			var l *distlock.Lease
			var err error
			switch k.held {
			case "permit":
				l, err = c.Semaphore(name, 1).Acquire(ctx)
			case "reader":
				l, err = c.RWMutex(name).RLock(ctx)
			default:
				l, err = c.Acquire(ctx, name)
			}
			if err != nil {
				t.Fatal(err)
			}
			if ms, ok := e.(engine.MetadataSetter); ok {
				st, err := ms.SetMetadata(ctx, engine.MetadataRequest{Name: name, Owner: l.Owner(), Metadata: "proclaimed"})
				out = append(out, fmt.Sprintf("%s's metadata set: %v %v", k.held, st, outcomeOf(err)))
			}
			res, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: l.Owner(), Kind: k.asked})
			info, ierr := c.Inspect(ctx, name)
			if ierr != nil {
				t.Fatal(ierr)
			}
			// Refused either way: answered not held (the engines), or
			// with the kind's *ArgumentError (a server checks the kind
			// asked against the name's first).
			var ae *engine.ArgumentError
			answer := fmt.Sprintf("%v %v", res.Status, outcomeOf(err))
			if err == nil && res.Status == engine.NotHeld || errors.As(err, &ae) {
				answer = "refused"
			}
			out = append(out, fmt.Sprintf("%s released as a %v: %s; held after %v, lease %v", k.held, k.asked, answer, info.Held, l.Err()))
			if len(info.Holders) > 0 {
				out = append(out, fmt.Sprintf("%s's holder metadata %q", k.held, info.Holders[0].Metadata))
			}
			_ = l.Release(ctx)
		}
		return out
	}
	_, setter := e.(engine.MetadataSetter)
	var ref engine.Engine = mem
	if !setter {
		ref = struct{ engine.Engine }{mem} // no metadata steps on either side
	}
	want := run(ref, lockName(t))
	got := run(e, lockName(t))
	if !slices.Equal(got, want) {
		t.Fatalf("outcomes differ from the embedded engine's:\nengine: %q\nmemory: %q", got, want)
	}
}

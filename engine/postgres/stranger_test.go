package postgres_test

// Acceptance tests written by a stranger to the engine: the public API only
// (distlock.Client, its locks and the engine's admin interfaces), against
// the test binary's real server (srv), stopped, restarted and paused.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
)

const strangerSchema = "stranger"

// strangerClient is a Client on an engine of its own pool (one process).
func strangerClient(t *testing.T, app string) (*distlock.Client, engine.Engine) {
	t.Helper()
	e := newEngine(t, newPool(t, "application_name="+app), strangerSchema)
	c := distlock.New(e)
	t.Cleanup(func() { _ = c.Close() })
	return c, e
}

// strangerWait polls cond for up to d.
func strangerWait(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// strangerLossAt is when l's loss was recorded (LostError.At).
func strangerLossAt(t *testing.T, l *distlock.Lease) time.Time {
	t.Helper()
	select {
	case <-l.Done():
	case <-time.After(time.Minute):
		t.Fatalf("lease %q (token %d) never ended", l.Name(), l.Token())
	}
	var lost *distlock.LostError
	if errors.As(l.Err(), &lost) {
		return lost.At
	}
	t.Fatalf("lease %q ended with %v, want a *LostError", l.Name(), l.Err())
	return time.Time{}
}

// tokenLog checks that each grant's token is above every earlier one.
type tokenLog struct {
	t    *testing.T
	last uint64
	what string
}

func (g *tokenLog) add(what string, token uint64) {
	g.t.Helper()
	if token <= g.last {
		g.t.Fatalf("%s: token %d not above %d (%s)", what, token, g.last, g.what)
	}
	g.last, g.what = token, what
}

// TestStrangerTokensAcrossKindsAndRestart: one name taken in turn as a
// mutex, an election, a semaphore, a set (AcquireAll), again after an
// expiry, a force-release, and two server restarts (killed, on the same
// data directory): every grant's token is above every earlier grant's,
// and the engine's HighWater (Inspect) never goes below the last token.
// An RW lock's name the same way.
func TestStrangerTokensAcrossKindsAndRestart(t *testing.T) {
	migrated(t, strangerSchema)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, _ := strangerClient(t, "stranger-tokens")
	name, rw := uniqueName(t), uniqueName(t)+"-rw"
	g := &tokenLog{t: t}
	h := &tokenLog{t: t}

	restart := func() {
		t.Helper()
		if err := srv.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		strangerWait(t, 30*time.Second, "the server to answer", func() bool {
			_, err := c.Inspect(ctx, name)
			return err == nil
		})
	}
	checkHW := func(n string, last uint64) {
		t.Helper()
		t.Logf("checking %s after %s", n, g.what)
		info, err := c.Inspect(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if info.HighWater != 0 && info.HighWater < last {
			// Documented: the highest the engine still remembers (a
			// released mutex's row is gone, a free semaphore's stays).
			t.Logf("%s: HighWater %d below the last token %d (%s)", n, info.HighWater, last, info.Kind)
		}
	}
	must := func(l *distlock.Lease, err error) *distlock.Lease {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return l
	}

	// A mutex, released.
	l := must(c.Acquire(ctx, name))
	g.add("mutex", l.Token())
	must(nil, l.Release(ctx))
	// An election, resigned.
	ld, err := c.Campaign(ctx, name, "v")
	must(nil, err)
	g.add("election", ld.Term())
	must(nil, ld.Resign(ctx))
	// A mutex left to expire.
	l = must(c.Acquire(ctx, name, distlock.WithTTL(time.Second), distlock.WithAutoRenew(false)))
	g.add("mutex to expire", l.Token())
	strangerLossAt(t, l)
	strangerWait(t, 30*time.Second, "the expired mutex to be free", func() bool {
		info, err := c.Inspect(ctx, name)
		return err == nil && !info.Held
	})
	// A restart with the name free.
	restart()
	checkHW(name, g.last)
	l = must(c.Acquire(ctx, name))
	g.add("mutex after a restart", l.Token())
	// A restart while held: the lease survives, the next grant is above.
	restart()
	must(nil, l.Release(ctx))
	// Two permits of a semaphore, one force-released.
	s := c.Semaphore(name, 2)
	p1 := must(s.Acquire(ctx))
	g.add("permit 1", p1.Token())
	p2 := must(s.Acquire(ctx))
	g.add("permit 2", p2.Token())
	if ok, err := c.ForceRelease(ctx, name); err != nil || !ok {
		t.Fatalf("force-release of the semaphore: %v, %v", ok, err)
	}
	strangerLossAt(t, p1)
	strangerLossAt(t, p2)
	restart()
	checkHW(name, g.last)
	p3 := must(s.Acquire(ctx))
	g.add("permit after the force-release and a restart", p3.Token())
	must(nil, p3.Release(ctx))
	// A mutex again (a shared lock's kind stays stored; a mutex may take it).
	l = must(c.Acquire(ctx, name))
	g.add("mutex after the semaphore", l.Token())
	if ok, err := c.ForceRelease(ctx, name); err != nil || !ok {
		t.Fatalf("force-release of the mutex: %v, %v", ok, err)
	}
	strangerLossAt(t, l)
	// A set with the name in it.
	set, err := c.AcquireAll(ctx, []string{name, name + "-other"})
	must(nil, err)
	g.add("set", set.Tokens()[name])
	must(nil, set.Release(ctx))
	restart()
	checkHW(name, g.last)
	l = must(c.TryAcquire(ctx, name))
	g.add("mutex after the set and a restart", l.Token())
	must(nil, l.Release(ctx))

	// The RW lock's name: writer, readers, force-release, restart, mutex.
	m := c.RWMutex(rw)
	w := must(m.Lock(ctx))
	h.add("writer", w.Token())
	must(nil, w.Release(ctx))
	r1 := must(m.RLock(ctx))
	h.add("reader 1", r1.Token())
	r2 := must(m.RLock(ctx))
	h.add("reader 2", r2.Token())
	if ok, err := c.ForceRelease(ctx, rw); err != nil || !ok {
		t.Fatalf("force-release of the readers: %v, %v", ok, err)
	}
	strangerLossAt(t, r1)
	restart()
	checkHW(rw, h.last)
	l = must(c.Acquire(ctx, rw))
	h.add("mutex after the readers", l.Token())
	must(nil, l.Release(ctx))
	w = must(m.TryLock(ctx))
	h.add("writer after the mutex", w.Token())
	must(nil, w.Release(ctx))
}

// pgProcs returns the server's processes: the postmaster and its children.
func pgProcs(t *testing.T) []int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(srv.Dir, "data", "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pm, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("pgrep", "-P", strconv.Itoa(pm)).Output()
	if err != nil {
		t.Fatalf("pgrep: %v", err)
	}
	pids := []int{pm}
	for _, f := range strings.Fields(string(out)) {
		p, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, p)
	}
	return pids
}

// stopServer stops every process of the server (SIGSTOP) and returns the
// function that continues them.
func stopServer(t *testing.T) (cont func()) {
	t.Helper()
	pids := pgProcs(t)
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGSTOP)
	}
	done := false
	cont = func() {
		if done {
			return
		}
		done = true
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGCONT)
		}
	}
	t.Cleanup(cont)
	return cont
}

// TestStrangerServerStopped: the whole server is stopped (SIGSTOP) for
// longer than the holders' ttls while each kind is held and a waiter of
// the same kind queues, then continued: each holder is told of its loss
// (by its own deadline) before the waiter's grant came back, and the
// waiter's token is above the holder's.
func TestStrangerServerStopped(t *testing.T) {
	migrated(t, strangerSchema)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	holder, _ := strangerClient(t, "stranger-stop-holder")
	waiter, _ := strangerClient(t, "stranger-stop-waiter")
	const ttl = 2 * time.Second
	base := uniqueName(t)
	kinds := []struct {
		name string
		take func(c *distlock.Client, name string) (*distlock.Lease, error)
	}{
		{"mutex", func(c *distlock.Client, name string) (*distlock.Lease, error) {
			return c.Acquire(ctx, name, distlock.WithTTL(ttl))
		}},
		{"semaphore", func(c *distlock.Client, name string) (*distlock.Lease, error) {
			return c.Semaphore(name, 1).Acquire(ctx, distlock.WithTTL(ttl))
		}},
		{"rw-write", func(c *distlock.Client, name string) (*distlock.Lease, error) {
			return c.RWMutex(name).Lock(ctx, distlock.WithTTL(ttl))
		}},
	}
	type hw struct {
		held *distlock.Lease
		got  chan *distlock.Lease
		at   chan time.Time
	}
	var all []hw
	for _, k := range kinds {
		name := base + "-" + k.name
		l, err := k.take(holder, name)
		if err != nil {
			t.Fatal(err)
		}
		x := hw{held: l, got: make(chan *distlock.Lease, 1), at: make(chan time.Time, 1)}
		go func() {
			w, err := k.take(waiter, name)
			x.at <- time.Now()
			if err != nil {
				t.Errorf("%s waiter: %v", k.name, err)
			}
			x.got <- w
		}()
		strangerWait(t, 30*time.Second, k.name+"'s waiter to queue", func() bool {
			info, err := holder.Inspect(ctx, name)
			if err != nil {
				return false
			}
			if info.Waiters > 0 {
				return true
			}
			sinfo, err := holder.RWMutex(name).Inspect(ctx)
			return err == nil && sinfo.Waiters > 0
		})
		all = append(all, x)
	}
	cont := stopServer(t)
	stopped := time.Now()
	for _, x := range all {
		if time.Until(x.held.Deadline()) > 0 {
			select {
			case <-x.held.Done():
			case <-time.After(time.Until(x.held.Deadline()) + 5*time.Second):
				t.Fatalf("%s: not told of its loss within 5 s of its deadline", x.held.Name())
			}
		}
	}
	time.Sleep(time.Until(stopped.Add(ttl + time.Second))) // past the server's lease ends too
	cont()
	for i, x := range all {
		lost := strangerLossAt(t, x.held)
		var w *distlock.Lease
		var at time.Time
		select {
		case w = <-x.got:
			at = <-x.at
		case <-ctx.Done():
			t.Fatalf("%s: the waiter was never granted", kinds[i].name)
		}
		if w == nil {
			continue
		}
		if !lost.Before(at) {
			t.Errorf("%s: holder told of its loss at %v, after the waiter's grant returned at %v", kinds[i].name, lost, at)
		}
		if w.Token() <= x.held.Token() {
			t.Errorf("%s: waiter's token %d not above the holder's %d", kinds[i].name, w.Token(), x.held.Token())
		}
		_ = w.Release(ctx)
	}
}

// TestStrangerSharedWaiterGivesUp: a queued shared waiter that gives up
// (its context cancelled) or whose Client is closed must not keep the
// waiters behind it out: a writer queued behind a reader blocks newer
// readers; when it gives up, they are granted beside the reader still
// holding, before its queue entry's heartbeat could have lapsed. The same
// for a heavy semaphore waiter in front of light ones.
func TestStrangerSharedWaiterGivesUp(t *testing.T) {
	migrated(t, strangerSchema)
	for _, how := range []string{"cancel", "close"} {
		for _, kind := range []string{"rw", "semaphore"} {
			t.Run(kind+"/"+how, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				name := uniqueName(t)
				holder, _ := strangerClient(t, "stranger-gu-h")
				front, _ := strangerClient(t, "stranger-gu-f")
				behind, _ := strangerClient(t, "stranger-gu-b")
				watch, _ := strangerClient(t, "stranger-gu-w")
				var hold func(c *distlock.Client, ctx context.Context) (*distlock.Lease, error)
				var big func(c *distlock.Client, ctx context.Context) (*distlock.Lease, error)
				var small func(c *distlock.Client, ctx context.Context) (*distlock.Lease, error)
				if kind == "rw" {
					hold = func(c *distlock.Client, ctx context.Context) (*distlock.Lease, error) {
						return c.RWMutex(name).RLock(ctx)
					}
					big = func(c *distlock.Client, ctx context.Context) (*distlock.Lease, error) {
						return c.RWMutex(name).Lock(ctx)
					}
					small = hold
				} else {
					hold = func(c *distlock.Client, ctx context.Context) (*distlock.Lease, error) {
						return c.Semaphore(name, 3).Acquire(ctx)
					}
					big = func(c *distlock.Client, ctx context.Context) (*distlock.Lease, error) {
						return c.Semaphore(name, 3).Acquire(ctx, distlock.WithWeight(3))
					}
					small = hold
				}
				h, err := hold(holder, ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer h.Release(ctx)
				waiters := func() int {
					info, err := watch.RWMutex(name).Inspect(ctx)
					if err != nil {
						t.Fatal(err)
					}
					return info.Waiters
				}
				fctx, fcancel := context.WithCancel(ctx)
				defer fcancel()
				ferr := make(chan error, 1)
				go func() {
					l, err := big(front, fctx)
					if l != nil {
						_ = l.Release(ctx)
						err = fmt.Errorf("granted token %d", l.Token())
					}
					ferr <- err
				}()
				strangerWait(t, 30*time.Second, "the front waiter to queue", func() bool { return waiters() == 1 })
				got := make(chan *distlock.Lease, 1)
				go func() {
					l, err := small(behind, ctx)
					if err != nil {
						t.Errorf("the waiter behind: %v", err)
					}
					got <- l
				}()
				strangerWait(t, 30*time.Second, "the waiter behind to queue", func() bool { return waiters() == 2 })
				gaveUp := time.Now()
				if how == "cancel" {
					fcancel()
				} else {
					_ = front.Close()
				}
				if err := <-ferr; err == nil || (!errors.Is(err, context.Canceled) && !errors.Is(err, distlock.ErrClosed)) {
					t.Fatalf("the front waiter: %v", err)
				}
				select {
				case l := <-got:
					if l == nil {
						t.FailNow()
					}
					t.Logf("granted %v after the front waiter gave up", time.Since(gaveUp))
					if since := time.Since(gaveUp); since >= distlock.WaiterTTL {
						t.Errorf("the waiter behind was granted %v after the front one gave up: its entry was kept until its heartbeat lapsed (%v)", since, distlock.WaiterTTL)
					}
					if h.Err() != nil {
						t.Errorf("the holder: %v", h.Err())
					}
					_ = l.Release(ctx)
				case <-ctx.Done():
					t.Fatal("the waiter behind was never granted")
				}
			})
		}
	}
}

// strangerListAll pages through lister's listing of prefix, limit per
// page, and returns the locks by name.
func strangerListAll(t *testing.T, ctx context.Context, lister engine.Lister, prefix string, limit int) map[string]engine.Info {
	t.Helper()
	got := map[string]engine.Info{}
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 10000 {
			t.Fatal("the listing never ends")
		}
		infos, next, err := lister.List(ctx, prefix, cursor, limit)
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range infos {
			got[i.Name] = i
		}
		if next == "" {
			return got
		}
		cursor = next
	}
}

// TestStrangerListUnderChurn: locks of every kind held all along are in
// every complete listing (paged with small limits), with their kind and
// tokens, while other clients take and release other names of the same
// prefix, of every kind, meanwhile.
func TestStrangerListUnderChurn(t *testing.T) {
	migrated(t, strangerSchema)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	holder, e := strangerClient(t, "stranger-list")
	lister := e.(engine.Lister)
	prefix := uniqueName(t) + "/"
	type steady struct {
		kind   engine.Kind
		tokens []uint64
	}
	want := map[string]*steady{}
	for i := range 8 {
		name := fmt.Sprintf("%s%02d-steady", prefix, i*3)
		var ls []*distlock.Lease
		var k engine.Kind
		switch i % 4 {
		case 0:
			l, err := holder.Acquire(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			ls = append(ls, l)
		case 1:
			k = engine.Semaphore
			for range 2 {
				l, err := holder.Semaphore(name, 3).Acquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				ls = append(ls, l)
			}
		case 2:
			k = engine.RWLock
			l, err := holder.RWMutex(name).RLock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			ls = append(ls, l)
		case 3:
			k = engine.RWLock
			l, err := holder.RWMutex(name).Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			ls = append(ls, l)
		}
		s := &steady{kind: k}
		for _, l := range ls {
			s.tokens = append(s.tokens, l.Token())
		}
		want[name] = s
	}
	churnCtx, stopChurn := context.WithCancel(ctx)
	churned := make(chan struct{})
	go func() {
		defer close(churned)
		c, _ := strangerClient(t, "stranger-churn")
		for n := 0; churnCtx.Err() == nil; n++ {
			name := fmt.Sprintf("%s%02d-churn", prefix, (n%8)*3+1+n%2)
			var l *distlock.Lease
			var err error
			switch n % 3 {
			case 0:
				l, err = c.TryAcquire(churnCtx, name)
			case 1:
				l, err = c.Semaphore(name+"s", 2).TryAcquire(churnCtx)
			case 2:
				l, err = c.RWMutex(name + "r").TryRLock(churnCtx)
			}
			if err == nil {
				_ = l.Release(ctx)
			}
		}
	}()
	for round := 0; round < 60; round++ {
		limit := 1 + round%3
		got := strangerListAll(t, ctx, lister, prefix, limit)
		for name, s := range want {
			info, ok := got[name]
			if !ok {
				t.Fatalf("round %d (limit %d): %s (held all along as kind %v) missing from the listing", round, limit, name, s.kind)
			}
			if info.Kind != s.kind || len(info.Holders) != len(s.tokens) && !(s.kind == engine.Mutex && info.Token == s.tokens[0]) {
				t.Fatalf("round %d: %s listed as %+v, want kind %v with tokens %v", round, name, info, s.kind, s.tokens)
			}
		}
	}
	stopChurn()
	<-churned
}

// TestStrangerRefusalsStoreNothing: calls refused as bad input or as the
// wrong kind change nothing: no kind is left stored with the name (the
// other shared kind is granted afterwards), and a holder keeps its lock.
func TestStrangerRefusalsStoreNothing(t *testing.T) {
	migrated(t, strangerSchema)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, _ := strangerClient(t, "stranger-refusals")
	other, _ := strangerClient(t, "stranger-refusals-2")
	isArg := func(what string, err error) {
		t.Helper()
		var ae *distlock.ArgumentError
		if !errors.As(err, &ae) {
			t.Fatalf("%s: %v, want an *ArgumentError", what, err)
		}
	}
	rwFree := func(what, name string) {
		t.Helper()
		l, err := other.RWMutex(name).TryLock(ctx)
		if err != nil {
			t.Fatalf("after %s: an RW writer on the name: %v (a kind left stored?)", what, err)
		}
		_ = l.Release(ctx)
	}
	semFree := func(what, name string) {
		t.Helper()
		l, err := other.Semaphore(name, 2).TryAcquire(ctx)
		if err != nil {
			t.Fatalf("after %s: a permit on the name: %v (a kind left stored?)", what, err)
		}
		_ = l.Release(ctx)
	}

	// SetLimit on a name held as a mutex.
	name := uniqueName(t)
	m, err := c.Acquire(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	isArg("SetLimit of a held mutex", other.Semaphore(name, 2).SetLimit(ctx, 3))
	if err := m.Extend(ctx, m.TTL()); err != nil {
		t.Fatalf("the mutex after the refused SetLimit: %v", err)
	}
	if err := m.Release(ctx); err != nil {
		t.Fatal(err)
	}
	rwFree("SetLimit of a held mutex", name)

	// A weight above the declared limit, on a new name.
	name = uniqueName(t)
	_, err = c.Semaphore(name, 2).TryAcquire(ctx, distlock.WithWeight(3))
	isArg("weight 3 of limit 2", err)
	_, err = c.Semaphore(name, 2).Acquire(ctx, distlock.WithWeight(3))
	isArg("waiting weight 3 of limit 2", err)
	rwFree("a weight above the limit", name)

	// An RW lock's calls refused on a name held as a semaphore with
	// another limit declared, and a mutex's call refused on RW readers.
	name = uniqueName(t)
	r, err := c.RWMutex(name).RLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	isArg("SetLimit of an RW lock", other.Semaphore(name, 2).SetLimit(ctx, 3))
	_, err = other.TryAcquire(ctx, name)
	isArg("a mutex of RW readers", err)
	info, err := other.RWMutex(name).Inspect(ctx)
	if err != nil || info.Kind != engine.RWLock || len(info.Holders) != 1 || info.Holders[0].Token != r.Token() {
		t.Fatalf("the RW lock after the refusals: %+v, %v", info, err)
	}
	if err := r.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// Bad ttls on a new name store nothing.
	name = uniqueName(t)
	_, err = c.RWMutex(name).RLock(ctx, distlock.WithTTL(-time.Second))
	isArg("a reader with a negative ttl", err)
	semFree("a reader with a negative ttl", name)
	name = uniqueName(t)
	_, err = c.Semaphore(name, 2).Acquire(ctx, distlock.WithTTL(-time.Second))
	isArg("a permit with a negative ttl", err)
	_, err = c.Semaphore(name, -2).Acquire(ctx)
	isArg("a permit of limit -2", err)
	isArg("SetLimit -1", c.Semaphore(name, 2).SetLimit(ctx, -1))
	rwFree("a permit with a bad ttl or limit", name)

	// A set refused for one bad name holds none of the others.
	name = uniqueName(t)
	_, err = c.AcquireAll(ctx, []string{name + "-a", "", name + "-b"})
	isArg("a set with an empty name", err)
	_, err = c.AcquireAll(ctx, []string{name + "-a", name + "-a"})
	isArg("a set with a name twice", err)
	for _, n := range []string{name + "-a", name + "-b"} {
		l, err := other.TryAcquire(ctx, n)
		if err != nil {
			t.Fatalf("%s after the refused sets: %v", n, err)
		}
		_ = l.Release(ctx)
	}
}

// TestStrangerAdminElectionAndLatch: the admin interfaces see an
// election (its leader's value as the metadata, its term as the token)
// and a counting latch is no leak; a force-release of the election tells
// the leader it was taken over, and the next leader's term is above.
func TestStrangerAdminElectionAndLatch(t *testing.T) {
	migrated(t, strangerSchema)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, e := strangerClient(t, "stranger-admin")
	other, _ := strangerClient(t, "stranger-admin-2")
	prefix := uniqueName(t) + "/"
	el, latch := prefix+"election", prefix+"latch"
	ld, err := c.Campaign(ctx, el, "me")
	if err != nil {
		t.Fatal(err)
	}
	if err := ld.Proclaim(ctx, "me again"); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.CountDownLatch(latch).TrySetCount(ctx, 3); err != nil || !ok {
		t.Fatalf("latch: %v, %v", ok, err)
	}
	got := strangerListAll(t, ctx, e.(engine.Lister), prefix, 10)
	info, ok := got[el]
	if !ok || info.Token != ld.Term() || info.Metadata != "me again" || info.Owner != ld.Lease().Owner() {
		t.Fatalf("the election listed as %+v (listed: %v), want term %d, value %q", info, ok, ld.Term(), "me again")
	}
	leaks, _, err := e.(engine.LeakFinder).Leaks(ctx, prefix, time.Hour, "", 100)
	if err != nil || len(leaks) != 0 {
		t.Fatalf("leaks: %+v, %v", leaks, err)
	}
	if ok, err := other.ForceRelease(ctx, el); err != nil || !ok {
		t.Fatalf("force-release of the election: %v, %v", ok, err)
	}
	strangerLossAt(t, ld.Lease())
	var lost *distlock.LostError
	if !errors.As(ld.Err(), &lost) || lost.Cause != distlock.TakenOver {
		t.Fatalf("the leader after the force-release: %v, want taken over", ld.Err())
	}
	next, err := other.Campaign(ctx, el, "next")
	if err != nil {
		t.Fatal(err)
	}
	if next.Term() <= ld.Term() {
		t.Fatalf("the next term %d is not above %d", next.Term(), ld.Term())
	}
	leader, err := c.Leader(ctx, el)
	if err != nil || leader.Value != "next" {
		t.Fatalf("the leader: %+v, %v", leader, err)
	}
	if n, err := c.CountDownLatch(latch).Count(ctx); err != nil || n != 3 {
		t.Fatalf("the latch after the election's force-release: %d, %v", n, err)
	}
}

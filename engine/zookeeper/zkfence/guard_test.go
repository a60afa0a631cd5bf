package zkfence_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	zkengine "github.com/distlock/distlock/engine/zookeeper"
	"github.com/distlock/distlock/engine/zookeeper/zkfence"
)

// conn returns a connection of its own to the test ensemble (like another
// process), closed when the test ends.
func conn(t *testing.T) *zk.Conn {
	t.Helper()
	c, events, err := zk.Connect(ensemble.Servers(), 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for range events { //nolint:revive // drained until the connection closes
		}
	}()
	t.Cleanup(c.Close)
	return c
}

// newPath returns a fresh absolute path under the root.
func newPath(prefix string) string { return fmt.Sprintf("/%s-%x", prefix, rand.Uint64()) }

func data(t *testing.T, c *zk.Conn, path string) string {
	t.Helper()
	d, _, err := c.Get(path)
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	return string(d)
}

// TestRule: the first write, a higher token and a tie from the same holder
// are accepted; a lower token and a tie from another holder are refused
// with a *StaleError and change nothing.
func TestRule(t *testing.T) {
	ctx := context.Background()
	c := conn(t)
	g := zkfence.New(c)
	defer g.Close()
	path := newPath("rule")
	want := ""
	for _, s := range []struct {
		value  string
		token  uint64
		holder string
		ok     bool
	}{
		{"a1", 100, "A", true},
		{"a2", 100, "A", true},  // tie, same holder
		{"b1", 100, "B", false}, // tie, other holder
		{"c1", 99, "C", false},  // lower
		{"d1", 1000, "D", true}, // higher (and longer in digits)
		{"a3", 100, "A", false},
	} {
		err := g.Set(ctx, path, []byte(s.value), s.token, s.holder)
		var stale *zkfence.StaleError
		switch {
		case s.ok && err != nil:
			t.Fatalf("%s: %v, want accepted", s.value, err)
		case !s.ok && (!errors.As(err, &stale) || !errors.Is(err, zkfence.ErrStale) || stale.Token != s.token):
			t.Fatalf("%s: %v, want a *StaleError", s.value, err)
		case s.ok:
			want = s.value
		}
		if got := data(t, c, path); got != want {
			t.Fatalf("after %s: data %q, want %q", s.value, got, want)
		}
	}
	if h, err := g.Highest(ctx, zkfence.FenceNodeFor(path)); err != nil || h != 1000 {
		t.Fatalf("Highest = %d, %v; want 1000", h, err)
	}
}

// lowerAfterHigher has a writer with token 10 read the mark (5), then,
// before its multi-op, another writer with token 20 write; it reports
// whether the token-10 write was accepted, and the data left.
func lowerAfterHigher(t *testing.T, mutant bool) (accepted bool, left string) {
	ctx := context.Background()
	c := conn(t)
	path := newPath("race")
	if err := zkfence.New(c).Set(ctx, path, []byte("w5"), 5, "w5"); err != nil {
		t.Fatal(err)
	}
	g := zkfence.New(c)
	defer g.Close()
	if mutant {
		zkfence.Unversioned(g)
	}
	var once sync.Once
	zkfence.SetHook(g, func() {
		once.Do(func() {
			if err := zkfence.New(conn(t)).Set(ctx, path, []byte("w20"), 20, "w20"); err != nil {
				t.Error(err)
			}
		})
	})
	err := g.Set(ctx, path, []byte("w10"), 10, "w10")
	if err != nil && !errors.Is(err, zkfence.ErrStale) {
		t.Fatal(err)
	}
	return err == nil, data(t, c, path)
}

// TestCheckAndWriteCommitTogether: a higher token's write that lands
// between the guard's read of the mark and its multi-op makes the lower
// write's multi-op fail (the mark's version moved); judged again, the
// lower token is refused and the higher write stays.
func TestCheckAndWriteCommitTogether(t *testing.T) {
	if accepted, left := lowerAfterHigher(t, false); accepted || left != "w20" {
		t.Fatalf("token 10 accepted: %v, data %q; want refused, w20", accepted, left)
	}
}

// TestCheckAndWriteMutant: the same race with the mark set at any version
// (the mutant Unversioned): the stale write lands over the newer one, which
// TestCheckAndWriteCommitTogether's assertion catches.
func TestCheckAndWriteMutant(t *testing.T) {
	accepted, left := lowerAfterHigher(t, true)
	if !accepted || left != "w10" {
		t.Fatalf("mutant: token 10 accepted: %v, data %q; the mutant should let the stale write land", accepted, left)
	}
}

// TestConcurrentWriters: 8 writers on 8 connections with interleaved
// tokens; the data left is the highest accepted token's.
func TestConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	path := newPath("concurrent")
	var wg sync.WaitGroup
	var mu sync.Mutex
	var highest uint64
	for w := range 8 {
		g := zkfence.New(conn(t))
		wg.Go(func() {
			defer g.Close()
			for i := range 15 {
				token := uint64(i*8 + w + 1)
				err := g.Set(ctx, path, []byte(strconv.FormatUint(token, 10)), token, fmt.Sprint("w", w))
				switch {
				case err == nil:
					mu.Lock()
					highest = max(highest, token)
					mu.Unlock()
				case !errors.Is(err, zkfence.ErrStale):
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if got := data(t, conn(t), path); got != strconv.FormatUint(highest, 10) {
		t.Fatalf("data %q, want the highest accepted %d", got, highest)
	}
}

// TestFencedRead: a fenced read raises the mark (an older holder's write
// after it is refused) and returns the data; a read of a missing node
// returns nil and leaves no node behind; a read with a stale token is
// refused.
func TestFencedRead(t *testing.T) {
	ctx := context.Background()
	c := conn(t)
	g := zkfence.New(c)
	defer g.Close()
	path := newPath("read")
	if d, err := g.Get(ctx, path, 3, "R"); err != nil || d != nil {
		t.Fatalf("read of a missing node: %q, %v", d, err)
	}
	if ok, _, err := c.Exists(path); err != nil || ok {
		t.Fatalf("the missing node's read left it behind (%v, %v)", ok, err)
	}
	if err := g.Set(ctx, path, []byte("v7"), 7, "W"); err != nil {
		t.Fatal(err)
	}
	if d, err := g.Get(ctx, path, 9, "R"); err != nil || string(d) != "v7" {
		t.Fatalf("read: %q, %v; want v7", d, err)
	}
	if err := g.Set(ctx, path, []byte("v8"), 8, "W8"); !errors.Is(err, zkfence.ErrStale) {
		t.Fatalf("write with 8 after a read with 9: %v, want stale", err)
	}
	if _, err := g.Get(ctx, path, 8, "W8"); !errors.Is(err, zkfence.ErrStale) {
		t.Fatalf("read with 8: %v, want stale", err)
	}
	if got := data(t, c, path); got != "v7" {
		t.Fatalf("data %q, want v7", got)
	}
}

// TestFailingOpRaisesNothing: an op of the multi-op that fails (a version
// conflict) fails the whole: nothing written, the mark not raised, the
// op's error wrapped.
func TestFailingOpRaisesNothing(t *testing.T) {
	ctx := context.Background()
	c := conn(t)
	g := zkfence.New(c)
	defer g.Close()
	path := newPath("failing")
	if err := g.Set(ctx, path, []byte("v1"), 10, "A"); err != nil {
		t.Fatal(err)
	}
	_, err := g.Multi(ctx, zkfence.FenceNodeFor(path), 50, "B", &zk.SetDataRequest{Path: path, Data: []byte("v2"), Version: 99})
	if !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("multi with a bad version: %v, want zk.ErrBadVersion", err)
	}
	if h, err := g.Highest(ctx, zkfence.FenceNodeFor(path)); err != nil || h != 10 {
		t.Fatalf("Highest = %d, %v; want 10 (not raised)", h, err)
	}
	if got := data(t, c, path); got != "v1" {
		t.Fatalf("data %q, want v1", got)
	}
}

// TestBadInput: bad arguments are refused with ErrInvalidArgument and
// nothing is created.
func TestBadInput(t *testing.T) {
	ctx := context.Background()
	c := conn(t)
	g := zkfence.New(c)
	defer g.Close()
	path := newPath("bad")
	for name, err := range map[string]error{
		"token 0":        g.Set(ctx, path, nil, 0, "A"),
		"empty holder":   g.Set(ctx, path, nil, 1, ""),
		"relative path":  g.Set(ctx, "rel", nil, 1, "A"),
		"trailing slash": g.Set(ctx, path+"/", nil, 1, "A"),
		"read token 0": func() error {
			_, err := g.Get(ctx, path, 0, "A")
			return err
		}(),
		"op on the fence node": func() error {
			_, err := g.Multi(ctx, zkfence.FenceNodeFor(path), 1, "A", &zk.DeleteRequest{Path: zkfence.FenceNodeFor(path), Version: -1})
			return err
		}(),
		"op of another type": func() error {
			_, err := g.Multi(ctx, zkfence.FenceNodeFor(path), 1, "A", "set it")
			return err
		}(),
	} {
		if !errors.Is(err, zkfence.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	for _, p := range []string{path, zkfence.FenceNodeFor(path)} {
		if ok, _, err := c.Exists(p); err != nil || ok {
			t.Errorf("%s exists after bad input (%v)", p, err)
		}
	}
}

// TestTokenAboveMax: a token above engine.MaxToken (2^53-1), which no grant
// carries, is refused with ErrInvalidArgument by Set, Get and Multi and
// sends nothing: the mark and the data keep their values, a resource
// without a mark gets none, and the resource's next holder is accepted.
// Before, the mark was raised to it and every real holder was refused from
// then on. 2^53-1 itself is a token.
func TestTokenAboveMax(t *testing.T) {
	ctx := context.Background()
	c := conn(t)
	g := zkfence.New(c)
	defer g.Close()
	path, fresh := newPath("max"), newPath("max-fresh")
	if err := g.Set(ctx, path, []byte("v5"), 5, "A"); err != nil {
		t.Fatal(err)
	}
	for _, token := range []uint64{engine.MaxToken + 1, 1 << 63, math.MaxUint64} {
		for name, err := range map[string]error{
			"Set": g.Set(ctx, path, []byte("huge"), token, "typo"),
			"Get": func() error {
				_, err := g.Get(ctx, path, token, "typo")
				return err
			}(),
			"Multi": func() error {
				_, err := g.Multi(ctx, zkfence.FenceNodeFor(fresh), token, "typo", &zk.CreateRequest{Path: fresh, Acl: zk.WorldACL(zk.PermAll)})
				return err
			}(),
		} {
			if !errors.Is(err, zkfence.ErrInvalidArgument) {
				t.Fatalf("%s with token %d: %v, want ErrInvalidArgument", name, token, err)
			}
		}
	}
	if h, err := g.Highest(ctx, zkfence.FenceNodeFor(path)); err != nil || h != 5 {
		t.Fatalf("Highest after the refusals: %d %v, want 5", h, err)
	}
	if got := data(t, c, path); got != "v5" {
		t.Fatalf("data %q after the refusals, want v5", got)
	}
	for _, p := range []string{fresh, zkfence.FenceNodeFor(fresh)} {
		if ok, _, err := c.Exists(p); err != nil || ok {
			t.Fatalf("%s exists after the refusals (%v)", p, err)
		}
	}
	if err := g.Set(ctx, path, []byte("v6"), 6, "B"); err != nil {
		t.Fatalf("the next holder after the refusals: %v", err)
	}
	if err := g.Set(ctx, path, []byte("max"), engine.MaxToken, "C"); err != nil {
		t.Fatalf("token 2^53-1: %v", err)
	}
}

// TestStaleHolderRefused: distlock on ZooKeeper hands A a lease, A writes;
// A's lease ends and B is granted (a higher zxid); B writes; A's late
// write with its old token is refused and B's data stays.
func TestStaleHolderRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := func() *distlock.Client {
		e, err := zkengine.Dial(ctx, ensemble.Servers(), 10*time.Second, zkengine.WithRoot(newPath("locks")))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close() })
		return distlock.New(e)
	}
	a, b := client(), client()
	c := conn(t)
	g := zkfence.New(c)
	defer g.Close()
	path := newPath("report")
	la, err := a.Acquire(ctx, "report", distlock.WithTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Set(ctx, path, []byte("A1"), la.Token(), la.Owner()); err != nil {
		t.Fatal(err)
	}
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	lb, err := b.Acquire(ctx, "report", distlock.WithTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lb.Release(ctx) }()
	if lb.Token() <= la.Token() {
		t.Fatalf("B's token %d not above A's %d", lb.Token(), la.Token())
	}
	if err := g.Set(ctx, path, []byte("B1"), lb.Token(), lb.Owner()); err != nil {
		t.Fatal(err)
	}
	var stale *zkfence.StaleError
	if err := g.Set(ctx, path, []byte("A2"), la.Token(), la.Owner()); !errors.As(err, &stale) || stale.Highest != lb.Token() {
		t.Fatalf("A's late write: %v, want a *StaleError naming B's token", err)
	}
	if got := data(t, c, path); got != "B1" {
		t.Fatalf("data %q, want B1", got)
	}
}

// TestMissingParent: a write or a read under a parent that does not exist
// fails with zk.ErrNoNode (wrapped) at once, creates nothing and raises no
// mark.
func TestMissingParent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := conn(t)
	g := zkfence.New(c)
	defer g.Close()
	path := newPath("no-parent") + "/data"
	if err := g.Set(ctx, path, []byte("v"), 5, "A"); !errors.Is(err, zk.ErrNoNode) || ctx.Err() != nil {
		t.Fatalf("Set under a missing parent: %v, want zk.ErrNoNode at once", err)
	}
	if _, err := g.Get(ctx, path, 5, "A"); !errors.Is(err, zk.ErrNoNode) || ctx.Err() != nil {
		t.Fatalf("Get under a missing parent: %v, want zk.ErrNoNode at once", err)
	}
	if h, err := g.Highest(ctx, zkfence.FenceNodeFor(path)); err != nil || h != 0 {
		t.Fatalf("Highest = %d, %v; want 0", h, err)
	}
}

// TestFenceNodeIsNoResource: a resource's fence node cannot be written as
// another resource's data (its name ends in .fence): the write is refused
// with ErrInvalidArgument, the mark keeps its token, and a stale write is
// still refused. Before, the write replaced the mark and a token-2 write
// after token 100 was accepted.
func TestFenceNodeIsNoResource(t *testing.T) {
	ctx := context.Background()
	c := conn(t)
	g := zkfence.New(c)
	defer g.Close()
	path := newPath("collide")
	if err := g.Set(ctx, path, []byte("v100"), 100, "A"); err != nil {
		t.Fatal(err)
	}
	if err := g.Set(ctx, zkfence.FenceNodeFor(path), []byte("junk"), 5, "B"); !errors.Is(err, zkfence.ErrInvalidArgument) {
		t.Fatalf("a write of %s as data: %v, want ErrInvalidArgument", zkfence.FenceNodeFor(path), err)
	}
	if _, err := g.Get(ctx, zkfence.FenceNodeFor(path), 5, "B"); !errors.Is(err, zkfence.ErrInvalidArgument) {
		t.Fatalf("a fenced read of %s as data: %v, want ErrInvalidArgument", zkfence.FenceNodeFor(path), err)
	}
	if h, err := g.Highest(ctx, zkfence.FenceNodeFor(path)); err != nil || h != 100 {
		t.Fatalf("Highest after the refusals: %d %v, want 100", h, err)
	}
	if err := g.Set(ctx, path, []byte("v2"), 2, "C"); !errors.Is(err, zkfence.ErrStale) {
		t.Fatalf("a token-2 write after token 100: %v, want ErrStale", err)
	}
}

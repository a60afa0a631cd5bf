package zookeeper_test

// A latch's write whose answer is lost (the connection breaks after the
// ensemble applied it, before its answer came: a member killed, a
// connection probe that gave up on a slow member) through the public
// Client: TrySetCount and CountDown must still count once and answer, as
// on etcd (TestLatchLostAnswers there), rather than fail with an error
// whose outcome the caller cannot know (and whose retry, a new call,
// counts again).

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/enginetest"
)

// ZooKeeper's request types the lost-answer proxy can cut after.
const (
	zkOpCreate  = 1
	zkOpDelete  = 2
	zkOpSetData = 5
	zkOpMulti   = 14
)

// lossProxy forwards a ZooKeeper client's connections to target; when armed
// with a request type, it forwards the requests of that type, and the
// first whose answer says it was applied (error code 0) loses its answer:
// instead of passing it on, the proxy closes the client's connection
// (once per arming).
type lossProxy struct {
	l      net.Listener
	target string
	armed  atomic.Int32 // request type to cut after; 0: none
	cut    atomic.Int32 // answers lost so far
	// onCut, when set, runs when an answer is dropped, before the client's
	// connection is closed (before the client can send anything again).
	onCut atomic.Pointer[func()]
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

func startLossProxy(t *testing.T, target string) *lossProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &lossProxy{l: l, target: target}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.serve(c, s)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *lossProxy) Addr() string { return p.l.Addr().String() }

// frame reads one length-prefixed frame.
func frame(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	b := make([]byte, 4+binary.BigEndian.Uint32(n[:]))
	copy(b, n[:])
	_, err := io.ReadFull(r, b[4:])
	return b, err
}

// serve relays frames both ways (the first each way is the session's
// handshake); a request of the armed type is remembered by its xid, and
// the answer with that xid is dropped and the client's connection closed.
func (p *lossProxy) serve(c, s net.Conn) {
	defer c.Close()
	defer s.Close()
	var victim atomic.Int64
	victim.Store(-1 << 40)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer s.Close()
		for first := true; ; first = false {
			b, err := frame(c)
			if err != nil {
				return
			}
			if !first && len(b) >= 12 {
				xid := int32(binary.BigEndian.Uint32(b[4:8]))
				op := int32(binary.BigEndian.Uint32(b[8:12]))
				if a := p.armed.Load(); a != 0 && op == a {
					victim.Store(int64(xid))
				}
			}
			if _, err := s.Write(b); err != nil {
				return
			}
		}
	}()
	for first := true; ; first = false {
		b, err := frame(s)
		if err != nil {
			break
		}
		if !first && len(b) >= 20 && int64(int32(binary.BigEndian.Uint32(b[4:8]))) == victim.Load() &&
			binary.BigEndian.Uint32(b[16:20]) == 0 && p.armed.Swap(0) != 0 {
			p.cut.Add(1)
			if f := p.onCut.Swap(nil); f != nil {
				(*f)()
			}
			break // applied; the answer is lost with the connection
		}
		if _, err := c.Write(b); err != nil {
			break
		}
	}
	_ = c.Close()
	<-done
}

// TestStrangerLatchLostAnswers: TrySetCount and CountDown each once with
// its answer lost (its request applied, the connection cut before the
// answer), through the public Client on a session whose connection comes
// back (the same session, through the same proxy): each answers as
// applied once, and the count is what one call each makes it.
func TestStrangerLatchLostAnswers(t *testing.T) {
	t.Parallel()
	ens := shared(t, 1)
	p := startLossProxy(t, ens.Servers()[0])
	c := distlock.New(dial(t, []string{p.Addr()}))
	t.Cleanup(func() { _ = c.Close() })
	other := distlock.New(dial(t, ens.Servers()))
	t.Cleanup(func() { _ = other.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The root exists first: its creation is a create too.
	warm := other.CountDownLatch("lost-answers-warm")
	if _, err := warm.TrySetCount(ctx, 1); err != nil {
		t.Fatal(err)
	}
	_ = warm.CountDown(ctx)
	l := c.CountDownLatch("lost-answers")
	p.armed.Store(zkOpCreate)
	ok, err := l.TrySetCount(ctx, 3)
	if p.cut.Load() != 1 {
		t.Fatalf("the proxy cut %d answers, want the TrySetCount's", p.cut.Load())
	}
	if err != nil || !ok {
		t.Errorf("TrySetCount(3) whose answer was lost: %v, %v; want true (it was applied)", ok, err)
	}
	if n, err := other.CountDownLatch("lost-answers").Count(ctx); err != nil || n != 3 {
		t.Fatalf("count after the TrySetCount: %d, %v; want 3", n, err)
	}
	// A CountDown whose answer is lost while another Client counts down
	// before it can send again: its id is no longer the last applied.
	p.armed.Store(zkOpSetData)
	between := func() {
		if err := other.CountDownLatch("lost-answers").CountDown(ctx); err != nil {
			t.Errorf("the other Client's CountDown: %v", err)
		}
	}
	p.onCut.Store(&between)
	err = l.CountDown(ctx)
	if p.cut.Load() != 2 {
		t.Fatalf("the proxy cut %d answers, want the CountDown's too", p.cut.Load())
	}
	if err != nil {
		t.Errorf("a CountDown whose answer was lost: %v; want nil (it was applied)", err)
	}
	if n, err := other.CountDownLatch("lost-answers").Count(ctx); err != nil || n != 1 {
		t.Errorf("count after the CountDown whose answer was lost and another's: %d, %v; want 1 (each counted once)", n, err)
	}
	p.armed.Store(zkOpDelete)
	err = l.CountDown(ctx)
	if p.cut.Load() != 3 {
		t.Fatalf("the proxy cut %d answers, want the last CountDown's too", p.cut.Load())
	}
	if err != nil {
		t.Errorf("the CountDown to zero whose answer was lost: %v; want nil", err)
	}
	if n, err := other.CountDownLatch("lost-answers").Count(ctx); err != nil || n != 0 {
		t.Errorf("count at the end: %d, %v; want 0", n, err)
	}
}

// TestStrangerGrantLostAnswers: a grant of each kind whose answer is lost
// (the multi-op applied, the connection cut before its answer). A waiting
// Acquire goes on and holds the lock once (count 1, one holder, its
// release frees it at once); a TryAcquire may answer an error, but then
// nothing stays held: another Client takes the whole lock well within the
// lost grant's ttl.
func TestStrangerGrantLostAnswers(t *testing.T) {
	t.Parallel()
	ens := shared(t, 1)
	p := startLossProxy(t, ens.Servers()[0])
	c := distlock.New(dial(t, []string{p.Addr()}))
	t.Cleanup(func() { _ = c.Close() })
	other := distlock.New(dial(t, ens.Servers()))
	t.Cleanup(func() { _ = other.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := other.Inspect(ctx, "grant-lost-warm"); err != nil { // the root made
		t.Fatal(err)
	}
	const ttl = 30 * time.Second
	kinds := []struct {
		kind  string
		take  func(c *distlock.Client, ctx context.Context, name string, wait bool) (*distlock.Lease, error)
		whole func(c *distlock.Client, ctx context.Context, name string) (*distlock.Lease, error)
	}{
		{"mutex", func(c *distlock.Client, ctx context.Context, name string, wait bool) (*distlock.Lease, error) {
			if wait {
				return c.Acquire(ctx, name, distlock.WithTTL(ttl))
			}
			return c.TryAcquire(ctx, name, distlock.WithTTL(ttl))
		}, func(c *distlock.Client, ctx context.Context, name string) (*distlock.Lease, error) {
			return c.TryAcquire(ctx, name, distlock.WithTTL(ttl))
		}},
		{"permits", func(c *distlock.Client, ctx context.Context, name string, wait bool) (*distlock.Lease, error) {
			if wait {
				return c.Semaphore(name, 2).Acquire(ctx, distlock.WithTTL(ttl), distlock.WithWeight(2))
			}
			return c.Semaphore(name, 2).TryAcquire(ctx, distlock.WithTTL(ttl), distlock.WithWeight(2))
		}, func(c *distlock.Client, ctx context.Context, name string) (*distlock.Lease, error) {
			return c.Semaphore(name, 2).TryAcquire(ctx, distlock.WithTTL(ttl), distlock.WithWeight(2))
		}},
		{"writer", func(c *distlock.Client, ctx context.Context, name string, wait bool) (*distlock.Lease, error) {
			if wait {
				return c.RWMutex(name).Lock(ctx, distlock.WithTTL(ttl))
			}
			return c.RWMutex(name).TryLock(ctx, distlock.WithTTL(ttl))
		}, func(c *distlock.Client, ctx context.Context, name string) (*distlock.Lease, error) {
			return c.RWMutex(name).TryLock(ctx, distlock.WithTTL(ttl))
		}},
	}
	for _, k := range kinds {
		for _, wait := range []bool{true, false} {
			name := fmt.Sprintf("grant-lost-%s-%v", k.kind, wait)
			before := p.cut.Load()
			p.armed.Store(zkOpMulti)
			start := time.Now()
			l, err := k.take(c, ctx, name, wait)
			p.armed.Store(0)
			if p.cut.Load() != before+1 {
				t.Fatalf("%s: the proxy cut %d answers, want the grant's", name, p.cut.Load()-before)
			}
			if err != nil {
				if wait {
					t.Errorf("%s: a waiting acquire whose grant's answer was lost: %v", name, err)
					continue
				}
				t.Logf("%s: the try whose grant's answer was lost: %v", name, err)
				var x *distlock.Lease
				enginetest.WaitFor(t, 20*time.Second, name+": the lost grant undone (another Client takes the whole lock)", func() bool {
					x, err = k.whole(other, ctx, name)
					return err == nil
				})
				if d := time.Since(start); d > ttl/2 {
					t.Errorf("%s: freed %v after the lost grant, near its ttl", name, d)
				}
				_ = x.Release(ctx)
				continue
			}
			var in distlock.Info
			if k.kind == "mutex" {
				in, err = other.Inspect(ctx, name)
			} else {
				in, err = other.RWMutex(name).Inspect(ctx)
				if k.kind == "permits" {
					in, err = other.Semaphore(name, 2).Inspect(ctx)
				}
			}
			if err != nil || len(in.Holders) != 1 || in.Holders[0].Owner != l.Owner() || in.Holders[0].Count != 1 {
				t.Errorf("%s: after the lost grant's answer: %+v, %v; want one holder, the lease's, count 1", name, in, err)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
			x, err := k.whole(other, ctx, name)
			if err != nil {
				t.Errorf("%s: the lock after the release of the grant whose answer was lost: %v", name, err)
				continue
			}
			_ = x.Release(ctx)
		}
	}
}

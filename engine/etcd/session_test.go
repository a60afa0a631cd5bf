package etcd_test

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/distlock/distlock"
	etcdengine "github.com/distlock/distlock/engine/etcd"
	"github.com/distlock/distlock/engine/etcd/etcdtest"
)

// TestLossBeforeRevocation compares when a lease holder learns that its
// lease may be gone with when etcd revokes it, for distlock's lease and for
// etcd's own concurrency.Session, on one member reached through a proxy
// that delays every client request by delay and is then cut.
//
// A renewal delayed on its way is applied by the server late, so the
// server's expiry is the request's arrival plus the ttl. distlock counts
// its deadline from the request's send time, so it signals the loss before
// the server can revoke. The Session counts from the receipt of the answer
// (and checks on a ticker), so its Done comes after the server revoked: for
// a while its holder believes in a lease that is gone.
func TestLossBeforeRevocation(t *testing.T) {
	cl := etcdtest.Start(t, 1)
	px := newDelayProxy(t, strings.TrimPrefix(cl.Endpoints()[0], "http://"))
	const delay = 300 * time.Millisecond
	px.delay.Store(int64(delay))
	via := cl.ClientOf(t, "http://"+px.addr())
	direct := cl.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	c := distlock.New(etcdengine.New(via))
	t.Cleanup(func() { _ = c.Close() })
	const ttl = 3 * time.Second
	l, err := c.Acquire(ctx, "revoke", distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	sess, err := concurrency.NewSession(via, concurrency.WithTTL(int(ttl/time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	// distlock's lease has renewed through the delay after the Session
	// began (which renews on the same period); then the link goes dead.
	waitRenewedAfter(t, l, time.Now().Add(ttl/3))
	if l.Err() != nil {
		t.Fatalf("the lease was lost before the cut: %v", l.Err())
	}
	px.cut()
	cutAt := time.Now()
	held, err := direct.Get(ctx, "distlock/revoke/lock")
	if err != nil || len(held.Kvs) != 1 || held.Kvs[0].Lease == 0 {
		t.Fatalf("the lock key: %v, %v", held, err)
	}
	leaseRevoked := make(chan time.Time, 1)
	go func() { leaseRevoked <- revokedAt(ctx, direct, clientv3.LeaseID(held.Kvs[0].Lease)) }()
	leaseDone, sessDone, sessRevoked := make(chan time.Time, 1), make(chan time.Time, 1), make(chan time.Time, 1)
	go func() { leaseDone <- lossAt(l) }()
	go func() { <-sess.Done(); sessDone <- time.Now() }()
	go func() { sessRevoked <- revokedAt(ctx, direct, sess.Lease()) }()
	lt, lr, st, rt := <-leaseDone, <-leaseRevoked, <-sessDone, <-sessRevoked
	since := func(x time.Time) time.Duration { return x.Sub(cutAt).Round(time.Millisecond) }
	t.Logf("after the cut: distlock's lease lost at %v, its etcd lease revoked at %v; the Session's Done at %v, its lease revoked at %v",
		since(lt), since(lr), since(st), since(rt))
	if !lt.Before(lr) {
		t.Errorf("distlock signalled its loss (%v) after etcd revoked its lease (%v)", since(lt), since(lr))
	}
	if !st.After(rt) {
		t.Logf("this run did not show the Session's late Done (%v; its lease revoked at %v)", since(st), since(rt))
	}
}

// revokedAt polls until lease id is gone on the server (via a client that
// does not go through the proxy) and returns when it saw that.
func revokedAt(ctx context.Context, cli *clientv3.Client, id clientv3.LeaseID) time.Time {
	for ctx.Err() == nil {
		r, err := cli.TimeToLive(ctx, id)
		if err == nil && r.TTL < 0 { // -1: gone (0 is "under a second left")
			return time.Now()
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Now()
}

// delayProxy forwards TCP to target, delaying the client's bytes by delay,
// until cut.
type delayProxy struct {
	ln     net.Listener
	target string
	delay  atomic.Int64
	mu     sync.Mutex
	conns  []net.Conn
	dead   atomic.Bool
}

func newDelayProxy(t *testing.T, target string) *delayProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &delayProxy{ln: ln, target: target}
	go p.accept()
	t.Cleanup(p.cut)
	return p
}

func (p *delayProxy) addr() string { return p.ln.Addr().String() }

func (p *delayProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil || p.dead.Load() {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go p.delayed(s, c)
		go func() { _, _ = io.Copy(c, s) }()
	}
}

// delayed copies src to dst, each chunk delay after it was read.
func (p *delayProxy) delayed(dst, src net.Conn) {
	type chunk struct {
		at time.Time
		b  []byte
	}
	q := make(chan chunk, 1024)
	go func() {
		for ch := range q {
			time.Sleep(time.Until(ch.at))
			if _, err := dst.Write(ch.b); err != nil {
				return
			}
		}
	}()
	defer close(q)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			q <- chunk{time.Now().Add(time.Duration(p.delay.Load())), append([]byte(nil), buf[:n]...)}
		}
		if err != nil {
			return
		}
	}
}

// cut closes the listener and every connection: the link is dead.
func (p *delayProxy) cut() {
	p.dead.Store(true)
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

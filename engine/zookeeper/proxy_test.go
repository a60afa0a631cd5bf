package zookeeper_test

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// proxy forwards one loopback port to a ZooKeeper server; Freeze cuts
// every connection through it and refuses new ones until Thaw, as a
// client paused (or cut off) would look to the ensemble: its session's
// heartbeats stop.
type proxy struct {
	l      net.Listener
	target string

	up atomic.Int64 // bytes forwarded from clients to the server

	mu     sync.Mutex
	frozen bool
	conns  []net.Conn
	wg     sync.WaitGroup
}

// startProxy returns a proxy to target, closed when t ends.
func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{l: l, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		_ = l.Close()
		p.Freeze()
		p.wg.Wait()
	})
	return p
}

// Addr is the proxy's address.
func (p *proxy) Addr() string { return p.l.Addr().String() }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.frozen {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.conns = append(p.conns, c, s)
		p.wg.Add(2)
		p.mu.Unlock()
		go p.pipe(c, s)
		go p.pipe(counting{s, &p.up}, c)
	}
}

// Sent is the number of bytes forwarded so far from clients to the
// server (a request sent shows as a rise).
func (p *proxy) Sent() int64 { return p.up.Load() }

// counting is a connection whose writes are counted in n.
type counting struct {
	net.Conn
	n *atomic.Int64
}

func (c counting) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.n.Add(int64(n))
	return n, err
}

func (p *proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
}

// Freeze cuts every connection and refuses new ones.
func (p *proxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.frozen = true
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

// Thaw accepts connections again.
func (p *proxy) Thaw() {
	p.mu.Lock()
	p.frozen = false
	p.mu.Unlock()
}

// Package stallproxy is a TCP proxy for tests that can stall: while it is
// paused, it holds every byte between its clients and the server (both
// ways, on every connection, new ones included), as a stopped process, a
// stalled backend or a partition would, then lets them through in order.
// The connections stay open: a stall delays answers, it loses none.
package stallproxy

import (
	"context"
	"net"
	"sync"
	"time"
)

// Proxy forwards TCP connections to one server and stalls them on demand.
type Proxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	cond   *sync.Cond
	paused bool // Pause
	stalls int  // Stall calls in force
	closed bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// Listen starts a proxy on a free loopback port that forwards to target
// (host:port). Close stops it.
func Listen(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: make(map[net.Conn]struct{})}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's address (host:port), for the client.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Port is the proxy's port.
func (p *Proxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// Pause stalls every connection until Resume.
func (p *Proxy) Pause() { p.update(func() { p.paused = true }) }

// Resume ends a Pause (stalls in force go on).
func (p *Proxy) Resume() { p.update(func() { p.paused = false }) }

// Stall stalls every connection from now for d (overlapping stalls and a
// Pause hold the traffic until the last one ends) and returns when this
// stall ends: after d, or when ctx ends.
func (p *Proxy) Stall(ctx context.Context, d time.Duration) {
	p.update(func() { p.stalls++ })
	defer p.update(func() { p.stalls-- })
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}

func (p *Proxy) update(change func()) {
	p.mu.Lock()
	change()
	p.cond.Broadcast()
	p.mu.Unlock()
}

// Cut closes every connection through the proxy (the bytes it held while
// paused are lost: a reply cut in flight) and lets new connections
// through, unpaused.
func (p *Proxy) Cut() {
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.paused = false
	p.cond.Broadcast()
	p.mu.Unlock()
}

// Close closes the proxy and every connection through it.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	_ = p.ln.Close()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			_ = c.Close()
			_ = s.Close()
			return
		}
		p.conns[c], p.conns[s] = struct{}{}, struct{}{}
		p.wg.Add(2)
		p.mu.Unlock()
		go p.pipe(c, s)
		go p.pipe(s, c)
	}
}

// pipe copies from src to dst, holding each chunk while stalled.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	defer func() {
		_ = dst.Close()
		_ = src.Close()
		p.mu.Lock()
		delete(p.conns, dst)
		delete(p.conns, src)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for (p.paused || p.stalls > 0) && !p.closed {
				p.cond.Wait()
			}
			closed := p.closed
			p.mu.Unlock()
			if closed {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or a closed connection: the other side is closed too
		}
	}
}

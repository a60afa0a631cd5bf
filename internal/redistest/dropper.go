package redistest

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// ReplyDropper is a TCP proxy in front of a server that, when armed, drops
// the next reply and resets the client's connection: the command ran on the
// server, but the client never learns its outcome. go-redis then resends
// the command on a new connection, which is how tests show that a script is
// (or is not) safe to run twice.
type ReplyDropper struct {
	ln       net.Listener
	upstream string
	armed    atomic.Bool
	dropped  atomic.Int64
	wg       sync.WaitGroup
}

// NewReplyDropper starts a proxy to upstream on a free loopback port; it is
// closed at the end of the test.
func NewReplyDropper(t testing.TB, upstream string) *ReplyDropper {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &ReplyDropper{ln: ln, upstream: upstream}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() { _ = ln.Close(); p.wg.Wait() })
	return p
}

// Addr is the proxy's address, for the client.
func (p *ReplyDropper) Addr() string { return p.ln.Addr().String() }

// Arm makes the proxy drop the next reply.
func (p *ReplyDropper) Arm() { p.armed.Store(true) }

// Dropped counts the replies dropped so far.
func (p *ReplyDropper) Dropped() int64 { return p.dropped.Load() }

func (p *ReplyDropper) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.upstream)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.wg.Add(2)
		go func() { defer p.wg.Done(); _, _ = io.Copy(s, c); _ = s.Close() }()
		go func() {
			defer p.wg.Done()
			defer c.Close()
			defer s.Close()
			p.replies(c.(*net.TCPConn), s)
		}()
	}
}

// replies copies the server's replies to the client until one is dropped.
func (p *ReplyDropper) replies(c *net.TCPConn, s net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := s.Read(buf)
		if n > 0 && p.armed.CompareAndSwap(true, false) {
			p.dropped.Add(1)
			_ = c.SetLinger(0) // close with a reset
			return
		}
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

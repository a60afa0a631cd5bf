package findings

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// replyDropper is a one-shot fault proxy: once armed, it drops the next
// reply the server sends and resets that client connection (TCP RST), as a
// connection reset after the command ran. Everything else is passed on.
type replyDropper struct {
	ln       net.Listener
	upstream string
	armed    atomic.Bool
	dropped  atomic.Int32
	wg       sync.WaitGroup
}

func newReplyDropper(t *testing.T, upstream string) *replyDropper {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &replyDropper{ln: ln, upstream: upstream}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() { _ = ln.Close(); p.wg.Wait() })
	return p
}

func (p *replyDropper) Addr() string { return p.ln.Addr().String() }

// Arm makes the proxy drop the next reply.
func (p *replyDropper) Arm() { p.armed.Store(true) }

func (p *replyDropper) accept() {
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
			buf := make([]byte, 64<<10)
			for {
				n, err := s.Read(buf)
				if n > 0 && p.armed.CompareAndSwap(true, false) {
					p.dropped.Add(1)
					_ = c.(*net.TCPConn).SetLinger(0) // RST
					return
				}
				if n > 0 {
					if _, err := c.Write(buf[:n]); err != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

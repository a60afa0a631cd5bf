package zookeeper

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// A member that hangs (SIGSTOP, a machine that stops scheduling) keeps its
// TCP connections open: nothing is refused, nothing is answered. The
// client library leaves such a connection only after two thirds of the
// session timeout without a packet from it (its read deadline), and pings
// only every third of it: 27 s with Dial's default 40 s session, 80 s with
// a 2-minute one. Until then the session's watches hear nothing (a latch's
// Wait, an election's Observe, a waiter's wake-up stay asleep while the
// other members serve the change) and every request waits (a holder's
// renewals too, so it could lose its lease although a majority serves).
//
// So an engine that Dial made watches its connection: whenever nothing has
// come from the member for probeQuiet, it sends a cheap read (an exists of
// "/", answered by the member itself); when nothing at all arrives
// within probeTimeout of it, it closes that TCP connection. The client
// library then connects to the next server with the same session (its
// requests in flight fail as on any broken connection, and are retried as
// such), sets its watches again there (the server fires those whose nodes
// changed since), and the session goes on. A connection that cannot even
// complete its handshake in probeQuiet + probeTimeout is closed alike.
// After each close the timeout doubles (up to 8 times), so that a member
// that is slow rather than stopped still answers; an answer to a probe
// resets it, and so does a connection that has served its session for 16 s.
// A member that stopped, then continued, and whose session moved
// meanwhile, refuses the session's late requests (ZooKeeper's
// SessionMovedException).
const (
	probeQuiet   = 2 * time.Second
	probeTimeout = 2 * time.Second
	probeTick    = 250 * time.Millisecond
)

// prober keeps the connection the client library dialled last, when a byte
// last came from it, and the state of its probe.
type prober struct {
	mu   sync.Mutex
	cur  net.Conn
	born time.Time // when cur was dialled

	recv atomic.Int64 // when a byte last came (UnixNano)
}

// dial is the client library's dialer: a plain TCP connection, whose reads
// the prober sees.
func (p *prober) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	pc := &probedConn{Conn: c, p: p}
	p.mu.Lock()
	p.cur, p.born = pc, time.Now()
	p.mu.Unlock()
	p.recv.Store(time.Now().UnixNano())
	return pc, nil
}

// probedConn notes every read that brought bytes.
type probedConn struct {
	net.Conn
	p *prober
}

func (c *probedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.p.recv.Store(time.Now().UnixNano())
	}
	return n, err
}

// run probes conn until done is closed. It runs from the connection's
// first dial (Dial's wait for a session included: a hung member whose
// kernel accepts the connection would hold the handshake for ten times the
// library's read deadline) to the engine's Close.
func (p *prober) run(conn *zk.Conn, done <-chan struct{}) {
	tick := time.NewTicker(probeTick)
	defer tick.Stop()
	timeout := probeTimeout
	var sent time.Time // the probe in flight (zero: none)
	var sentOn, dropped, settled net.Conn
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		p.mu.Lock()
		cur, born := p.cur, p.born
		p.mu.Unlock()
		if cur == nil || cur == dropped {
			continue
		}
		now := time.Now()
		last := time.Unix(0, p.recv.Load())
		if !sent.IsZero() && (last.After(sent) || sentOn != cur) {
			// Answered (or anything else came), or the library moved on.
			if sentOn == cur {
				timeout = probeTimeout
			}
			sent, sentOn = time.Time{}, nil
		}
		hasSession := conn.State() == zk.StateHasSession
		if cur != settled && hasSession && last.After(born) && now.Sub(born) > 8*probeTimeout {
			// A connection that has served its session for a while:
			// whatever was slow or hung before, the next hang is judged
			// from the first timeout again.
			timeout, settled = probeTimeout, cur
		}
		if now.Sub(last) < probeQuiet {
			continue
		}
		if !hasSession {
			// Connecting, or its handshake: closed when silent too long.
			if now.Sub(last) > probeQuiet+timeout && now.Sub(born) > probeQuiet+timeout {
				dropped = cur
				p.drop(cur, &timeout)
				sent, sentOn = time.Time{}, nil
			}
			continue
		}
		if sent.IsZero() {
			sent, sentOn = now, cur
			go func() { _, _, _ = conn.Exists("/") }() // answered, or failed when the connection closes
			continue
		}
		if now.Sub(sent) > timeout {
			dropped = cur
			p.drop(cur, &timeout)
			sent, sentOn = time.Time{}, nil
		}
	}
}

// drop closes c, which makes the client library connect to the next
// server, and doubles the next timeout.
func (p *prober) drop(c net.Conn, timeout *time.Duration) {
	_ = c.Close()
	*timeout = min(2**timeout, 8*probeTimeout)
}

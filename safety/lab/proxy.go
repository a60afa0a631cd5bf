package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// Proxies are the lab's TCP fault proxies, one per (client, node) link,
// run in-process with Shopify/toxiproxy's proxy type on 127.0.0.1.
type Proxies struct {
	srv   *toxiproxy.ApiServer
	mu    sync.Mutex
	links []*Link
}

// NewProxies returns an empty set of proxies.
func NewProxies() *Proxies {
	return &Proxies{srv: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())}
}

// Link is one client's link to one node (Node -1: the resource server).
type Link struct {
	Client string
	Node   int
	p      *toxiproxy.Proxy
	mu     sync.Mutex
	n      int
	down   bool
}

// New starts a proxy from a free loopback port to upstream.
func (ps *Proxies) New(client string, node int, upstream string) (*Link, error) {
	name := fmt.Sprintf("%s-n%d", client, node)
	p := toxiproxy.NewProxy(ps.srv, name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("proxy %s: %w", name, err)
	}
	l := &Link{Client: client, Node: node, p: p}
	ps.mu.Lock()
	ps.links = append(ps.links, l)
	ps.mu.Unlock()
	return l, nil
}

// Close stops every proxy.
func (ps *Proxies) Close() {
	ps.mu.Lock()
	links := ps.links
	ps.links = nil
	ps.mu.Unlock()
	for _, l := range links {
		l.p.Stop()
	}
}

// Addr is the address clients dial.
func (l *Link) Addr() string { return l.p.Listen }

// Directions of a toxic.
const (
	Up   = "upstream"   // client to node
	Down = "downstream" // node to client
)

func (l *Link) add(typ, stream string, attrs map[string]any) (string, error) {
	l.mu.Lock()
	l.n++
	name := fmt.Sprintf("%s_%s_%d", typ, stream, l.n)
	l.mu.Unlock()
	b, err := json.Marshal(map[string]any{"name": name, "type": typ, "stream": stream, "toxicity": 1.0, "attributes": attrs})
	if err != nil {
		return "", err
	}
	if _, err := l.p.Toxics.AddToxicJson(strings.NewReader(string(b))); err != nil {
		return "", fmt.Errorf("toxic %s on %s: %w", name, l.p.Name, err)
	}
	return name, nil
}

func (l *Link) remover(names ...string) func() {
	return func() {
		for _, n := range names {
			_ = l.p.Toxics.RemoveToxic(context.Background(), n)
		}
	}
}

// Latency delays data in the given directions by d (± jitter). The heal
// function removes it; data still held back is then sent at once, so heal
// only after the delayed data is due.
func (l *Link) Latency(d, jitter time.Duration, dirs ...string) (heal func(), err error) {
	var names []string
	for _, dir := range dirs {
		n, err := l.add("latency", dir, map[string]any{"latency": d.Milliseconds(), "jitter": jitter.Milliseconds()})
		if err != nil {
			l.remover(names...)()
			return nil, err
		}
		names = append(names, n)
	}
	return l.remover(names...), nil
}

// BlackHole drops every byte in both directions, connections stay open.
// Healing closes the connections that were black-holed.
func (l *Link) BlackHole() (heal func(), err error) {
	a, err := l.add("timeout", Up, map[string]any{"timeout": 0})
	if err != nil {
		return nil, err
	}
	b, err := l.add("timeout", Down, map[string]any{"timeout": 0})
	if err != nil {
		l.remover(a)()
		return nil, err
	}
	return l.remover(a, b), nil
}

// Reset resets (TCP RST) every connection as soon as data flows in dir:
// upstream, the command is dropped; downstream, the command ran and its
// reply is lost.
func (l *Link) Reset(dir string) (heal func(), err error) {
	n, err := l.add("reset_peer", dir, map[string]any{"timeout": 0})
	if err != nil {
		return nil, err
	}
	return l.remover(n), nil
}

// TakeDown closes the listener and every connection: the node is down for
// this client. Heal listens again on the same port.
func (l *Link) TakeDown() (heal func() error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.down {
		return func() error { return nil }
	}
	l.down = true
	l.p.Stop()
	return func() error {
		l.mu.Lock()
		defer l.mu.Unlock()
		if !l.down {
			return nil
		}
		var err error
		for range 50 { // the port may linger for a moment
			if err = l.p.Start(); err == nil {
				l.down = false
				return nil
			}
			time.Sleep(20 * time.Millisecond)
		}
		return err
	}
}

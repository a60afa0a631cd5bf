package redis_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// dialGate is a go-redis Dialer that can be shut: while shut, a dial waits
// until it opens again (or its context ends). It keeps the connections it
// made, so that a test can sever them all at once, as a process's death
// would.
type dialGate struct {
	mu      sync.Mutex
	shut    chan struct{} // nil while open; closed when it opens again
	waiting int           // dials that found it shut
	conns   []net.Conn
}

func (g *dialGate) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	g.mu.Lock()
	shut := g.shut
	if shut != nil {
		g.waiting++
	}
	g.mu.Unlock()
	if shut != nil {
		select {
		case <-shut:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err == nil {
		g.mu.Lock()
		g.conns = append(g.conns, c)
		g.mu.Unlock()
	}
	return c, err
}

// close makes dials wait.
func (g *dialGate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shut == nil {
		g.shut, g.waiting = make(chan struct{}), 0
	}
}

// open lets dials through again.
func (g *dialGate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shut != nil {
		close(g.shut)
		g.shut = nil
	}
}

// blocked reports how many dials found the gate shut since it was shut.
func (g *dialGate) blocked() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waiting
}

// sever closes every connection the gate made.
func (g *dialGate) sever() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.conns {
		_ = c.Close()
	}
	g.conns = nil
}

// gatedClient returns a go-redis client of srv whose connections are made
// through g and which names them name (CLIENT SETNAME).
func gatedClient(t *testing.T, srv *redistest.Server, g *dialGate, name string) *goredis.Client {
	t.Helper()
	opt := *srv.Client().Options()
	opt.Dialer, opt.ClientName = g.dial, name
	c := goredis.NewClient(&opt)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// splitSubs is a go-redis client that sends its commands on one client and
// makes its pub/sub connections on another (subs): a test can then keep a
// Client's subscriptions away while its commands go through.
type splitSubs struct {
	*goredis.Client
	subs *goredis.Client
}

func (s splitSubs) Subscribe(ctx context.Context, channels ...string) *goredis.PubSub {
	return s.subs.Subscribe(ctx, channels...)
}

// granted is one fair waiter's grant.
type granted struct {
	waiter int
	token  uint64
	err    error
}

// queueFair starts fair waiters on the Clients cs, one after the other, each
// once the queue of name (as inspect sees it) holds every waiter before it:
// waiter i is the queue's i-th. Each releases at once when granted, and reports its grant's
// token on the channel returned.
func queueFair(t *testing.T, ctx context.Context, inspect engine.Engine, name string, cs []*distlock.Client) <-chan granted {
	t.Helper()
	out := make(chan granted, len(cs))
	for i, c := range cs {
		go func() {
			l, err := c.Acquire(ctx, name, distlock.WithFair(), distlock.WithTTL(time.Minute))
			if err != nil {
				out <- granted{waiter: i, err: err}
				return
			}
			out <- granted{waiter: i, token: l.Token()}
			_ = l.Release(ctx)
		}()
		enginetest.WaitFor(t, 20*time.Second, fmt.Sprintf("waiter %d to queue", i), func() bool {
			info, err := inspect.Inspect(ctx, name)
			return err == nil && info.Waiters == i+1
		})
	}
	return out
}

// clientFields returns the CLIENT LIST line of the connection named name,
// as fields (nil when there is none).
func clientFields(t *testing.T, ctx context.Context, admin *goredis.Client, name string) map[string]string {
	t.Helper()
	list, err := admin.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(list, "\n") {
		f := make(map[string]string)
		for _, kv := range strings.Fields(line) {
			if k, v, ok := strings.Cut(kv, "="); ok {
				f[k] = v
			}
		}
		if f["name"] == name {
			return f
		}
	}
	return nil
}

// servedOrder collects n more grants and returns the waiters of those and
// of the grants had in token order.
func servedOrder(t *testing.T, ctx context.Context, got <-chan granted, n int, had ...granted) []granted {
	t.Helper()
	gs := slices.Clone(had)
	for range n {
		select {
		case g := <-got:
			if g.err != nil {
				t.Fatalf("waiter %d: %v", g.waiter, g.err)
			}
			gs = append(gs, g)
		case <-ctx.Done():
			t.Fatalf("%d of %d waiters served: %v", len(gs), n, ctx.Err())
		}
	}
	slices.SortFunc(gs, func(a, b granted) int { return cmp.Compare(a.token, b.token) })
	return gs
}

// waiters returns the waiters of gs, in gs's order.
func waiters(gs []granted) []int {
	order := make([]int, len(gs))
	for i, g := range gs {
		order[i] = g.waiter
	}
	return order
}

// holdFor takes name for a minute through a Client of its own on srv and
// returns that Client's engine (which reads the queue) and the lease.
func holdFor(t *testing.T, ctx context.Context, srv *redistest.Server, name string) (engine.Engine, *distlock.Lease) {
	t.Helper()
	eng := listEngine(t, srv.Client())
	holder := distlock.New(eng)
	t.Cleanup(func() { _ = holder.Close() })
	h, err := holder.Acquire(ctx, name, distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	return eng, h
}

// TestUnheardWakeUpKeepsTurn: three fair waiters, each in its own Client,
// queue behind a holder; the head's pub/sub connection is killed, and kept
// from coming back, right before the holder releases, so the release's
// wake-up reaches nobody (as when the head's Client has not subscribed
// again on a new master after a Sentinel failover). The head keeps its
// turn: the lock stays reserved for it until its heartbeat, which tells
// it so, and the waiters are served in their order. (Before, the 250ms
// reservation lapsed and the head was dropped from the queue, to come back
// at its end.)
func TestUnheardWakeUpKeepsTurn(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := srv.Client()
	name := "unheard"
	holderEng, h := holdFor(t, ctx, srv, name)
	gate := new(dialGate)
	const headSub = "unheard-head-sub"
	cs := make([]*distlock.Client, 3)
	for i := range cs {
		var cl goredis.UniversalClient = srv.Client()
		if i == 0 {
			cl = splitSubs{Client: srv.Client(), subs: gatedClient(t, srv, gate, headSub)}
		}
		cs[i] = distlock.New(listEngine(t, cl))
		t.Cleanup(func() { _ = cs[i].Close() })
	}
	t.Cleanup(gate.open) // run first: a dial still waiting ends
	got := queueFair(t, ctx, holderEng, name, cs)
	// The head's subscription is in place before it is cut: a head that
	// never subscribed would poll.
	var sub map[string]string
	enginetest.WaitFor(t, 20*time.Second, "the head's subscription", func() bool {
		sub = clientFields(t, ctx, admin, headSub)
		return sub != nil && sub["sub"] != "0"
	})
	gate.close()
	id, err := strconv.ParseInt(sub["id"], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := admin.ClientKillByFilter(ctx, "ID", strconv.FormatInt(id, 10)).Result(); err != nil || n != 1 {
		t.Fatalf("CLIENT KILL ID %d: %d, %v", id, n, err)
	}
	// The head's engine noticed (it re-checked, then dials again, and
	// waits at the gate): the release's wake-up reaches nobody.
	enginetest.WaitFor(t, 20*time.Second, "the head's engine to dial again", func() bool { return gate.blocked() > 0 })
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// The head stays deaf until the lock was handed to someone.
	first := servedOrder(t, ctx, got, 1)
	gate.open()
	if order := waiters(servedOrder(t, ctx, got, 2, first...)); !slices.Equal(order, []int{0, 1, 2}) {
		t.Fatalf("served in the order %v, want [0 1 2]", order)
	}
}

// TestGoneHeadDroppedAtHeartbeatDeadline: a fair head whose Client is gone
// (every connection severed and none made again: no heartbeat, no Leave)
// when the holder releases is dropped once its heartbeat deadline passes,
// and the next waiter is served: not before that deadline (its grant's
// token, never below the server clock in µs, is at least the head's
// deadline as the queue recorded it).
func TestGoneHeadDroppedAtHeartbeatDeadline(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := srv.Client()
	name := "gone-head"
	holderEng, h := holdFor(t, ctx, srv, name)
	gate := new(dialGate)
	const headName = "gone-head-conn"
	head := distlock.New(listEngine(t, gatedClient(t, srv, gate, headName)))
	t.Cleanup(func() { _ = head.Close() })
	next := distlock.New(listEngine(t, srv.Client()))
	t.Cleanup(func() { _ = next.Close() })
	t.Cleanup(gate.open) // run first: a dial still waiting ends
	got := queueFair(t, ctx, holderEng, name, []*distlock.Client{head, next})
	info, err := holderEng.Inspect(ctx, name)
	if err != nil || len(info.Queue) != 2 {
		t.Fatalf("the queue: %+v, %v", info.Queue, err)
	}
	headID := info.Queue[0].ID
	gate.close()
	gate.sever()
	enginetest.WaitFor(t, 20*time.Second, "the head's connections to close", func() bool {
		return clientFields(t, ctx, admin, headName) == nil
	})
	deadline, err := admin.ZScore(ctx, redisengine.DefaultPrefix+"{"+name+"}:qd", headID).Result()
	if err != nil {
		t.Fatalf("the head's heartbeat deadline: %v", err)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	g := servedOrder(t, ctx, got, 1)[0]
	if g.waiter != 1 {
		t.Fatalf("first served: waiter %d, want 1", g.waiter)
	}
	if float64(g.token) < deadline {
		t.Fatalf("the next waiter was served at %d µs, before the gone head's heartbeat deadline %.0f µs", g.token, deadline)
	}
	if err := admin.ZScore(ctx, redisengine.DefaultPrefix+"{"+name+"}:q", headID).Err(); !errors.Is(err, goredis.Nil) {
		t.Fatalf("the gone head's entry after the next waiter was served: %v, want none", err)
	}
}

// TestUnheardCapIsWaiterTTL: the longest an unheard reservation is kept
// (scripts/queue.lua's q_unheard) is the Go waiters' heartbeat ttl.
func TestUnheardCapIsWaiterTTL(t *testing.T) {
	src, err := os.ReadFile("scripts/queue.lua")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^local q_unheard = (\d+)$`).FindSubmatch(src)
	if m == nil {
		t.Fatal("scripts/queue.lua declares no q_unheard")
	}
	if us, _ := strconv.ParseInt(string(m[1]), 10, 64); us != distlock.WaiterTTL.Microseconds() {
		t.Fatalf("q_unheard is %d µs, distlock.WaiterTTL %d µs", us, distlock.WaiterTTL.Microseconds())
	}
}

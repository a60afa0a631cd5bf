package main

import (
	"context"
	"runtime"
	"syscall"
	"time"

	"github.com/distlock/distlock/bench/peers"
)

// probe brackets a measured window: what the process allocated and burned,
// what the servers executed and what the instrumented clients sent between
// begin and end.
type probe struct {
	nodes   []*node
	counter *peers.Counter

	t       time.Time
	mem     runtime.MemStats
	cpu     time.Duration
	srv     []serverStats
	srvOK   []bool
	req     int64
	calls   int64
	methods map[string]int64
}

// window is what changed over a probe's window.
type window struct {
	elapsed  time.Duration
	mallocs  uint64        // heap allocations by the whole process
	bytes    uint64        // bytes allocated by the whole process
	cpu      time.Duration // process user+system time
	srvCmds  int64         // commands the servers executed, scripts' calls included
	srvCPU   time.Duration // servers' user+system time
	srvCalls map[string]int64
	requests int64 // commands the instrumented clients sent
	calls    int64 // client calls (a pipeline counts once)
	// methods: the etcd clients' requests by gRPC method (nil for others).
	methods map[string]int64
}

// beginProbe starts a window. ReadMemStats stops the world briefly.
func beginProbe(ctx context.Context, nodes []*node, counter *peers.Counter) *probe {
	p := &probe{nodes: nodes, counter: counter}
	p.srv = make([]serverStats, len(nodes))
	p.srvOK = make([]bool, len(nodes))
	for i, n := range nodes {
		p.srv[i], p.srvOK[i] = n.stats(ctx)
	}
	if counter != nil {
		p.req, p.calls, p.methods = counter.Requests(), counter.Calls(), counter.ByMethod()
	}
	p.cpu = processCPU()
	runtime.ReadMemStats(&p.mem)
	p.t = time.Now()
	return p
}

// end closes the window.
func (p *probe) end(ctx context.Context) window {
	var w window
	w.elapsed = time.Since(p.t)
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	w.mallocs = m.Mallocs - p.mem.Mallocs
	w.bytes = m.TotalAlloc - p.mem.TotalAlloc
	w.cpu = processCPU() - p.cpu
	if p.counter != nil {
		w.requests = p.counter.Requests() - p.req
		w.calls = p.counter.Calls() - p.calls
		for k, v := range p.counter.ByMethod() {
			if d := v - p.methods[k]; d > 0 {
				if w.methods == nil {
					w.methods = map[string]int64{}
				}
				w.methods[k] = d
			}
		}
	}
	w.srvCalls = map[string]int64{}
	for i, n := range p.nodes {
		if !p.srvOK[i] {
			continue
		}
		s, ok := n.stats(ctx)
		if !ok {
			continue
		}
		w.srvCPU += s.cpu - p.srv[i].cpu
		for name, c := range s.calls {
			if d := c - p.srv[i].calls[name]; d > 0 {
				w.srvCalls[name] += d
				w.srvCmds += d
			}
		}
	}
	return w
}

// processCPU returns the user+system CPU time of this process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pubsubCommands are the pub/sub commands counted apart in the tables:
// subscribing and unsubscribing (classic, pattern and sharded) and
// publishing (a PUBLISH inside a script counts too).
var pubsubCommands = []string{
	"subscribe", "unsubscribe", "psubscribe", "punsubscribe",
	"ssubscribe", "sunsubscribe", "publish", "spublish",
}

// pubsubCmds returns how many pub/sub commands a window's per-command
// counts hold.
func pubsubCmds(calls map[string]int64) int64 {
	var n int64
	for _, c := range pubsubCommands {
		n += calls[c]
	}
	return n
}

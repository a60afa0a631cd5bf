package main

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/distlock/distlock/bench/peers"
)

// s7 is many waiters on one name, spread over many Clients (as many
// processes), while one holder keeps it: what waiting costs, in memory and
// in traffic, and how fast the lock then passes from one to the next.
//
// Only distlock runs it: redsync and redislock wait by polling (1,000
// pollers would measure their retry delay, and load the two CPUs), and
// rueidislock's waiters cannot be counted from outside.
func s7(cfg config) scenario {
	n := cfg.waitClients * cfg.waitPerClient
	d := peers.Distlock()
	d.Settings = fmt.Sprintf("%d Clients × %d goroutines, each Client with its own engine/redis and go-redis "+
		"client (pool 128); the holder one more Client; defaults (ttl 30s)", cfg.waitClients, cfg.waitPerClient)
	return scenario{
		id: "S7", title: fmt.Sprintf("%s waiters on one name across %d Clients", fmtNum(float64(n), 0), cfg.waitClients),
		about: fmt.Sprintf("A holder (its own Client) takes one name; then %d goroutines, %d on each of %d Clients "+
			"(each Client with its own go-redis client and connections, as %d processes would have them), call "+
			"Acquire on it. Settled: every goroutine called Acquire, Inspect's Waiters is at least the number of "+
			"Clients (on Redis without a waiter queue it counts subscribed connections, one per Client), and then "+
			"neither the waiters' client requests nor Inspect's Waiters moved for %v; settle: from starting the "+
			"waiters to settled. Memory, from before the waiters started (after every Client "+
			"did one acquire+release, so its command connection exists, and a GC) to settled (after a GC), "+
			"divided by the waiters: client heap is runtime.MemStats HeapInuse (the whole process; goroutine "+
			"stacks are not in it), library goroutines/waiter does not count the waiting goroutine itself, Redis "+
			"is INFO memory used_memory (its subscription connections included). Then nobody releases for %v: "+
			"Redis cmds/s (%s) and the waiters' client requests/s over that window; grants in it must be 0. "+
			"Then %d hand-offs: the holder releases and the time from the start of its Release call to the "+
			"next grant (time.Now() in the waiter as Acquire returns) is measured; that waiter's lease is "+
			"released next, after the waiters' clients were quiet for %v (at most %v), so each hand-off starts "+
			"from sleeping waiters. p99 is the nearest rank (with 100 hand-offs, the second largest). "+
			"Redis cmds/hand-off and client req/hand-off: over the hand-off phase. Waiters still waiting "+
			"at the end are cancelled and every Client closed.",
			n, cfg.waitPerClient, cfg.waitClients, cfg.waitClients, settleQuiet, cfg.waitWindow, srvCmdsAbout,
			cfg.handoffs, handoffQuiet, handoffQuietMax),
		variants: []peers.Variant{d},
		cell: func(ctx context.Context, e *env, v peers.Variant, run, vi int) record {
			rec := newRecord("S7", v, run)
			nodes := []*node{e.single}
			g0 := runtime.NumGoroutine()
			holder, closeHolder, err := build(v, peers.Target{Addrs: addrs(nodes), Workers: 1})
			if err != nil {
				rec.Error = err.Error()
				return rec
			}
			counter := &peers.Counter{}
			waiters, closeWaiters, err := buildN(v, peers.Target{Addrs: addrs(nodes), Workers: n, Counter: counter}, cfg.waitClients)
			if err != nil {
				closeHolder()
				rec.Error = err.Error()
				return rec
			}
			res := runWaiters(ctx, holder, waiters, nodes, waitersConfig{
				clients: cfg.waitClients, perClient: cfg.waitPerClient, name: fmt.Sprintf("S7-r%d-v%d", run, vi),
				window: cfg.waitWindow, handoffs: cfg.handoffs, settleLimit: 30 * time.Second,
				grantLimit: cfg.stallLimit, counter: counter,
			})
			closeWaiters()
			closeHolder()
			fillWaiters(&rec, res)
			rec.Metrics["goroutines_left"] = float64(goroutinesLeft(g0, 3*time.Second))
			return rec
		},
		columns: []column{
			{head: "waiters", key: "waiters", digits: 0},
			{head: "Inspect Waiters", key: "subscribers", digits: 0},
			{head: "settle ms", key: "settle_ms", digits: 0},
			{head: "client HeapInuse B/waiter", key: "heap_inuse_b_per_waiter", digits: 0},
			{head: "library goroutines/waiter", key: "goroutines_per_waiter", digits: 2},
			{head: "Redis used_memory B/waiter", key: "redis_b_per_waiter", digits: 0},
			{head: "Redis connections opened", key: "redis_clients_delta", digits: 0},
			{head: "Redis cmds/s, no release (" + srvCmdsHead + ")", key: "srv_cmds_per_s", digits: 1},
			{head: "client req/s, no release", key: "requests_per_s", digits: 1},
			{head: "grants, no release", key: "early_grants", digits: 0},
			{head: "release→grant p50 ms", key: "handoff_p50_ms", digits: 2},
			{head: "release→grant p99 ms", key: "handoff_p99_ms", digits: 2},
			{head: "release→grant max ms", key: "handoff_max_ms", digits: 2},
			{head: "Release call p50 ms", key: "release_p50_ms", digits: 2},
			{head: "Redis cmds/hand-off", key: "srv_cmds_per_handoff", digits: 1},
			{head: "of which pub/sub", key: "srv_pubsub_per_handoff", digits: 1},
			{head: "client req/hand-off", key: "requests_per_handoff", digits: 1},
		},
		verdict: func(res *results) []string {
			heap := summarize(res.values("S7", vDistlock, "heap_inuse_b_per_waiter"))
			if math.IsNaN(heap.med) {
				return []string{"distlock not measured in this run"}
			}
			sv := func(key string, digits int) string {
				return fmtSummary(summarize(res.values("S7", vDistlock, key)), digits)
			}
			return []string{
				fmt.Sprintf("memory per waiter: client %s B of HeapInuse, Redis %s B of used_memory → reported",
					fmtSummary(heap, 0), sv("redis_b_per_waiter", 0)),
				fmt.Sprintf("traffic while nobody releases: %s Redis commands/s, %s client requests/s → reported",
					sv("srv_cmds_per_s", 1), sv("requests_per_s", 1)),
				fmt.Sprintf("release to next grant: p50 %s ms, p99 %s ms; %s Redis commands per hand-off → reported",
					sv("handoff_p50_ms", 2), sv("handoff_p99_ms", 2), sv("srv_cmds_per_handoff", 1)),
			}
		},
	}
}

// fillWaiters turns a waitersResult into a record's figures.
func fillWaiters(rec *record, res waitersResult) {
	m := rec.Metrics
	if res.firstErr != nil {
		rec.Error = res.firstErr.Error()
	}
	rec.Commands = res.ho.srvCalls
	n := float64(res.waiters)
	m["waiters"] = n
	m["errors"] = float64(res.errs)
	m["settle_ms"] = ms(res.settle)
	if res.subscribers >= 0 {
		m["subscribers"] = float64(res.subscribers)
	}
	if res.quiet.elapsed == 0 {
		return // not settled: nothing measured
	}
	m["heap_inuse_b_per_waiter"] = float64(res.heapInuse) / n
	m["heap_alloc_b_per_waiter"] = float64(res.heapAlloc) / n
	m["stack_b_per_waiter"] = float64(res.stackInuse) / n
	m["goroutines_per_waiter"] = float64(res.goroutines-res.waiters) / n
	m["goroutines_delta"] = float64(res.goroutines)
	if res.redisMem >= 0 {
		m["redis_b_per_waiter"] = float64(res.redisMem) / n
		m["redis_clients_delta"] = float64(res.redisClients)
	}
	s := res.quiet.elapsed.Seconds()
	m["window_s"] = s
	m["srv_cmds_per_s"] = float64(res.quiet.srvCmds) / s
	m["srv_pubsub_per_s"] = float64(pubsubCmds(res.quiet.srvCalls)) / s
	m["requests_per_s"] = float64(res.quiet.requests) / s
	m["srv_cpu_ms_per_s"] = ms(res.quiet.srvCPU) / s
	m["cpu_ms_per_s"] = ms(res.quiet.cpu) / s
	m["early_grants"] = float64(res.earlyGrants)
	h := float64(len(res.handoffs))
	m["handoffs"] = h
	if h == 0 {
		return
	}
	m["handoff_p50_ms"] = ms(percentile(res.handoffs, 50))
	m["handoff_p99_ms"] = ms(percentile(res.handoffs, 99))
	m["handoff_max_ms"] = ms(percentile(res.handoffs, 100))
	m["handoff_mean_ms"] = ms(mean(res.handoffs))
	m["release_p50_ms"] = ms(percentile(res.releases, 50))
	m["srv_cmds_per_handoff"] = float64(res.ho.srvCmds) / h
	m["srv_pubsub_per_handoff"] = float64(pubsubCmds(res.ho.srvCalls)) / h
	m["requests_per_handoff"] = float64(res.ho.requests) / h
}

// goroutinesLeft waits up to d for the process to be back to at most base
// goroutines, and returns how many more it has.
func goroutinesLeft(base int, d time.Duration) int {
	end := time.Now().Add(d)
	for {
		left := runtime.NumGoroutine() - base
		if left <= 0 || time.Now().After(end) {
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}

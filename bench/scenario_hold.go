package main

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/distlock/distlock/bench/peers"
)

// s6Acquirers is the number of goroutines that acquire the S6 leases.
const s6Acquirers = 64

// s6Interval is each library's renewal interval for leases of ttl.
func s6Interval(lib string, ttl time.Duration) time.Duration {
	switch lib {
	case "distlock":
		return ttl / 3 // the watchdog renews every ttl/3
	case "rueidislock":
		return ttl / 2 // ExtendInterval defaults to KeyValidity/2
	}
	return 0
}

// s6 holds many auto-renewed leases from one client and measures what
// keeping them costs.
func s6(cfg config) scenario {
	d, r := peers.Distlock(), peers.Rueidislock()
	ttl := cfg.leaseTTL
	d.Settings = fmt.Sprintf("ttl %v, renewed every %v (ttl/3), batched", ttl, s6Interval("distlock", ttl))
	r.Settings = fmt.Sprintf("KeyMajority 1, KeyValidity %v, extended every %v, one goroutine per lock", ttl, s6Interval("rueidislock", ttl))
	perInterval := func(res *results, v string) string {
		iv := s6Interval(v, ttl)
		if iv == 0 {
			return "-"
		}
		s := summarize(res.values("S6", v, "calls_per_s"))
		s.med, s.min, s.max = s.med*iv.Seconds(), s.min*iv.Seconds(), s.max*iv.Seconds()
		return fmtSummary(s, 1)
	}
	return scenario{
		id: "S6", title: fmt.Sprintf("%s leases held and auto-renewed by one client", fmtNum(float64(cfg.leases), 0)),
		about: fmt.Sprintf("One library instance acquires %d names (from %d goroutines), then only holds them "+
			"for %v (a multiple of both renewal intervals) while its own renewal machinery keeps them "+
			"alive; the figures are over that window. Each renewal is one request (one script) for both. "+
			"Only distlock and rueidislock renew by themselves (redsync and redislock leave it to the user). "+
			"client CPU: the harness process's user+system time per second (it is otherwise idle). "+
			"calls/s: client calls (a go-redis pipeline counts once; rueidis pipelines concurrent calls on "+
			"one connection, so there it is an upper bound of round trips). calls per interval: calls/s × the "+
			"renewal interval, 1 meaning one round trip per tick. heap B/lease and goroutines/lease: live "+
			"heap and goroutines after GC with the leases held, minus before, per lease.",
			cfg.leases, s6Acquirers, cfg.hold),
		variants: []peers.Variant{d, r},
		cell: func(ctx context.Context, e *env, v peers.Variant, run, vi int) record {
			rec := newRecord("S6", v, run)
			counter := &peers.Counter{}
			nodes := []*node{e.single}
			lk, closeFn, err := build(v, peers.Target{Addrs: addrs(nodes), TTL: ttl, Workers: s6Acquirers, Counter: counter})
			if err != nil {
				rec.Error = err.Error()
				return rec
			}
			defer closeFn()
			res := runHold(ctx, lk, nodes, holdConfig{
				leases: cfg.leases, acquirer: s6Acquirers, window: cfg.hold,
				prefix: fmt.Sprintf("S6-r%d-v%d-", run, vi), counter: counter,
			})
			fillHold(&rec, res)
			return rec
		},
		columns: []column{
			{head: "held", key: "held", digits: 0},
			{head: "client CPU ms/s", key: "cpu_ms_per_s", digits: 1},
			{head: "Redis CPU ms/s", key: "srv_cpu_ms_per_s", digits: 1},
			{head: "Redis cmds/s", key: "srv_cmds_per_s", digits: 0},
			{head: "client requests/s", key: "requests_per_s", digits: 0},
			{head: "client CPU µs/renewal", key: "cpu_us_per_renewal", digits: 1},
			{head: "Redis CPU µs/renewal", key: "srv_cpu_us_per_renewal", digits: 1},
			{head: "client calls/s", key: "calls_per_s", digits: 2},
			{head: "calls per interval", custom: perInterval},
			{head: "heap B/lease", key: "heap_b_per_lease", digits: 0},
			{head: "goroutines/lease", key: "goroutines_per_lease", digits: 2},
			{head: "acquire all s", key: "acquire_s", digits: 2},
			{head: "lost", key: "lost", digits: 0},
			{head: "stalled", key: "stalled", digits: 0},
		},
		verdict: func(res *results) []string {
			cpu := summarize(res.values("S6", "distlock", "cpu_ms_per_s"))
			if math.IsNaN(cpu.med) {
				return []string{"distlock not measured in this run"}
			}
			cmds := summarize(res.values("S6", "distlock", "srv_cmds_per_s"))
			heap := summarize(res.values("S6", "distlock", "heap_b_per_lease"))
			calls := summarize(res.values("S6", "distlock", "calls_per_s"))
			per := calls.med * s6Interval("distlock", ttl).Seconds()
			return []string{
				fmt.Sprintf("renewal CPU measured: client %s ms/s, Redis %s ms/s; Redis commands %s/s → reported",
					fmtSummary(cpu, 1), fmtSummary(summarize(res.values("S6", "distlock", "srv_cpu_ms_per_s")), 1),
					fmtSummary(cmds, 0)),
				fmt.Sprintf("one round trip per node per tick: %s calls per renewal interval (1 = one round trip "+
					"per tick; ≤ 1.5 counts as met, a tick now and then split in two) → %s", fmtNum(per, 2), met(per <= 1.5)),
				fmt.Sprintf("memory per held lease: %s B of live heap → reported", fmtSummary(heap, 0)),
			}
		},
	}
}

// fillHold turns a holdResult into a record's figures.
func fillHold(rec *record, res holdResult) {
	m := rec.Metrics
	if res.firstErr != nil {
		rec.Error = res.firstErr.Error()
	}
	rec.Commands = res.w.srvCalls
	rec.Requests = res.w.methods
	m["stalled"] = float64(res.stalled)
	if res.stalled > 0 {
		rec.Error = fmt.Sprintf("%d of %d acquisitions of free names still waiting after %v (%d held)",
			res.stalled, res.want, acquireLimit, res.held)
	}
	s := res.w.elapsed.Seconds()
	m["held"] = float64(res.held)
	m["lost"] = float64(res.lost)
	m["acquire_s"] = res.acquire.Seconds()
	m["release_s"] = res.release.Seconds()
	m["heap_b_per_lease"] = res.heapPerLease
	m["goroutines_per_lease"] = res.gorosPerLease
	m["cpu_ms_per_s"] = ms(res.w.cpu) / s
	m["srv_cpu_ms_per_s"] = ms(res.w.srvCPU) / s
	m["srv_cmds_per_s"] = float64(res.w.srvCmds) / s
	m["requests_per_s"] = float64(res.w.requests) / s
	m["calls_per_s"] = float64(res.w.calls) / s
	if res.w.requests > 0 { // every renewal is one request (one script)
		m["cpu_us_per_renewal"] = float64(res.w.cpu) / float64(time.Microsecond) / float64(res.w.requests)
		m["srv_cpu_us_per_renewal"] = float64(res.w.srvCPU) / float64(time.Microsecond) / float64(res.w.requests)
	}
}

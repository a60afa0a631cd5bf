package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/distlock/distlock/bench/peers"
)

// Names of the rows the targets refer to.
const (
	vDistlock  = "distlock"
	vPingGoRed = "floor: 2 PINGs (go-redis)"
	s2Workers  = 64
	kindPeer   = string(peers.Peer)
)

// singleVariants are the rows of S1 and S2.
func singleVariants(withReadme bool) []peers.Variant {
	vs := []peers.Variant{peers.Distlock()}
	if withReadme {
		vs = append(vs, peers.DistlockReadme())
	}
	vs = append(vs, peers.Redsync())
	if withReadme {
		vs = append(vs, peers.RedsyncReadme())
	}
	vs = append(vs, peers.Redislock())
	if withReadme {
		vs = append(vs, peers.RedislockReadme())
	}
	return append(vs, peers.Rueidislock(), peers.RueidislockDefaults(),
		peers.FloorPing(), peers.FloorPingRueidis(), peers.FloorSetNX())
}

// opsCell measures acquire+release by workers goroutines, each on its own
// name, on the single node or on the five quorum nodes.
func opsCell(cfg config, id string, workers int, quorum bool) func(context.Context, *env, peers.Variant, int, int) record {
	return func(ctx context.Context, e *env, v peers.Variant, run, vi int) record {
		rec := newRecord(id, v, run)
		nodes := []*node{e.single}
		if quorum {
			nodes = e.quorum
		}
		lk, closeFn, err := build(v, peers.Target{Addrs: addrs(nodes), Workers: workers})
		if err != nil {
			rec.Error = err.Error()
			return rec
		}
		defer closeFn()
		res := runOps(ctx, lk, nodes, opsConfig{
			workers: workers, warmup: cfg.warmup, duration: cfg.cell, hangLimit: cfg.stallLimit,
			name: cellNames(id, run, vi),
		})
		finishHung(&rec, res, cfg.stallLimit, false)
		return rec
	}
}

// cellNames returns per-worker lock names unique to one cell.
func cellNames(id string, run, vi int) func(int) string {
	base := fmt.Sprintf("%s-r%d-v%d-g", id, run, vi)
	return func(w int) string { return base + strconv.Itoa(w) }
}

// finishHung waits for the workers of a hung cell (their contexts were
// cancelled), then fills the record, saying that it hung.
func finishHung(rec *record, res *opsResult, limit time.Duration, dumped bool) {
	if res.hung && !dumped && hangDump != nil {
		hangDump(rec.Scenario + "-" + rec.Variant + "-run" + strconv.Itoa(rec.Run))
	}
	if res.hung && res.drain(drainLimit) {
		res.collect()
	}
	fillOps(rec, res)
	if res.hung {
		rec.Error = fmt.Sprintf("an operation in the %s ran past %v (%.0f measured operations completed before)",
			res.hungIn, limit, rec.Metrics["ops"])
		if res.firstErr != nil {
			rec.Error += "; first error: " + res.firstErr.Error()
		}
	}
}

// hangDump, when set, saves the goroutine stacks of a hung cell under a
// name made of what (main sets it to write next to the results).
var hangDump func(what string)

// drainLimit bounds the wait for the workers of a hung cell.
const drainLimit = 20 * time.Second

// fillOps turns an opsResult into a record's figures.
func fillOps(rec *record, res *opsResult) {
	m := rec.Metrics
	n := float64(res.ops)
	m["ops"] = n
	m["errors"] = float64(res.errs)
	if res.firstErr != nil {
		rec.Error = res.firstErr.Error()
	}
	rec.Commands = res.w.srvCalls
	rec.Requests = res.w.methods
	if res.hung {
		rec.Hung = true
		return
	}
	if res.ops == 0 {
		return
	}
	m["p50_ms"] = ms(percentile(res.lat, 50))
	m["p99_ms"] = ms(percentile(res.lat, 99))
	m["mean_ms"] = ms(mean(res.lat))
	m["ops_per_s"] = n / res.w.elapsed.Seconds()
	m["allocs_per_op"] = float64(res.w.mallocs) / n
	m["bytes_per_op"] = float64(res.w.bytes) / n
	m["srv_cmds_per_op"] = float64(res.w.srvCmds) / n
	m["srv_cpu_us_per_op"] = float64(res.w.srvCPU) / float64(time.Microsecond) / n
	m["cpu_us_per_op"] = float64(res.w.cpu) / float64(time.Microsecond) / n
	if res.w.requests > 0 {
		m["req_per_op"] = float64(res.w.requests) / n
		m["calls_per_op"] = float64(res.w.calls) / n
	}
}

// s1 is one goroutine acquiring and releasing one name, uncontended.
func s1(cfg config) scenario {
	return scenario{
		id: "S1", title: "uncontended acquire+release, 1 goroutine",
		about: "One goroutine acquires and releases one name in a loop. Latency is one acquire plus one " +
			"release. allocs/op and B/op are the whole process's heap allocations per operation " +
			"(runtime.MemStats deltas, go test -benchmem style). Redis cmds/op counts every command the " +
			"server executed, the ones inside scripts included (INFO commandstats).",
		variants: singleVariants(false),
		cell:     opsCell(cfg, "S1", 1, false),
		columns: []column{
			{head: "p50 ms", key: "p50_ms", digits: 3}, {head: "p99 ms", key: "p99_ms", digits: 3}, {head: "mean ms", key: "mean_ms", digits: 3},
			{head: "allocs/op", key: "allocs_per_op", digits: 1}, {head: "B/op", key: "bytes_per_op", digits: 0},
			{head: "Redis cmds/op", key: "srv_cmds_per_op", digits: 1}, {head: "Redis CPU µs/op", key: "srv_cpu_us_per_op", digits: 1},
			{head: "client CPU µs/op", key: "cpu_us_per_op", digits: 1},
		},
		ratios: []ratioCol{{"distlock ÷ row, p50", vDistlock, "p50_ms"}},
		verdict: func(res *results) []string {
			var out []string
			out = append(out, ratioLine("p50 vs the two-PING floor (go-redis): distlock ÷ floor",
				res.ratio("S1", vDistlock, vPingGoRed, "p50_ms"), 1.1, true))
			if peer, _ := res.best("S1", kindPeer, "p50_ms", true); peer != "" {
				out = append(out, ratioLine("p50 vs the best peer ("+peer+"): distlock ÷ peer",
					res.ratio("S1", vDistlock, peer, "p50_ms"), 1.0, true))
			}
			return out
		},
	}
}

// s2 is 64 goroutines, each acquiring and releasing its own name.
func s2(cfg config) scenario {
	vs := singleVariants(true)
	if cfg.quick {
		vs = pick(vs, vDistlock, "redsync", "rueidislock", vPingGoRed)
	}
	return scenario{
		id: "S2", title: "64 goroutines, a name each, throughput",
		about: "64 goroutines share one library instance; each acquires and releases its own name in a loop. " +
			"The tuned rows share one go-redis setup (pool 128, context deadlines honoured); the README rows " +
			"use the client the library's README shows (go-redis default pool: 10 × GOMAXPROCS).",
		variants: vs,
		cell:     opsCell(cfg, "S2", s2Workers, false),
		columns: []column{
			{head: "ops/s", key: "ops_per_s", digits: 0}, {head: "p50 ms", key: "p50_ms", digits: 3}, {head: "p99 ms", key: "p99_ms", digits: 3},
			{head: "allocs/op", key: "allocs_per_op", digits: 1}, {head: "B/op", key: "bytes_per_op", digits: 0},
			{head: "Redis cmds/op", key: "srv_cmds_per_op", digits: 1}, {head: "Redis CPU µs/op", key: "srv_cpu_us_per_op", digits: 1},
			{head: "client CPU µs/op", key: "cpu_us_per_op", digits: 1},
		},
		ratios: []ratioCol{{"distlock ÷ row, ops/s", vDistlock, "ops_per_s"}},
		verdict: func(res *results) []string {
			peer, _ := res.best("S2", kindPeer, "ops_per_s", false)
			if peer == "" {
				return nil
			}
			return []string{ratioLine("ops/s vs the best peer ("+peer+"): distlock ÷ peer",
				res.ratio("S2", vDistlock, peer, "ops_per_s"), 1.5, false)}
		},
	}
}

package main

import (
	"context"
	"fmt"
	"math"
	"os"

	"github.com/distlock/distlock/bench/peers"
	"github.com/distlock/distlock/engine/quorum"
)

// Names of the Redlock rows.
const (
	vQFenced    = "distlock (fenced)"
	vQNoFence   = "distlock (no fencing)"
	vQFencedFF  = "distlock (fenced, fail-fast)"
	vQNoFenceFF = "distlock (no fencing, fail-fast)"
	vRedsyncRM  = "redsync (README client)"
	vRedsyncFF  = "redsync (fail-fast)"
)

// quorumVariants are the rows of S4 and S5.
func quorumVariants(withFloor bool) []peers.Variant {
	vs := []peers.Variant{
		peers.DistlockQuorum(vQFenced, "engine/quorum defaults: phase-2 fencing, node timeout min(ttl/100, 50ms)"),
		peers.DistlockQuorum(vQNoFence, "quorum.WithoutFencing()", quorum.WithoutFencing()),
		peers.DistlockQuorum(vQFencedFF, "quorum.WithFailFast()", quorum.WithFailFast()),
		peers.DistlockQuorum(vQNoFenceFF, "WithoutFencing, WithFailFast", quorum.WithoutFencing(), quorum.WithFailFast()),
		peers.RedsyncReadme(), peers.Redsync(), peers.RedsyncFailFast(),
	}
	if withFloor {
		vs = append(vs, peers.FloorPing())
	}
	return vs
}

var redlockColumns = []column{
	{head: "p50 ms", key: "p50_ms", digits: 3}, {head: "p99 ms", key: "p99_ms", digits: 3},
	{head: "mean ms", key: "mean_ms", digits: 3}, {head: "errors", key: "errors"},
	{head: "allocs/op", key: "allocs_per_op", digits: 1},
	{head: "Redis cmds/op", key: "srv_cmds_per_op", digits: 1},
	{head: "Redis CPU µs/op", key: "srv_cpu_us_per_op", digits: 1},
	{head: "client CPU µs/op", key: "cpu_us_per_op", digits: 1},
}

// s4 is Redlock on five healthy nodes, uncontended, one goroutine.
func s4(cfg config) scenario {
	vs := quorumVariants(true)
	if cfg.quick {
		vs = pick(vs, vQFenced, vRedsyncFF, vPingGoRed)
	}
	return scenario{
		id: "S4", title: "Redlock, 5 nodes, acquire+release, 1 goroutine",
		about: "Five independent redis-servers; one goroutine acquires and releases one name. The floor row " +
			"pings all five nodes in parallel twice (the max of five parallel round trips, twice). " +
			"Redis cmds/op and Redis CPU µs/op are summed over the five nodes (which share one CPU when pinned).",
		variants: vs,
		cell:     opsCell(cfg, "S4", 1, true),
		columns:  redlockColumns,
		ratios: []ratioCol{
			{"fenced ÷ row, p50", vQFenced, "p50_ms"},
			{"no-fencing ÷ row, p50", vQNoFence, "p50_ms"},
		},
		verdict: func(res *results) []string {
			peer, _ := res.best("S4", kindPeer, "p50_ms", true)
			if peer == "" {
				return nil
			}
			var out []string
			for _, v := range []string{vQFenced, vQNoFence, vQFencedFF, vQNoFenceFF} {
				if len(res.get("S4", v)) == 0 {
					continue
				}
				out = append(out, ratioLine("p50 ≤ the best peer ("+peer+"): "+v+" ÷ peer",
					res.ratio("S4", v, peer, "p50_ms"), 1.0, true))
			}
			return out
		},
	}
}

// s5 is S4 with one of the five nodes SIGSTOPped during the window.
func s5(cfg config) scenario {
	vs := quorumVariants(false)
	if cfg.quick {
		vs = pick(vs, vQFencedFF, vRedsyncRM)
	}
	own := func(res *results, v string) string {
		a, b := res.median("S5", v, "p50_ms"), res.median("S4", v, "p50_ms")
		if math.IsNaN(a) || math.IsNaN(b) {
			return "-"
		}
		return fmtNum(a/b, 2)
	}
	cols := append([]column{}, redlockColumns...)
	cols = append(cols, column{head: "÷ own S4 p50", custom: own})
	return scenario{
		id: "S5", title: "Redlock, 5 nodes, one SIGSTOPped",
		about: fmt.Sprintf("As S4, but after the warm-up node 5 is frozen with SIGSTOP for the whole measured "+
			"window (SIGCONT after it). A cell whose single operation runs past %v is stopped and "+
			"reported as hanging. ÷ own S4 p50 compares the row's median p50 with its own healthy S4 median.",
			cfg.hangLimit),
		variants: vs,
		cell: func(ctx context.Context, e *env, v peers.Variant, run, vi int) record {
			rec := newRecord("S5", v, run)
			nodes := e.quorum
			lk, closeFn, err := build(v, peers.Target{Addrs: addrs(nodes), Workers: 1})
			if err != nil {
				rec.Error = err.Error()
				return rec
			}
			stopped := nodes[len(nodes)-1]
			res := runOps(ctx, lk, nodes, opsConfig{
				workers: 1, warmup: cfg.warmup, duration: cfg.cell, hangLimit: cfg.hangLimit,
				name:          cellNames("S5", run, vi),
				beforeMeasure: stopped.pause,
			})
			if res.hung && hangDump != nil {
				// While the node is still stopped: where the library waits.
				hangDump(fmt.Sprintf("S5-%s-run%d", v.Name, run))
			}
			if err := stopped.resume(); err != nil {
				fmt.Fprintln(os.Stderr, "resume:", err)
			}
			finishHung(&rec, res, cfg.hangLimit, true)
			closeFn()
			return rec
		},
		columns: cols,
		ratios: []ratioCol{
			{"fenced fail-fast ÷ row, p50", vQFencedFF, "p50_ms"},
			{"no-fencing fail-fast ÷ row, p50", vQNoFenceFF, "p50_ms"},
		},
		verdict: func(res *results) []string {
			var out []string
			for _, v := range []string{vQFenced, vQNoFence, vQFencedFF, vQNoFenceFF} {
				if len(res.get("S5", v)) == 0 {
					continue
				}
				a, b := res.median("S5", v, "p50_ms"), res.median("S4", v, "p50_ms")
				if math.IsNaN(b) {
					out = append(out, v+": its S4 row was not measured in this run")
					continue
				}
				out = append(out, fmt.Sprintf("%s: p50 %s ms vs its healthy S4 p50 %s ms = %s (target ≤ 1.20) → %s",
					v, fmtNum(a, 3), fmtNum(b, 3), fmtNum(a/b, 2), met(a/b <= 1.2)))
			}
			return out
		},
	}
}

package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/distlock/distlock/bench/peers"
)

// S3 parameters.
const (
	s3Workers = 16
	s3Hold    = time.Millisecond
)

// s3 is 16 goroutines contending for one name, holding it 1 ms each time.
func s3(cfg config) scenario {
	vs := []peers.Variant{
		peers.Distlock(), peers.DistlockPerWorker(),
		peers.Redsync(), peers.RedsyncPoll(time.Millisecond),
		peers.RedislockPoll(10 * time.Millisecond), peers.RedislockPoll(time.Millisecond),
		peers.Rueidislock(), peers.RueidislockDefaults(),
	}
	if cfg.quick {
		vs = pick(vs, vDistlock, "redsync (retry 1ms)", "rueidislock")
	}
	return scenario{
		id: "S3", title: "16 goroutines, one name, hold 1 ms",
		about: "16 goroutines share one library instance (except the row with a Client per goroutine) and " +
			"contend for one name: acquire (waiting), hold 1 ms (time.Sleep), release, ask again at once. " +
			"wait: from wanting the lock to holding it (across give-ups); a goroutine still waiting at the end " +
			"of the window adds its wait so far, so starvation shows. min/max per goroutine: grants " +
			"per goroutine in the window. Jain: Jain's fairness index of those counts. same: the fraction " +
			"of grants that went to the goroutine that held the lock just before. gap: from the previous " +
			"holder's release call to the next grant. req/acq: requests the library's client sent per grant " +
			"(go-redis hooks / a rueidis wrapper; pub/sub SUBSCRIBE traffic on distlock's subscription " +
			"connection is not hooked). Redis cmds/acq: every command the server executed per grant, " +
			"the ones inside scripts and (UN)SUBSCRIBE included. The floor is one hold plus one round " +
			"trip per hand-off: 1/(measured hold + the two-PING floor's p50 / 2 from S1).",
		variants: vs,
		cell: func(ctx context.Context, e *env, v peers.Variant, run, vi int) record {
			rec := newRecord("S3", v, run)
			counter := &peers.Counter{}
			nodes := []*node{e.single}
			lk, closeFn, err := build(v, peers.Target{Addrs: addrs(nodes), Workers: s3Workers, Counter: counter})
			if err != nil {
				rec.Error = err.Error()
				return rec
			}
			defer closeFn()
			res := runContend(ctx, lk, nodes, contendConfig{
				workers: s3Workers, name: fmt.Sprintf("S3-r%d-v%d", run, vi), hold: s3Hold,
				warmup: cfg.warmup, duration: cfg.contend, counter: counter,
			})
			fillContend(&rec, res)
			return rec
		},
		columns: []column{
			{head: "acq/s", key: "acq_per_s", digits: 0}, {head: "wait mean ms", key: "wait_mean_ms", digits: 1}, {head: "wait p99 ms", key: "wait_p99_ms", digits: 1}, {head: "wait max ms", key: "wait_max_ms", digits: 0},
			{head: "min/g", key: "min_per_g", digits: 0}, {head: "max/g", key: "max_per_g", digits: 0}, {head: "Jain", key: "jain", digits: 3},
			{head: "same", key: "same_frac", digits: 2}, {head: "gap p50 ms", key: "gap_p50_ms", digits: 2}, {head: "gap p99 ms", key: "gap_p99_ms", digits: 1},
			{head: "req/acq", key: "req_per_acq", digits: 1}, {head: "Redis cmds/acq", key: "srv_cmds_per_acq", digits: 1},
			{head: "give-ups", key: "giveups", digits: 0},
		},
		ratios: []ratioCol{{"distlock ÷ row, acq/s", vDistlock, "acq_per_s"}},
		verdict: func(res *results) []string {
			acq := summarize(res.values("S3", vDistlock, "acq_per_s"))
			p99 := summarize(res.values("S3", vDistlock, "wait_p99_ms"))
			j := summarize(res.values("S3", vDistlock, "jain"))
			req := summarize(res.values("S3", vDistlock, "req_per_acq"))
			if math.IsNaN(acq.med) {
				return []string{"distlock not measured in this run"}
			}
			floor := ""
			hold := summarize(res.values("S3", vDistlock, "hold_ms")).med
			if rtt := res.median("S1", vPingGoRed, "p50_ms") / 2; !math.IsNaN(rtt) && !math.IsNaN(hold) {
				floor = fmt.Sprintf(" (floor here: 1/(%.3f ms hold + %.3f ms round trip) = %.0f/s)", hold, rtt, 1000/(hold+rtt))
			}
			return []string{
				fmt.Sprintf("acquisitions/s ≥ 650: %s%s → %s", fmtSummary(acq, 0), floor, met(acq.med >= 650)),
				fmt.Sprintf("p99 wait ≤ 30 ms: %s ms → %s", fmtSummary(p99, 1), met(p99.med <= 30)),
				fmt.Sprintf("Jain ≥ 0.99 in fair mode: **not measurable** (distlock has no fair mode yet); "+
					"default mode measures %s", fmtSummary(j, 3)),
				fmt.Sprintf("no polling traffic: %s requests per acquisition (a grant, a release and the "+
					"woken waiter's attempts), measured, not judged against a bound", fmtSummary(req, 1)),
			}
		},
	}
}

// fillContend turns a contendResult into a record's figures.
func fillContend(rec *record, res contendResult) {
	m := rec.Metrics
	if res.firstErr != nil {
		rec.Error = res.firstErr.Error()
	}
	rec.Commands = res.w.srvCalls
	m["grants"] = float64(res.grants)
	m["giveups"] = float64(res.giveUps)
	m["overlaps"] = float64(res.overlaps)
	if res.grants == 0 {
		return
	}
	g := float64(res.grants)
	m["acq_per_s"] = g / res.w.elapsed.Seconds()
	m["wait_mean_ms"] = ms(mean(res.waits))
	m["wait_p50_ms"] = ms(percentile(res.waits, 50))
	m["wait_p99_ms"] = ms(percentile(res.waits, 99))
	m["wait_max_ms"] = ms(percentile(res.waits, 100))
	m["censored"] = float64(res.censored)
	m["min_per_g"] = float64(slices.Min(res.perWorker))
	m["max_per_g"] = float64(slices.Max(res.perWorker))
	m["jain"] = jain(res.perWorker)
	m["same_frac"] = float64(res.same) / g
	m["gap_p50_ms"] = ms(percentile(res.gaps, 50))
	m["gap_p99_ms"] = ms(percentile(res.gaps, 99))
	m["req_per_acq"] = float64(res.w.requests) / g
	m["calls_per_acq"] = float64(res.w.calls) / g
	m["srv_cmds_per_acq"] = float64(res.w.srvCmds) / g
	m["srv_cpu_us_per_acq"] = float64(res.w.srvCPU) / float64(time.Microsecond) / g
	m["hold_ms"] = ms(res.held) / g
}

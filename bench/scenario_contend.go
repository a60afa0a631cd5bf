package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/bench/peers"
)

// S3 parameters.
const (
	s3Workers = 16
	s3Hold    = time.Millisecond
)

// The two S3 tables: the headline with a library instance and a client per
// goroutine, and the one where the 16 goroutines share one instance.
const (
	idS3       = "S3"
	idS3Shared = "S3-shared"
	// vDistlockFair is the S3 row of distlock with WithFair.
	vDistlockFair = "distlock (WithFair)"
)

// s3Variants are the rows of both S3 tables.
func s3Variants(cfg config) []peers.Variant {
	vs := []peers.Variant{
		peers.Distlock(),
		peers.DistlockWith(vDistlockFair, "engine/redis, WithFair(); go-redis pool 128", distlock.WithFair()),
		peers.Redsync(), peers.RedsyncPoll(time.Millisecond),
		peers.RedislockPoll(10 * time.Millisecond), peers.RedislockPoll(time.Millisecond),
		peers.Rueidislock(), peers.RueidislockDefaults(),
	}
	if cfg.quick {
		vs = pick(vs, vDistlock, vDistlockFair, "redsync (retry 1ms)", "rueidislock")
	}
	return vs
}

// srvCmdsHead says, in the S3 and S7 tables' headers, which server commands
// are counted; srvCmdsAbout says it at length.
const (
	srvCmdsHead  = "all but INFO, incl. script calls, (S)(UN)SUBSCRIBE, (S)PUBLISH, HELLO"
	srvCmdsAbout = "every command in INFO commandstats but the harness's INFO: each redis.call inside a script, " +
		"SUBSCRIBE, SSUBSCRIBE, UNSUBSCRIBE, SUNSUBSCRIBE, PUBLISH, SPUBLISH and connection set-up (HELLO) included"
)

// s3 is 16 goroutines contending for one name, holding it 1 ms each time:
// with a library instance and a client per goroutine (perClient, the
// headline S3), or all sharing one instance (S3-shared). Both tables run
// the same cell, the same driver and the same counting; only the number of
// instances built differs.
func s3(cfg config, perClient bool) scenario {
	id, title, who := idS3, "16 goroutines, one name, hold 1 ms, a Client per goroutine",
		"Each of the 16 goroutines has its own library instance and its own go-redis (rueidis) client, "+
			"hence its own connections, as 16 processes would have them"
	instances := s3Workers
	if !perClient {
		id, title, who = idS3Shared, "16 goroutines, one name, hold 1 ms, one shared Client",
			"The 16 goroutines share one library instance and its one go-redis (rueidis) client"
		instances = 1
	}
	return scenario{
		id: id, title: title,
		about: who + "; they contend for one name: acquire (waiting), hold 1 ms (time.Sleep), release, ask " +
			"again at once. wait: from the start of an Acquire call to its grant; a goroutine still waiting at " +
			"the end of the window adds its wait so far, so starvation shows (give-ups: Acquire calls that " +
			"returned an error and were made again). min/max per goroutine: grants per goroutine in the " +
			"window. Jain: Jain's fairness index of those counts. same holder again: the fraction of grants " +
			"that went to the goroutine that held the lock just before. gap: from the previous holder's " +
			"release call to the next grant. req/acq: commands the library's clients sent per grant, every " +
			"instance's client counted (go-redis hooks / a rueidis wrapper; the SUBSCRIBE traffic of " +
			"go-redis pub/sub connections bypasses the hooks, it shows in the Redis columns). Redis " +
			"cmds/acq: INFO commandstats deltas per grant, " + srvCmdsAbout + "; pub/sub: the " +
			"SUBSCRIBE, SSUBSCRIBE, PSUBSCRIBE, their UNSUBSCRIBEs, PUBLISH and SPUBLISH among them " +
			"(closing a connection unsubscribes without a command). The floor is one hold plus one round " +
			"trip per hand-off: 1/(measured hold + the two-PING floor's p50 / 2 from S1).",
		variants: s3Variants(cfg),
		cell: func(ctx context.Context, e *env, v peers.Variant, run, vi int) record {
			rec := newRecord(id, v, run)
			counter := &peers.Counter{}
			nodes := []*node{e.single}
			t := peers.Target{Addrs: addrs(nodes), Workers: s3Workers, Counter: counter}
			lk, closeFn, err := buildN(v, t, instances)
			if err != nil {
				rec.Error = err.Error()
				return rec
			}
			defer closeFn()
			res := runContend(ctx, lk, nodes, contendConfig{
				workers: s3Workers, name: fmt.Sprintf("%s-r%d-v%d", id, run, vi), hold: s3Hold,
				warmup: cfg.warmup, duration: cfg.contend, counter: counter,
			})
			fillContend(&rec, res)
			rec.Metrics["instances"] = float64(instances)
			return rec
		},
		columns: []column{
			{head: "acq/s", key: "acq_per_s", digits: 0},
			{head: "wait p50 ms", key: "wait_p50_ms", digits: 1}, {head: "wait p99 ms", key: "wait_p99_ms", digits: 1}, {head: "wait max ms", key: "wait_max_ms", digits: 0},
			{head: "min/g", key: "min_per_g", digits: 0}, {head: "max/g", key: "max_per_g", digits: 0}, {head: "Jain", key: "jain", digits: 3},
			{head: "same holder again", key: "same_frac", digits: 2}, {head: "gap p50 ms", key: "gap_p50_ms", digits: 2}, {head: "gap p99 ms", key: "gap_p99_ms", digits: 1},
			{head: "req/acq", key: "req_per_acq", digits: 1},
			{head: "Redis cmds/acq (" + srvCmdsHead + ")", key: "srv_cmds_per_acq", digits: 1},
			{head: "of which pub/sub", key: "srv_pubsub_per_acq", digits: 2},
			{head: "give-ups", key: "giveups", digits: 0},
		},
		ratios:  []ratioCol{{"distlock ÷ row, acq/s", vDistlock, "acq_per_s"}},
		verdict: func(res *results) []string { return s3Verdict(res, id) },
	}
}

// s3Verdict returns the S3 target lines for one of the two tables: the
// waiter queue's targets, for the default policy and for WithFair (a
// Client per goroutine), and "no worse than before" for the shared Client.
func s3Verdict(res *results, id string) []string {
	sum := func(row, key string) summary { return summarize(res.values(id, row, key)) }
	acq, p99, maxw := sum(vDistlock, "acq_per_s"), sum(vDistlock, "wait_p99_ms"), sum(vDistlock, "wait_max_ms")
	j, req, cmds := sum(vDistlock, "jain"), sum(vDistlock, "req_per_acq"), sum(vDistlock, "srv_cmds_per_acq")
	if math.IsNaN(acq.med) {
		return []string{"distlock not measured in this run"}
	}
	floor := ""
	hold := sum(vDistlock, "hold_ms").med
	if rtt := res.median("S1", vPingGoRed, "p50_ms") / 2; !math.IsNaN(rtt) && !math.IsNaN(hold) {
		floor = fmt.Sprintf(" (floor here: 1/(%.3f ms hold + %.3f ms round trip) = %.0f/s)", hold, rtt, 1000/(hold+rtt))
	}
	lines := []string{
		fmt.Sprintf("default policy: acquisitions/s ≥ 650: %s%s → %s", fmtSummary(acq, 0), floor, met(acq.med >= 650)),
		fmt.Sprintf("default policy: p99 wait ≤ 40 ms: %s ms → %s; max ≤ 100 ms: %s ms → %s",
			fmtSummary(p99, 1), met(p99.med <= 40), fmtSummary(maxw, 0), met(maxw.med <= 100)),
		fmt.Sprintf("default policy: Jain ≥ 0.99: %s → %s", fmtSummary(j, 3), met(j.med >= 0.99)),
		fmt.Sprintf("default policy: ≤ 5 client requests per acquisition: %s → %s (Redis commands per acquisition: %s, reported)",
			fmtSummary(req, 1), met(req.med <= 5), fmtSummary(cmds, 1)),
	}
	facq, fp99, fj := sum(vDistlockFair, "acq_per_s"), sum(vDistlockFair, "wait_p99_ms"), sum(vDistlockFair, "jain")
	if !math.IsNaN(facq.med) {
		lines = append(lines,
			fmt.Sprintf("WithFair: acquisitions/s ≥ 600: %s → %s; p99 wait ≤ 40 ms: %s ms → %s; Jain ≥ 0.995: %s → %s "+
				"(grants in arrival order: checked by the conformance suite, QueueFairOrder)",
				fmtSummary(facq, 0), met(facq.med >= 600), fmtSummary(fp99, 1), met(fp99.med <= 40), fmtSummary(fj, 3), met(fj.med >= 0.995)))
	}
	return lines
}

// fillContend turns a contendResult into a record's figures.
func fillContend(rec *record, res contendResult) {
	m := rec.Metrics
	if res.firstErr != nil {
		rec.Error = res.firstErr.Error()
	}
	rec.Commands = res.w.srvCalls
	rec.Requests = res.w.methods
	m["grants"] = float64(res.grants)
	m["giveups"] = float64(res.giveUps)
	m["overlaps"] = float64(res.overlaps)
	if res.grants == 0 {
		return
	}
	g := float64(res.grants)
	m["acq_per_s"] = g / res.w.elapsed.Seconds()
	m["wait_mean_ms"] = ms(mean(res.waits))
	m["want_p99_ms"] = ms(percentile(res.wantWaits, 99))
	m["want_max_ms"] = ms(percentile(res.wantWaits, 100))
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
	m["srv_pubsub_per_acq"] = float64(pubsubCmds(res.w.srvCalls)) / g
	m["srv_cpu_us_per_acq"] = float64(res.w.srvCPU) / float64(time.Microsecond) / g
	m["hold_ms"] = ms(res.held) / g
}

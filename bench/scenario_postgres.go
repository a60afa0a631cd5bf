package main

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/distlock/distlock/bench/peers"
)

// The PostgreSQL scenarios (issue 17), on a PostgreSQL server the harness
// starts (pgtest: initdb/pg_ctl, loopback, fsync off, synchronous_commit
// on): P1 (S1 against the advisory-lock and row-lock floors), P3 (S3 with a
// Client per goroutine, statements counted) and P6 (held leases renewed in
// one statement per tick).
const (
	idP1 = "P1"
	idP3 = "P3"
	idP6 = "P6"
)

var (
	vPgDistlock = peers.PgDistlock().Name
	vPgAdvisory = peers.PgAdvisory().Name
	vPgRow      = peers.PgForUpdate().Name
	vPgRowWait  = peers.PgForUpdateWait().Name
)

func p1(cfg config) scenario {
	return scenario{
		id: idP1, title: "PostgreSQL: uncontended acquire+release, 1 goroutine, vs the floors",
		about: "S1 on PostgreSQL: one goroutine acquires and releases one name in a loop. Floors: " +
			"pg_try_advisory_lock + pg_advisory_unlock on one connection (two round trips, a session lock " +
			"that lives as long as the connection: nothing to renew, nothing fenced), and BEGIN; SELECT … FOR " +
			"UPDATE NOWAIT; COMMIT on one connection (three round trips; the lock lives as long as the " +
			"transaction). statements/op: statements the rows' pgx connections sent per operation (pgx " +
			"QueryTracer; BEGIN and COMMIT count). distlock ÷ row: p50, per run.",
		variants: []peers.Variant{peers.PgDistlock(), peers.PgAdvisory(), peers.PgForUpdate()},
		cell:     backendOpsCell(cfg, idP1, 1, 0),
		columns: []column{
			{head: "p50 ms", key: "p50_ms", digits: 3}, {head: "p99 ms", key: "p99_ms", digits: 3}, {head: "mean ms", key: "mean_ms", digits: 3},
			{head: "allocs/op", key: "allocs_per_op", digits: 1}, {head: "B/op", key: "bytes_per_op", digits: 0},
			{head: "statements/op", key: "req_per_op", digits: 2},
			{head: "client CPU µs/op", key: "cpu_us_per_op", digits: 1},
		},
		ratios: []ratioCol{{"distlock ÷ row, p50", vPgDistlock, "p50_ms"}},
		verdict: func(res *results) []string {
			return []string{
				ratioLine("p50 vs the advisory-lock floor: distlock ÷ floor", res.ratio(idP1, vPgDistlock, vPgAdvisory, "p50_ms"), 1.3, true),
				fmt.Sprintf("p50 vs SELECT … FOR UPDATE NOWAIT: distlock ÷ row lock = %s → reported",
					fmtSummary(res.ratio(idP1, vPgDistlock, vPgRow, "p50_ms"), 2)),
			}
		},
	}
}

// p3PoolSize is each P3 Client's pool: 16 Clients share the server's 100
// connections.
const p3PoolSize = 3

func p3(cfg config) scenario {
	return scenario{
		id: idP3, title: "PostgreSQL: 16 goroutines, one name, hold 1 ms, a Client per goroutine",
		about: fmt.Sprintf("S3 on PostgreSQL: each of the 16 goroutines has its own Client, engine and pgx pool "+
			"(at most %d connections, one of them LISTENing), as 16 processes would; they contend for one "+
			"name: acquire (waiting), hold 1 ms, release, ask again at once. The columns are S3's; statements/acq: "+
			"statements every Client's pgx connections sent per grant (pgx QueryTracer: acquires, releases, "+
			"queue heartbeats, renewals, LISTEN), the wake-ups being NOTIFYs sent by the release's function. Floor: BEGIN; SELECT … FOR UPDATE "+
			"(waiting in PostgreSQL's own lock queue); hold; COMMIT, one pgx.Conn per goroutine. distlock ÷ row: acq/s, per run.", p3PoolSize),
		variants: []peers.Variant{peers.PgDistlock(), peers.PgForUpdateWait()},
		cell: func(ctx context.Context, e *env, v peers.Variant, run, vi int) record {
			rec := newRecord(idP3, v, run)
			counter := &peers.Counter{}
			t, _, err := e.target(ctx, v, peers.Target{Workers: 1, Counter: counter, PoolSize: p3PoolSize})
			if err != nil {
				rec.Error = err.Error()
				return rec
			}
			lk, closeFn, err := buildN(v, t, s3Workers)
			if err != nil {
				rec.Error = err.Error()
				return rec
			}
			defer closeFn()
			res := runContend(ctx, lk, nil, contendConfig{
				workers: s3Workers, name: fmt.Sprintf("%s-r%d-v%d", idP3, run, vi), hold: s3Hold,
				warmup: cfg.warmup, duration: cfg.contend, counter: counter,
			})
			fillContend(&rec, res)
			rec.Metrics["instances"] = s3Workers
			return rec
		},
		columns: []column{
			{head: "acq/s", key: "acq_per_s", digits: 0},
			{head: "wait p50 ms", key: "wait_p50_ms", digits: 1}, {head: "wait p99 ms", key: "wait_p99_ms", digits: 1}, {head: "wait max ms", key: "wait_max_ms", digits: 0},
			{head: "min/g", key: "min_per_g", digits: 0}, {head: "max/g", key: "max_per_g", digits: 0}, {head: "Jain", key: "jain", digits: 3},
			{head: "gap p50 ms", key: "gap_p50_ms", digits: 2}, {head: "gap p99 ms", key: "gap_p99_ms", digits: 1},
			{head: "statements/acq", key: "req_per_acq", digits: 2},
			{head: "give-ups", key: "giveups", digits: 0},
		},
		ratios: []ratioCol{{"distlock ÷ row, acq/s", vPgDistlock, "acq_per_s"}},
		verdict: func(res *results) []string {
			p99 := summarize(res.values(idP3, vPgDistlock, "wait_p99_ms"))
			if math.IsNaN(p99.med) {
				return []string{"distlock not measured in this run"}
			}
			return []string{
				fmt.Sprintf("p99 wait ≤ 40 ms: %s ms → %s", fmtSummary(p99, 1), met(p99.med <= 40)),
				ratioLine("acquisitions/s vs SELECT … FOR UPDATE (waiting): distlock ÷ floor", res.ratio(idP3, vPgDistlock, vPgRowWait, "acq_per_s"), 0.9, false),
				fmt.Sprintf("statements per acquisition: %s; acquisitions/s %s; Jain %s → reported",
					fmtSummary(summarize(res.values(idP3, vPgDistlock, "req_per_acq")), 2),
					fmtSummary(summarize(res.values(idP3, vPgDistlock, "acq_per_s")), 0),
					fmtSummary(summarize(res.values(idP3, vPgDistlock, "jain")), 3)),
			}
		},
	}
}

func p6(cfg config) scenario {
	ttl := cfg.leaseTTL
	iv := ttl / 3
	v := peers.PgDistlock()
	v.Settings = fmt.Sprintf("engine/postgres, ttl %v, renewed every %v (ttl/3) in one Extend", ttl, iv.Round(time.Millisecond))
	perInterval := func(res *results, row string) string {
		s := summarize(res.values(idP6, row, "calls_per_s"))
		s.med, s.min, s.max = s.med*iv.Seconds(), s.min*iv.Seconds(), s.max*iv.Seconds()
		return fmtSummary(s, 2)
	}
	return scenario{
		id: idP6, title: fmt.Sprintf("PostgreSQL: %s leases held and auto-renewed by one Client", fmtNum(float64(cfg.leases), 0)),
		about: fmt.Sprintf("One Client acquires %d names (from %d goroutines), then only holds them for %v while "+
			"its watchdog renews them; the figures are over that window. statements/s: statements the "+
			"Client's pgx pool sent (QueryTracer); per interval: × ttl/3, 1 meaning one statement per tick. "+
			"heap B/lease: the client's live heap after GC with the leases held, minus before, per lease.",
			cfg.leases, s6Acquirers, cfg.hold),
		variants: []peers.Variant{v},
		cell: func(ctx context.Context, e *env, v peers.Variant, run, vi int) record {
			rec := newRecord(idP6, v, run)
			counter := &peers.Counter{}
			t, _, err := e.target(ctx, v, peers.Target{Workers: s6Acquirers, Counter: counter, TTL: ttl})
			if err != nil {
				rec.Error = err.Error()
				return rec
			}
			lk, closeFn, err := build(v, t)
			if err != nil {
				rec.Error = err.Error()
				return rec
			}
			defer closeFn()
			res := runHold(ctx, lk, nil, holdConfig{
				leases: cfg.leases, acquirer: s6Acquirers, window: cfg.hold,
				prefix: fmt.Sprintf("%s-r%d-v%d-", idP6, run, vi), counter: counter,
			})
			fillHold(&rec, res)
			return rec
		},
		columns: []column{
			{head: "held", key: "held", digits: 0},
			{head: "client CPU ms/s", key: "cpu_ms_per_s", digits: 1},
			{head: "statements/s", key: "calls_per_s", digits: 2},
			{head: "statements per interval", custom: perInterval},
			{head: "client CPU µs/lease renewed", custom: func(res *results, row string) string {
				cpu := summarize(res.values(idP6, row, "cpu_ms_per_s"))
				n := float64(cfg.leases) / iv.Seconds() // renewals per second
				return fmtNum(cpu.med*1000/n, 2)
			}},
			{head: "heap B/lease", key: "heap_b_per_lease", digits: 0},
			{head: "acquire all s", key: "acquire_s", digits: 2},
			{head: "lost", key: "lost", digits: 0},
		},
		verdict: func(res *results) []string {
			calls := summarize(res.values(idP6, vPgDistlock, "calls_per_s"))
			if math.IsNaN(calls.med) {
				return []string{"distlock not measured in this run"}
			}
			per := calls.med * iv.Seconds()
			return []string{fmt.Sprintf("renewals of %s held leases in one statement per tick: %s statements per renewal interval (≤ 1.5 counts as met) → %s",
				fmtNum(float64(cfg.leases), 0), fmtNum(per, 2), met(per <= 1.5))}
		},
	}
}

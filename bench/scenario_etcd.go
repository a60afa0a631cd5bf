package main

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/distlock/distlock/bench/peers"
)

// The etcd scenarios (issue 16): E1 (S1 on etcd), E3 (S3 on etcd, a Client
// per goroutine) and E6 (held locks and their keepalives), on etcd clusters
// of one and three members started by the harness (etcdtest), against
// etcd's own concurrency.Mutex.
const (
	idE1 = "E1"
	idE3 = "E3"
	idE6 = "E6"
)

// target returns the Target of a row: the Redis single node, and the etcd
// cluster or the PostgreSQL server it runs on (started on first use), and
// the redis-servers whose INFO the probe reads (none for etcd and
// PostgreSQL rows).
func (e *env) target(ctx context.Context, v peers.Variant, t peers.Target) (peers.Target, []*node, error) {
	t.Addrs = addrs([]*node{e.single})
	switch v.Backend {
	case "etcd":
		eps, err := e.etcdEndpoints(v.Members)
		if err != nil {
			return t, nil, err
		}
		t.Etcd = eps
		return t, nil, nil
	case "postgres":
		url, err := e.postgresURL(ctx)
		if err != nil {
			return t, nil, err
		}
		t.Postgres = url
		return t, nil, nil
	}
	return t, []*node{e.single}, nil
}

// backendOpsCell is opsCell for rows on any backend, with the clients'
// requests counted (gRPC calls and stream messages for etcd, statements for
// PostgreSQL, commands for Redis).
func backendOpsCell(cfg config, id string, workers int, ttl time.Duration) func(context.Context, *env, peers.Variant, int, int) record {
	return func(ctx context.Context, e *env, v peers.Variant, run, vi int) record {
		rec := newRecord(id, v, run)
		counter := &peers.Counter{}
		t, nodes, err := e.target(ctx, v, peers.Target{Workers: workers, Counter: counter, TTL: ttl})
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
		res := runOps(ctx, lk, nodes, opsConfig{
			workers: workers, warmup: cfg.warmup, duration: cfg.cell, hangLimit: cfg.stallLimit,
			name: cellNames(id, run, vi), counter: counter,
		})
		finishHung(&rec, res, cfg.stallLimit, false)
		return rec
	}
}

// etcdPeerOf returns the concurrency.Mutex row on the same cluster as an
// etcd row.
func etcdPeerOf(res *results, id, row string) string {
	recs := res.get(id, row)
	if len(recs) == 0 {
		return ""
	}
	for _, v := range res.order[id] {
		r := res.get(id, v)
		if r[0].Lib == "etcd-concurrency" && r[0].Metrics["members"] == recs[0].Metrics["members"] {
			return v
		}
	}
	return ""
}

// ratioTo is a custom column: the row's figure ÷ the figure of the row that
// other names, from the same run.
func ratioTo(id, key string, other func(res *results, row string) string) func(*results, string) string {
	return func(res *results, row string) string {
		o := other(res, row)
		if o == "" || o == row {
			return "-"
		}
		return fmtSummary(res.ratio(id, row, o, key), 2)
	}
}

// e1Variants are the rows of E1: distlock and concurrency.Mutex on each
// cluster, and distlock on Redis for the cost of consensus.
func e1Variants() []peers.Variant {
	return []peers.Variant{
		peers.EtcdDistlock(1), peers.EtcdMutex(1), peers.EtcdDistlock(3), peers.EtcdMutex(3), peers.Distlock(),
	}
}

// withMembers wraps a cell to record the etcd cluster's size.
func withMembers(cell func(context.Context, *env, peers.Variant, int, int) record) func(context.Context, *env, peers.Variant, int, int) record {
	return func(ctx context.Context, e *env, v peers.Variant, run, vi int) record {
		rec := cell(ctx, e, v, run, vi)
		rec.Metrics["members"] = float64(v.Members)
		return rec
	}
}

func e1(cfg config) scenario {
	redis := func(*results, string) string { return vDistlock }
	return scenario{
		id: idE1, title: "etcd: uncontended acquire+release, 1 goroutine, vs concurrency.Mutex and vs Redis",
		about: "S1 on etcd: one goroutine acquires and releases one name in a loop, on an etcd cluster of one " +
			"member and of three (etcd " + etcdVersion + " on loopback, started by the harness, --unsafe-no-fsync, " +
			"all members on this machine), and on the single redis-server for the cost of consensus. " +
			"concurrency.Mutex: one Session per Client (one lease, kept alive by clientv3), a NewMutex per " +
			"acquisition, Lock then Unlock. req/op: gRPC requests per operation (unary calls and messages " +
			"sent on streams, every instance's; Redis: commands). ÷ Mutex: the row's p50 ÷ concurrency.Mutex's " +
			"on the same cluster, per run; ÷ Redis: the row's p50 ÷ distlock on Redis, per run.",
		variants: e1Variants(),
		cell:     withMembers(backendOpsCell(cfg, idE1, 1, 0)),
		columns: []column{
			{head: "p50 ms", key: "p50_ms", digits: 3}, {head: "p99 ms", key: "p99_ms", digits: 3}, {head: "mean ms", key: "mean_ms", digits: 3},
			{head: "allocs/op", key: "allocs_per_op", digits: 1}, {head: "B/op", key: "bytes_per_op", digits: 0},
			{head: "req/op", key: "req_per_op", digits: 1},
			{head: "client CPU µs/op", key: "cpu_us_per_op", digits: 1},
			{head: "÷ concurrency.Mutex (same cluster), p50", custom: ratioTo(idE1, "p50_ms", func(res *results, row string) string { return etcdPeerOf(res, idE1, row) })},
			{head: "÷ distlock on Redis, p50 (cost of consensus)", custom: ratioTo(idE1, "p50_ms", redis)},
		},
		verdict: func(res *results) []string {
			var out []string
			for _, n := range []int{1, 3} {
				d, m := peers.EtcdDistlock(n).Name, peers.EtcdMutex(n).Name
				out = append(out, ratioLine(fmt.Sprintf("p50 on %d member%s: distlock ÷ concurrency.Mutex", n, plural(n)),
					res.ratio(idE1, d, m, "p50_ms"), 1.05, true))
			}
			for _, n := range []int{1, 3} {
				d := peers.EtcdDistlock(n).Name
				s := res.ratio(idE1, d, vDistlock, "p50_ms")
				out = append(out, fmt.Sprintf("cost of consensus, %d member%s: distlock etcd p50 ÷ distlock Redis p50 = %s (%s ms against %s ms) → reported",
					n, plural(n), fmtSummary(s, 2), fmtSummary(summarize(res.values(idE1, d, "p50_ms")), 3),
					fmtSummary(summarize(res.values(idE1, vDistlock, "p50_ms")), 3)))
			}
			return out
		},
	}
}

// etcdVersion is the etcd server the harness runs.
const etcdVersion = "v3.7.3"

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// e3 is S3 on etcd: 16 goroutines, a Client each, one name, hold 1 ms.
func e3(cfg config) scenario {
	vs := []peers.Variant{peers.EtcdDistlock(1), peers.EtcdMutex(1), peers.EtcdDistlock(3), peers.EtcdMutex(3)}
	return scenario{
		id: idE3, title: "etcd: 16 goroutines, one name, hold 1 ms, a Client per goroutine",
		about: "S3 on etcd: each of the 16 goroutines has its own Client (distlock: its own clientv3.Client and " +
			"engine; concurrency.Mutex: its own clientv3.Client and Session), as 16 processes would; they " +
			"contend for one name: acquire (waiting), hold 1 ms, release, ask again at once. The columns are " +
			"S3's; req/acq counts gRPC requests (unary calls and stream messages) of every Client per grant. " +
			"÷ Mutex: the row's figure ÷ concurrency.Mutex's on the same cluster, per run.",
		variants: vs,
		cell: withMembers(func(ctx context.Context, e *env, v peers.Variant, run, vi int) record {
			rec := newRecord(idE3, v, run)
			counter := &peers.Counter{}
			t, _, err := e.target(ctx, v, peers.Target{Workers: s3Workers, Counter: counter})
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
				workers: s3Workers, name: fmt.Sprintf("%s-r%d-v%d", idE3, run, vi), hold: s3Hold,
				warmup: cfg.warmup, duration: cfg.contend, counter: counter,
			})
			fillContend(&rec, res)
			rec.Metrics["instances"] = s3Workers
			return rec
		}),
		columns: []column{
			{head: "acq/s", key: "acq_per_s", digits: 0},
			{head: "wait p50 ms", key: "wait_p50_ms", digits: 1}, {head: "wait p99 ms", key: "wait_p99_ms", digits: 1}, {head: "wait max ms", key: "wait_max_ms", digits: 0},
			{head: "min/g", key: "min_per_g", digits: 0}, {head: "max/g", key: "max_per_g", digits: 0}, {head: "Jain", key: "jain", digits: 3},
			{head: "gap p50 ms", key: "gap_p50_ms", digits: 2}, {head: "req/acq", key: "req_per_acq", digits: 1},
			{head: "give-ups", key: "giveups", digits: 0},
			{head: "÷ Mutex, acq/s", custom: ratioTo(idE3, "acq_per_s", func(res *results, row string) string { return etcdPeerOf(res, idE3, row) })},
			{head: "÷ Mutex, wait p99", custom: ratioTo(idE3, "wait_p99_ms", func(res *results, row string) string { return etcdPeerOf(res, idE3, row) })},
		},
		verdict: func(res *results) []string {
			var out []string
			for _, n := range []int{1, 3} {
				d, m := peers.EtcdDistlock(n).Name, peers.EtcdMutex(n).Name
				out = append(out,
					ratioLine(fmt.Sprintf("%d member%s: acq/s, distlock ÷ concurrency.Mutex", n, plural(n)), res.ratio(idE3, d, m, "acq_per_s"), 1, false),
					ratioLine(fmt.Sprintf("%d member%s: wait p99, distlock ÷ concurrency.Mutex", n, plural(n)), res.ratio(idE3, d, m, "wait_p99_ms"), 1, true))
			}
			return out
		},
	}
}

// e6TTL is the ttl of E6's locks: etcd keeps no lease shorter than 2 s.
func e6TTL(cfg config) time.Duration { return max(cfg.leaseTTL, 2*time.Second) }

// e6 holds many locks from one Client on one etcd member and measures
// what keeping them alive costs.
func e6(cfg config) scenario {
	ttl := e6TTL(cfg)
	d, m := peers.EtcdDistlock(1), peers.EtcdMutex(1)
	d.Settings = fmt.Sprintf("engine/etcd, ttl %v, renewed every %v (ttl/3) in one Extend", ttl, (ttl / 3).Round(time.Millisecond))
	m.Settings = fmt.Sprintf("one Session, TTL %v (its one lease kept alive by clientv3 every ttl/3), a Mutex per name", ttl)
	perInterval := func(key string) func(res *results, v string) string {
		return func(res *results, v string) string {
			s := summarize(res.values(idE6, v, key))
			iv := (ttl / 3).Seconds()
			s.med, s.min, s.max = s.med*iv, s.min*iv, s.max*iv
			return fmtSummary(s, 2)
		}
	}
	return scenario{
		id: idE6, title: fmt.Sprintf("etcd: %s locks held by one Client, kept alive", fmtNum(float64(cfg.leases), 0)),
		about: fmt.Sprintf("One Client on a one-member etcd cluster acquires %d names (from %d goroutines), then "+
			"only holds them for %v while its own machinery keeps them alive; the figures are over that window. "+
			"gRPC requests/s: unary calls plus messages sent on streams (a keepalive of one lease is one message); "+
			"streams/s: gRPC streams opened (lease keepalive streams, watches); per interval: × ttl/3. "+
			"client heap B/lock: live heap after GC with the locks held, minus before, per lock; etcd heap "+
			"B/lock: the member's go_memstats_heap_inuse_bytes (/metrics) with the locks held minus before "+
			"they were acquired, per lock (GC timing makes it rough).", cfg.leases, s6Acquirers, cfg.hold),
		variants: []peers.Variant{d, m},
		cell: func(ctx context.Context, e *env, v peers.Variant, run, vi int) record {
			rec := newRecord(idE6, v, run)
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
			before, herr := e.etcdHeap(ctx, 1)
			var streams0, streams1 int64
			res := runHold(ctx, lk, nil, holdConfig{
				leases: cfg.leases, acquirer: s6Acquirers, window: cfg.hold,
				prefix: fmt.Sprintf("%s-r%d-v%d-", idE6, run, vi), counter: counter,
				held: func() {
					if after, err := e.etcdHeap(ctx, 1); err == nil && herr == nil {
						rec.Metrics["etcd_heap_b_per_lock"] = (after - before) / float64(cfg.leases)
					}
					streams0 = counter.Streams()
				},
				windowEnd: func() { streams1 = counter.Streams() },
			})
			fillHold(&rec, res)
			rec.Metrics["streams_per_s"] = float64(streams1-streams0) / res.w.elapsed.Seconds()
			return rec
		},
		columns: []column{
			{head: "held", key: "held", digits: 0},
			{head: "client CPU ms/s", key: "cpu_ms_per_s", digits: 1},
			{head: "gRPC requests/s", key: "requests_per_s", digits: 0},
			{head: "requests per interval", custom: perInterval("requests_per_s")},
			{head: "streams/s", key: "streams_per_s", digits: 2},
			{head: "streams per interval", custom: perInterval("streams_per_s")},
			{head: "client heap B/lock", key: "heap_b_per_lease", digits: 0},
			{head: "etcd heap B/lock", key: "etcd_heap_b_per_lock", digits: 0},
			{head: "goroutines/lock", key: "goroutines_per_lease", digits: 3},
			{head: "acquire all s", key: "acquire_s", digits: 2},
			{head: "lost", key: "lost", digits: 0},
		},
		verdict: func(res *results) []string {
			req := summarize(res.values(idE6, d.Name, "requests_per_s"))
			if math.IsNaN(req.med) {
				return []string{"distlock not measured in this run"}
			}
			st := summarize(res.values(idE6, d.Name, "streams_per_s"))
			per := st.med * (ttl / 3).Seconds()
			return []string{
				fmt.Sprintf("keepalive traffic: distlock %s gRPC requests/s for %s locks (concurrency.Mutex %s/s: one lease for all) → reported",
					fmtSummary(req, 0), fmtNum(float64(cfg.leases), 0), fmtSummary(summarize(res.values(idE6, m.Name, "requests_per_s")), 1)),
				fmt.Sprintf("memory per lock: client %s B, etcd %s B (concurrency.Mutex: client %s B, etcd %s B) → reported",
					fmtSummary(summarize(res.values(idE6, d.Name, "heap_b_per_lease")), 0), fmtSummary(summarize(res.values(idE6, d.Name, "etcd_heap_b_per_lock")), 0),
					fmtSummary(summarize(res.values(idE6, m.Name, "heap_b_per_lease")), 0), fmtSummary(summarize(res.values(idE6, m.Name, "etcd_heap_b_per_lock")), 0)),
				fmt.Sprintf("one keepalive stream per tick, not one per lock: %s streams opened per renewal interval (≤ 1.5 counts as met) → %s",
					fmtNum(per, 2), met(per <= 1.5)),
			}
		},
	}
}

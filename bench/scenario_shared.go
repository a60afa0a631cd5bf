package main

import (
	"context"
	"fmt"
	"math"

	"github.com/distlock/distlock/bench/peers"
)

// The shared-lock scenarios (issue 15), on the single redis-server:
// S9-uncontended (a permit, a read lock and a write lock against the
// mutex, uncontended), S9 (a semaphore of limit 8, 64 goroutines on their
// own Clients) and S10 (an RW lock, 90% reads, 16 goroutines on their own
// Clients).
const (
	idS9      = "S9"
	idS9Unc   = "S9-uncontended"
	idS10     = "S10"
	s9Limit   = 8
	s9Workers = 64
	s10Work   = 16
	s10Writes = 0.1
)

var (
	vSem    = peers.DistlockSemaphore(s9Limit).Name
	vRW     = peers.DistlockRWMutex(false).Name
	vRWRead = peers.DistlockRWMutex(true).Name
)

// handOff is one hand-off for the shared-lock targets: one round trip, the
// two-PING floor's p50 / 2 from S1 when S1 ran, else the mutex's
// uncontended acquire+release p50 / 2 from S9-uncontended (an upper bound:
// two scripts); the string says which.
func handOff(res *results) (float64, string) {
	if v := res.median("S1", vPingGoRed, "p50_ms"); !math.IsNaN(v) {
		return v / 2, "the two-PING floor's p50 / 2 from S1"
	}
	if v := res.median(idS9Unc, vDistlock, "p50_ms"); !math.IsNaN(v) {
		return v / 2, "the mutex's acquire+release p50 / 2 from S9-uncontended"
	}
	return math.NaN(), ""
}

func s9Uncontended(cfg config) scenario {
	toMutex := func(*results, string) string { return vDistlock }
	return scenario{
		id: idS9Unc, title: "shared locks uncontended: a permit, a read lock, a write lock vs the mutex, 1 goroutine",
		about: "S1 for shared locks: one goroutine acquires and releases one name in a loop, as a mutex " +
			"(Client.Acquire: S1's distlock row), as a permit of a Semaphore of limit 8, as RWMutex.RLock and " +
			"as RWMutex.Lock, on the single redis-server. ÷ mutex: the row's p50 ÷ the mutex's from the same run.",
		variants: []peers.Variant{peers.Distlock(), peers.DistlockSemaphore(s9Limit), peers.DistlockRWMutex(true), peers.DistlockRWMutex(false)},
		cell:     opsCell(cfg, idS9Unc, 1, false),
		columns: []column{
			{head: "p50 ms", key: "p50_ms", digits: 3}, {head: "p99 ms", key: "p99_ms", digits: 3}, {head: "mean ms", key: "mean_ms", digits: 3},
			{head: "allocs/op", key: "allocs_per_op", digits: 1}, {head: "B/op", key: "bytes_per_op", digits: 0},
			{head: "Redis cmds/op", key: "srv_cmds_per_op", digits: 1}, {head: "Redis CPU µs/op", key: "srv_cpu_us_per_op", digits: 1},
			{head: "client CPU µs/op", key: "cpu_us_per_op", digits: 1},
			{head: "÷ mutex, p50", custom: ratioTo(idS9Unc, "p50_ms", toMutex)},
		},
		verdict: func(res *results) []string {
			return []string{
				ratioLine("uncontended permit acquire+release p50 ÷ the mutex's (S1) p50", res.ratio(idS9Unc, vSem, vDistlock, "p50_ms"), 1.1, true),
				fmt.Sprintf("read lock ÷ mutex: %s, write lock ÷ mutex: %s → reported",
					fmtSummary(res.ratio(idS9Unc, vRWRead, vDistlock, "p50_ms"), 2), fmtSummary(res.ratio(idS9Unc, vRW, vDistlock, "p50_ms"), 2)),
			}
		},
	}
}

// sharedCell measures a shared-lock row with a Client per goroutine.
func sharedCell(cfg config, id string, sc sharedConfig) func(context.Context, *env, peers.Variant, int, int) record {
	return func(ctx context.Context, e *env, v peers.Variant, run, vi int) record {
		rec := newRecord(id, v, run)
		counter := &peers.Counter{}
		nodes := []*node{e.single}
		lk, closeFn, err := buildN(v, peers.Target{Addrs: addrs(nodes), Workers: sc.workers, Counter: counter}, sc.workers)
		if err != nil {
			rec.Error = err.Error()
			return rec
		}
		defer closeFn()
		c := sc
		c.name, c.warmup, c.duration, c.counter = fmt.Sprintf("%s-r%d-v%d", id, run, vi), cfg.warmup, cfg.contend, counter
		fillShared(&rec, runShared(ctx, lk, nodes, c))
		return rec
	}
}

func s9(cfg config) scenario {
	return scenario{
		id: idS9, title: "semaphore of limit 8, 64 goroutines, a Client each, hold 1 ms",
		about: "64 goroutines, each with its own Client and go-redis client (as 64 processes), take a permit " +
			"of one Semaphore of limit 8, hold it 1 ms (time.Sleep), release it and ask again at once. wait: " +
			"from the Acquire call to the grant (waits going on at the end of the window count). max holders: " +
			"the most permits held at once that the harness saw (never above 8); violations: grants beyond the " +
			"limit (must be 0). req/acq: commands the Clients sent per grant (go-redis hooks; pub/sub " +
			"connections not hooked); Redis cmds/acq: " + srvCmdsAbout + ".",
		variants: []peers.Variant{peers.DistlockSemaphore(s9Limit)},
		cell:     sharedCell(cfg, idS9, sharedConfig{workers: s9Workers, limit: s9Limit, hold: s3Hold}),
		columns: []column{
			{head: "acq/s", key: "acq_per_s", digits: 0},
			{head: "wait p50 ms", key: "wait_p50_ms", digits: 1}, {head: "wait p99 ms", key: "wait_p99_ms", digits: 1}, {head: "wait max ms", key: "wait_max_ms", digits: 0},
			{head: "min/g", key: "min_per_g", digits: 0}, {head: "max/g", key: "max_per_g", digits: 0}, {head: "Jain", key: "jain", digits: 3},
			{head: "hold ms", key: "hold_ms", digits: 3}, {head: "max holders", key: "max_holders", digits: 0}, {head: "violations", key: "violations", digits: 0},
			{head: "req/acq", key: "req_per_acq", digits: 1},
			{head: "Redis cmds/acq", key: "srv_cmds_per_acq", digits: 1}, {head: "of which pub/sub", key: "srv_pubsub_per_acq", digits: 2},
			{head: "Redis CPU µs/acq", key: "srv_cpu_us_per_acq", digits: 1},
			{head: "give-ups", key: "giveups", digits: 0},
		},
		verdict: func(res *results) []string {
			acq := summarize(res.values(idS9, vSem, "acq_per_s"))
			if math.IsNaN(acq.med) {
				return []string{"not measured in this run"}
			}
			hold := res.median(idS9, vSem, "hold_ms")
			ho, what := handOff(res)
			out := []string{}
			if !math.IsNaN(ho) {
				bound := 0.9 * s9Limit * 1000 / (hold + ho)
				out = append(out, fmt.Sprintf("throughput ≥ 0.9 × 8/(hold + one hand-off) = 0.9 × 8/(%.3f ms measured hold + %.3f ms, %s) = %s/s: %s/s → %s",
					hold, ho, what, fmtNum(bound, 0), fmtSummary(acq, 0), met(acq.med >= bound)))
			}
			return append(out,
				fmt.Sprintf("p99 wait %s ms, Jain %s, Redis commands per acquisition %s (client requests %s) → reported; never above the limit: max holders %s, violations %s",
					fmtSummary(summarize(res.values(idS9, vSem, "wait_p99_ms")), 1), fmtSummary(summarize(res.values(idS9, vSem, "jain")), 3),
					fmtSummary(summarize(res.values(idS9, vSem, "srv_cmds_per_acq")), 1), fmtSummary(summarize(res.values(idS9, vSem, "req_per_acq")), 1),
					fmtSummary(summarize(res.values(idS9, vSem, "max_holders")), 0), fmtSummary(summarize(res.values(idS9, vSem, "violations")), 0)))
		},
	}
}

func s10(cfg config) scenario {
	return scenario{
		id: idS10, title: "RW lock, 90% reads, 16 goroutines, a Client each, hold 1 ms",
		about: "16 goroutines, each with its own Client and go-redis client, take one RWMutex: each " +
			"acquisition is a write (Lock) with probability 0.1, else a read (RLock); hold 1 ms, release, ask " +
			"again at once. Waits from the call to the grant, by kind (waits going on at the end count). read " +
			"hold max: the longest read hold, from the grant to the end of the release call. write wait beyond " +
			"the writers: each write's wait less the time other writers held the lock during it (the writers " +
			"counted as the queue they form), the longest, and how many writers it took out. violations: a " +
			"writer granted with anyone holding, or a reader with a writer (must be 0).",
		variants: []peers.Variant{peers.DistlockRWMutex(false)},
		cell:     sharedCell(cfg, idS10, sharedConfig{workers: s10Work, writes: s10Writes, hold: s3Hold}),
		columns: []column{
			{head: "reads/s", key: "reads_per_s", digits: 0}, {head: "writes/s", key: "writes_per_s", digits: 0},
			{head: "read wait p50 ms", key: "read_wait_p50_ms", digits: 2}, {head: "read wait p99 ms", key: "read_wait_p99_ms", digits: 1},
			{head: "write wait p50 ms", key: "write_wait_p50_ms", digits: 2}, {head: "write wait p99 ms", key: "write_wait_p99_ms", digits: 1},
			{head: "write wait max ms", key: "write_wait_max_ms", digits: 1},
			{head: "write wait beyond the writers, max ms", key: "write_wait_beyond_max_ms", digits: 1}, {head: "writers ahead", key: "writers_ahead", digits: 0},
			{head: "read hold max ms", key: "read_hold_max_ms", digits: 2},
			{head: "max holders", key: "max_holders", digits: 0}, {head: "Jain", key: "jain", digits: 3}, {head: "violations", key: "violations", digits: 0},
			{head: "req/acq", key: "req_per_acq", digits: 1}, {head: "Redis cmds/acq", key: "srv_cmds_per_acq", digits: 1},
			{head: "give-ups", key: "giveups", digits: 0},
		},
		verdict: func(res *results) []string {
			wmax := summarize(res.values(idS10, vRW, "write_wait_max_ms"))
			if math.IsNaN(wmax.med) {
				return []string{"not measured in this run"}
			}
			rh := res.median(idS10, vRW, "read_hold_max_ms")
			ho, what := handOff(res)
			out := []string{}
			if !math.IsNaN(ho) {
				bound := 2*rh + ho
				out = append(out, fmt.Sprintf("max writer wait ≤ 2 × longest read hold + one hand-off = 2 × %.2f ms + %.3f ms (%s) = %.2f ms: %s ms → %s",
					rh, ho, what, bound, fmtSummary(wmax, 1), met(wmax.med <= bound)))
				// The target counts several writers as the queue they form:
				// the time other writers held the lock during a write's wait
				// is theirs, and each of them costs one hand-off more.
				beyond := summarize(res.values(idS10, vRW, "write_wait_beyond_max_ms"))
				ahead := res.median(idS10, vRW, "writers_ahead")
				if !math.IsNaN(beyond.med) {
					qbound := 2*rh + (1+ahead)*ho
					out = append(out, fmt.Sprintf("with the writers counted as the queue they form: longest wait beyond the writers' holds ≤ 2 × %.2f ms + (1 + %.0f writers) × %.3f ms = %.2f ms: %s ms → %s",
						rh, ahead, ho, qbound, fmtSummary(beyond, 1), met(beyond.med <= qbound)))
				}
			}
			return append(out, fmt.Sprintf("reads/s %s, writes/s %s, read wait p99 %s ms, write wait p99 %s ms → reported",
				fmtSummary(summarize(res.values(idS10, vRW, "reads_per_s")), 0), fmtSummary(summarize(res.values(idS10, vRW, "writes_per_s")), 0),
				fmtSummary(summarize(res.values(idS10, vRW, "read_wait_p99_ms")), 1), fmtSummary(summarize(res.values(idS10, vRW, "write_wait_p99_ms")), 1)))
		},
	}
}

package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/distlock/distlock/bench/peers"
)

// S8: leader election (issue 18) on the single node, distlock only (no
// other library here has an election, and there is no etcd engine in the
// harness to compare with etcd's concurrency.Election).
const (
	idS8       = "S8"
	vFailover  = "distlock: failover, leader SIGKILLed"
	vResign    = "distlock: Resign"
	vProclaim  = "distlock: Proclaim, 16 observers"
	vNewLeader = "distlock: new leader, 16 observers"
	s8Obs      = 16
	// The targets of issue 18 (p99): failover ttl + 50 ms, the others
	// 5 ms.
	s8FailoverSlack = 50 * time.Millisecond
	s8Target        = 5 * time.Millisecond
)

func s8(cfg config) scenario {
	mk := func(name, settings string) peers.Variant {
		return peers.Variant{Name: name, Lib: "distlock", Kind: peers.Subject, Settings: settings}
	}
	changes := cfg.electChanges
	return scenario{
		id: idS8, title: "leader election: failover, Resign, observers",
		about: fmt.Sprintf("Every campaigner and observer is its own Client with its own go-redis client (as separate "+
			"processes would have them), on the single node; default policy. **Failover**: a leader process (this "+
			"binary started again: Campaign with ttl %v, then it leads and renews) is SIGKILLed while two campaigners "+
			"wait, at a random point of its renewal cycle (100 ms after they started, plus 0 to ttl/3); one sample is "+
			"the time from the kill to the first campaigner's Campaign returning, %d per run; *after expiry* is that "+
			"minus the dead leader's key time to live read (PTTL) right after the kill. The winner then resigns and "+
			"a new leader process is started. **Resign**: three campaigners (default ttl 30 s); %d times, %v after the "+
			"last election, the leader calls Resign; one sample is the time from the start of Resign to the next "+
			"leader's Campaign returning (a campaigner that resigned campaigns again 5 ms later, so the next leader "+
			"is one that was waiting). **Observers**: the same three campaigners plus %d observers (Observe); %d "+
			"times, %v after every observer saw the last change, the leader proclaims a new value (Proclaim) or "+
			"resigns (the next campaigner is elected: a new term); one sample is the time from the start of the "+
			"Proclaim or Resign call to the moment the **last** of the %d observers received the new state; *each "+
			"observer* gives the time to every observer. p99 is the nearest rank (of %d samples: the %s largest).",
			cfg.electTTL, cfg.failovers, changes, cfg.electSettle, s8Obs, changes, cfg.electSettle, s8Obs,
			changes, nthLargest(changes)),
		variants: []peers.Variant{
			mk(vFailover, fmt.Sprintf("ttl %v; 2 campaigners; leader in its own process", cfg.electTTL)),
			mk(vResign, "3 campaigners; ttl 30s"),
			mk(vProclaim, fmt.Sprintf("3 campaigners, %d observers", s8Obs)),
			mk(vNewLeader, fmt.Sprintf("3 campaigners, %d observers", s8Obs)),
		},
		cell: func(ctx context.Context, e *env, v peers.Variant, run, vi int) record {
			rec := newRecord(idS8, v, run)
			name := fmt.Sprintf("S8-r%d-v%d", run, vi)
			limit := 10 * time.Second
			var res electResult
			target := s8Target
			switch v.Name {
			case vFailover:
				target = cfg.electTTL + s8FailoverSlack
				res = measureFailover(ctx, e.single.admin, e.single.addr, name, cfg.electTTL, cfg.failovers)
			case vResign:
				res = measureResign(ctx, e.single.addr, name, changes, cfg.electSettle, limit)
			case vProclaim, vNewLeader:
				res = measureObserved(ctx, e.single.addr, name, s8Obs, changes, v.Name == vProclaim, cfg.electSettle, limit)
			}
			fillElect(&rec, res, target)
			return rec
		},
		columns: []column{
			{head: "samples", key: "samples", digits: 0},
			{head: "p50 ms", key: "p50_ms", digits: 2},
			{head: "p99 ms", key: "p99_ms", digits: 2},
			{head: "max ms", key: "max_ms", digits: 2},
			{head: "target p99 ms", key: "target_ms", digits: 0},
			{head: "after expiry p50 / p99 ms", custom: func(res *results, v string) string {
				return pair(res, v, "after_expiry_p50_ms", "after_expiry_p99_ms")
			}},
			{head: "each observer p50 / p99 ms", custom: func(res *results, v string) string {
				return pair(res, v, "each_p50_ms", "each_p99_ms")
			}},
			{head: "errors", key: "errors", digits: 0},
		},
		verdict: func(res *results) []string {
			var out []string
			for _, c := range []struct{ v, what string }{
				{vFailover, "failover after the leader is SIGKILLed, to the new leader elected"},
				{vResign, "graceful Resign, to the new leader elected"},
				{vProclaim, fmt.Sprintf("a Proclaim, to every one of %d observers notified", s8Obs)},
				{vNewLeader, fmt.Sprintf("a new leader (Resign), to every one of %d observers notified", s8Obs)},
			} {
				p99 := summarize(res.values(idS8, c.v, "p99_ms"))
				tgt := res.median(idS8, c.v, "target_ms")
				if math.IsNaN(p99.med) {
					out = append(out, c.what+": not measured in this run")
					continue
				}
				worst := p99.max
				out = append(out, fmt.Sprintf("%s: p99 %s ms (target ≤ %s ms) → %s", c.what, fmtSummary(p99, 2),
					fmtNum(tgt, 0), metRuns(p99.med <= tgt, worst <= tgt)))
			}
			return out
		},
	}
}

// metRuns renders a verdict on the median over runs, noting a run that
// missed.
func metRuns(median, every bool) string {
	switch {
	case median && every:
		return met(true)
	case median:
		return met(true) + " (not in every run)"
	}
	return met(false)
}

// pair renders two figures of a row as "a / b", or "-" when absent.
func pair(res *results, v, a, b string) string {
	sa, sb := summarize(res.values(idS8, v, a)), summarize(res.values(idS8, v, b))
	if math.IsNaN(sa.med) {
		return "-"
	}
	return fmtSummary(sa, 2) + " / " + fmtSummary(sb, 2)
}

// nthLargest says which sample the nearest-rank p99 of n samples is.
func nthLargest(n int) string {
	k := n - int(math.Ceil(0.99*float64(n))) + 1
	switch k {
	case 1:
		return "1st"
	case 2:
		return "2nd"
	case 3:
		return "3rd"
	}
	return fmt.Sprintf("%dth", k)
}

// fillElect turns an electResult into a record's figures.
func fillElect(rec *record, res electResult, target time.Duration) {
	m := rec.Metrics
	if res.firstErr != nil {
		rec.Error = res.firstErr.Error()
	}
	m["errors"] = float64(res.errs)
	m["target_ms"] = ms(target)
	m["samples"] = float64(len(res.lat))
	if len(res.lat) == 0 {
		return
	}
	s := slices.Clone(res.lat)
	slices.Sort(s)
	m["p50_ms"] = ms(percentile(s, 50))
	m["p99_ms"] = ms(percentile(s, 99))
	m["max_ms"] = ms(percentile(s, 100))
	m["mean_ms"] = ms(mean(s))
	if len(res.afterExpiry) > 0 {
		a := slices.Clone(res.afterExpiry)
		slices.Sort(a)
		m["after_expiry_p50_ms"] = ms(percentile(a, 50))
		m["after_expiry_p99_ms"] = ms(percentile(a, 99))
	}
	if len(res.each) > 0 {
		a := slices.Clone(res.each)
		slices.Sort(a)
		m["each_p50_ms"] = ms(percentile(a, 50))
		m["each_p99_ms"] = ms(percentile(a, 99))
	}
}

package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/distlock/distlock/bench/peers"
)

// config holds the durations of a harness run.
type config struct {
	runs     int           // runs per cell, interleaved across libraries
	warmup   time.Duration // unmeasured operations before each window
	cell     time.Duration // measured window of S1, S2, S4, S5
	contend  time.Duration // measured window of S3
	hold     time.Duration // measured window of S6
	leases   int           // leases held in S6
	leaseTTL time.Duration // ttl of the leases held in S6
	// S7: waitClients instances × waitPerClient goroutines wait for one
	// name; nobody releases for waitWindow, then handoffs hand-offs.
	waitClients, waitPerClient int
	waitWindow                 time.Duration
	handoffs                   int
	// S8: the failover leader's ttl and the failovers per run; the
	// Resigns and observed changes per run, and the pause before each.
	electTTL     time.Duration
	failovers    int
	electChanges int
	electSettle  time.Duration
	hangLimit    time.Duration // an operation longer than this ends an S5 cell
	// stallLimit: an operation longer than this ends any other cell of
	// operations (an uncontended acquire+release normally takes < 1 ms).
	stallLimit time.Duration
	quick      bool   // smoke test: fewer rows, tiny windows
	rows       string // -rows: substrings of the row names to keep
}

// fullConfig is what bench/run uses: about 8 minutes on a 2-CPU machine.
func fullConfig() config {
	return config{
		runs: 3, warmup: 300 * time.Millisecond, cell: 2500 * time.Millisecond,
		contend: 3500 * time.Millisecond, hold: 12 * time.Second, leases: 10000,
		leaseTTL: 6 * time.Second, hangLimit: 2 * time.Second, stallLimit: 5 * time.Second,
		waitClients: 50, waitPerClient: 20, waitWindow: 3 * time.Second, handoffs: 100,
		electTTL: time.Second, failovers: 20, electChanges: 200, electSettle: 20 * time.Millisecond,
	}
}

// quickConfig is the smoke test run by go test and by CI: it proves that
// every adapter and scenario works, not how fast anything is.
func quickConfig() config {
	return config{
		runs: 1, warmup: 50 * time.Millisecond, cell: 200 * time.Millisecond,
		contend: 400 * time.Millisecond, hold: 1200 * time.Millisecond, leases: 200,
		leaseTTL: 600 * time.Millisecond, hangLimit: 500 * time.Millisecond, stallLimit: 2 * time.Second,
		waitClients: 50, waitPerClient: 20, waitWindow: 300 * time.Millisecond, handoffs: 10,
		electTTL: 300 * time.Millisecond, failovers: 2, electChanges: 10, electSettle: 10 * time.Millisecond,
		quick: true,
	}
}

// scenario is one table.
type scenario struct {
	id, title string
	about     string // what is measured, for the report
	variants  []peers.Variant
	// cell measures variant v once (run is 1-based; vi is v's index).
	cell    func(ctx context.Context, e *env, v peers.Variant, run, vi int) record
	columns []column
	ratios  []ratioCol
	// verdict returns the target lines, from this and earlier scenarios.
	verdict func(res *results) []string
}

// column is a figure of a table: the median over the runs, and the range.
type column struct {
	head   string
	key    string
	digits int
	// custom, when set, renders the cell instead of key's summary.
	custom func(res *results, variant string) string
}

// ratioCol is the per-run ratio ref/row of one figure, summarized over runs.
type ratioCol struct {
	head string
	ref  string // the distlock variant in the numerator
	key  string
}

// record is one measured cell; it is written as one JSON line.
type record struct {
	Scenario string             `json:"scenario"`
	Variant  string             `json:"variant"`
	Lib      string             `json:"lib"`
	Kind     string             `json:"kind"`
	Settings string             `json:"settings"`
	Run      int                `json:"run"`
	Start    time.Time          `json:"start"`
	Metrics  map[string]float64 `json:"metrics"`
	Commands map[string]int64   `json:"server_commands,omitempty"`
	// Requests are the etcd clients' requests in the window by gRPC method.
	Requests map[string]int64 `json:"client_requests,omitempty"`
	Hung     bool             `json:"hung,omitempty"`
	Error    string           `json:"error,omitempty"`
}

func newRecord(id string, v peers.Variant, run int) record {
	return record{Scenario: id, Variant: v.Name, Lib: v.Lib, Kind: string(v.Kind),
		Settings: v.Settings, Run: run, Start: time.Now().UTC(), Metrics: map[string]float64{}}
}

// results holds every record of a harness run, by scenario and variant.
type results struct {
	byScenario map[string]map[string][]record
	order      map[string][]string // variant names in table order
}

func newResults() *results {
	return &results{byScenario: map[string]map[string][]record{}, order: map[string][]string{}}
}

func (r *results) add(rec record) {
	m := r.byScenario[rec.Scenario]
	if m == nil {
		m = map[string][]record{}
		r.byScenario[rec.Scenario] = m
	}
	if _, ok := m[rec.Variant]; !ok {
		r.order[rec.Scenario] = append(r.order[rec.Scenario], rec.Variant)
	}
	m[rec.Variant] = append(m[rec.Variant], rec)
}

// get returns the records of one variant of one scenario, by run.
func (r *results) get(scenario, variant string) []record {
	return r.byScenario[scenario][variant]
}

// runScenario measures every variant runs times, interleaved run by run
// (A B C A B C ...), each cell on freshly flushed servers with a new
// Locker, and reports each record to emit.
func runScenario(ctx context.Context, e *env, cfg config, sc scenario, emit func(record)) {
	for run := 1; run <= cfg.runs; run++ {
		for vi, v := range sc.variants {
			if ctx.Err() != nil {
				return
			}
			if err := e.flushAll(ctx); err != nil {
				fmt.Fprintf(os.Stderr, "flush: %v\n", err)
			}
			rec := sc.cell(ctx, e, v, run, vi)
			fmt.Fprintf(os.Stderr, "%s run %d/%d %-40s %s\n", sc.id, run, cfg.runs, v.Name, brief(rec))
			emit(rec)
		}
	}
}

// brief is a one-line progress summary of a record.
func brief(r record) string {
	switch {
	case r.Error != "" && r.Hung:
		return "hangs: " + r.Error
	case r.Hung:
		return "hangs"
	case r.Error != "" && len(r.Metrics) == 0:
		return "error: " + r.Error
	}
	s := ""
	for _, k := range []string{"p50_ms", "ops_per_s", "acq_per_s", "wait_p99_ms", "jain", "cpu_ms_per_s", "heap_b_per_lease",
		"heap_inuse_b_per_waiter", "redis_b_per_waiter", "srv_cmds_per_s", "handoff_p50_ms", "handoff_p99_ms", "errors"} {
		if v, ok := r.Metrics[k]; ok {
			s += fmt.Sprintf("%s=%.4g ", k, v)
		}
	}
	if r.Error != "" {
		s += "(first error: " + r.Error + ")"
	}
	return s
}

// build makes the Locker of a cell, and a function that closes it without
// letting a stuck Close stall the whole run.
func build(v peers.Variant, t peers.Target) (peers.Locker, func(), error) {
	return buildN(v, t, 1)
}

// buildN is build with n independent instances of v (peers.Separate), one
// per worker as n processes would have them, when n > 1.
func buildN(v peers.Variant, t peers.Target, n int) (peers.Locker, func(), error) {
	var lk peers.Locker
	var err error
	if n > 1 {
		lk, err = peers.Separate(v, t, n)
	} else {
		lk, err = v.New(t)
	}
	if err != nil {
		return nil, nil, err
	}
	closeFn := func() {
		done := make(chan struct{})
		go func() { _ = lk.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			fmt.Fprintf(os.Stderr, "%s: Close still running after 20s; going on\n", v.Name)
		}
	}
	return lk, closeFn, nil
}

// scenarios returns the scenarios in order.
func scenarios(cfg config) []scenario {
	return []scenario{s1(cfg), s2(cfg), s3(cfg, true), s3(cfg, false), s4(cfg), s5(cfg), s6(cfg), s7(cfg), s8(cfg), e1(cfg), e3(cfg), e6(cfg), p1(cfg), p3(cfg), p6(cfg), s9Uncontended(cfg), s9(cfg), s10(cfg)}
}

// pick keeps the variants whose names are listed, in the listed order.
func pick(vs []peers.Variant, names ...string) []peers.Variant {
	var out []peers.Variant
	for _, n := range names {
		for _, v := range vs {
			if v.Name == n {
				out = append(out, v)
			}
		}
	}
	return out
}

// Command bench measures distlock side by side with its peers (redsync,
// bsm/redislock, rueidislock) and the round-trip floors, on real
// redis-server processes, through one driver.
//
// Use bench/run, which starts pinned redis-servers on free loopback ports
// and stops them at the end; run by hand (go run .) the harness starts its
// own, unpinned. Every cell is measured -runs times, libraries interleaved
// run by run; each scenario prints one Markdown table with the median and
// the min–max over the runs, and the ratio of distlock to each row taken
// from the same run. Raw records go to -out as JSON lines, the tables next
// to them. See docs/BENCHMARKS.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/distlock/distlock/bench/peers"
)

func main() {
	if os.Getenv(leaderEnv) != "" {
		os.Exit(leaderChild()) // S8's failover leader
	}
	var (
		single   = flag.String("redis", "", "address of the single-node redis-server (default: start one)")
		nodes    = flag.String("nodes", "", "comma-separated addresses of the five Redlock nodes (default: start them)")
		quick    = flag.Bool("quick", false, "smoke test: one short run of fewer rows")
		runs     = flag.Int("runs", 0, "runs per cell (default 3; quick 1)")
		cell     = flag.Duration("cell", 0, "measured window of S1, S2, S4, S5")
		contend  = flag.Duration("contend", 0, "measured window of S3")
		hold     = flag.Duration("hold", 0, "measured window of S6")
		leases   = flag.Int("leases", 0, "leases held in S6")
		waitWin  = flag.Duration("waitwindow", 0, "measured window of S7 in which nobody releases")
		handoffs = flag.Int("handoffs", 0, "hand-offs measured in S7")
		failover = flag.Int("failovers", 0, "leader kills measured in S8, per run")
		changes  = flag.Int("changes", 0, "Resigns and observed changes measured in S8, per row and run")
		only     = flag.String("only", "", "comma-separated scenarios to run, e.g. S1,S3 (default: all)")
		rows     = flag.String("rows", "", "comma-separated substrings: keep only the rows whose name contains one (default: all)")
		out      = flag.String("out", "results", "directory for the JSON lines and the tables")
		command  = flag.String("command", "", "the command line to print in the report (bench/run passes its own)")
		pinning  = flag.String("pinning", "not pinned", "how processes are pinned to CPUs (bench/run describes it)")
		loadWait = flag.Duration("settle", 0, "pause before starting, to let the machine settle")
		srvCPU   = flag.Int("servercpu", -1, "pin the etcd members and PostgreSQL the harness starts to this CPU (bench/run: the redis-servers' CPU)")
	)
	flag.Parse()
	serverCPU = *srvCPU

	cfg := fullConfig()
	if *quick {
		cfg = quickConfig()
	}
	if *runs > 0 {
		cfg.runs = *runs
	}
	for _, o := range []struct {
		flag *time.Duration
		dst  *time.Duration
	}{{cell, &cfg.cell}, {contend, &cfg.contend}, {hold, &cfg.hold}, {waitWin, &cfg.waitWindow}} {
		if *o.flag > 0 {
			*o.dst = *o.flag
		}
	}
	if *leases > 0 {
		cfg.leases = *leases
	}
	if *handoffs > 0 {
		cfg.handoffs = *handoffs
	}
	if *failover > 0 {
		cfg.failovers = *failover
	}
	if *changes > 0 {
		cfg.electChanges = *changes
	}
	cmdline := *command
	if cmdline == "" {
		cmdline = strings.Join(os.Args, " ")
	}
	var quorumAddrs []string
	if *nodes != "" {
		quorumAddrs = strings.Split(*nodes, ",")
	}
	cfg.rows = *rows
	if err := run(cfg, *single, quorumAddrs, *only, *out, cmdline, *pinning, *loadWait); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// run sets up the servers, runs the selected scenarios and writes the
// results.
func run(cfg config, single string, quorumAddrs []string, only, outDir, command, pinning string, settle time.Duration) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := newEnv(ctx, single, quorumAddrs)
	if err != nil {
		return err
	}
	defer e.close()

	// On SIGINT/SIGTERM: let paused servers go, stop the servers we
	// started, and leave.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		if _, ok := <-sigs; ok {
			e.resumeAll()
			_ = e.close()
			os.Exit(130)
		}
	}()

	if settle > 0 {
		time.Sleep(settle)
	}
	r, err := newReport(outDir)
	if err != nil {
		return err
	}
	defer r.close()
	fmt.Fprintf(os.Stderr, "writing %s and %s\n", r.jsonPath, r.mdPath)
	hangDump = r.dumpStacks

	m := describeMachine(ctx, e)
	start, loadStart := time.Now().UTC(), loadAvg()
	res, err := runAll(ctx, e, cfg, only, func(rec record) { r.emit(rec) }, func(sc scenario, res *results) {
		fmt.Println(table(sc, res))
	})
	if err != nil {
		return err
	}
	doc := "## Results\n\n" + m.header(start.Format("2006-01-02 15:04 UTC"), command, pinning, loadStart, loadAvg(), cfg) + "\n"
	for _, sc := range selected(cfg, only) {
		doc += table(sc, res)
	}
	return r.writeTables(doc)
}

// selected returns the scenarios that only names (all when empty).
func selected(cfg config, only string) []scenario {
	var out []scenario
	for _, sc := range scenarios(cfg) {
		if only == "" || selects(only, sc.id) {
			if cfg.rows != "" {
				var keep []peers.Variant
				for _, v := range sc.variants {
					for _, r := range strings.Split(cfg.rows, ",") {
						if r != "" && strings.Contains(v.Name, r) {
							keep = append(keep, v)
							break
						}
					}
				}
				sc.variants = keep
			}
			out = append(out, sc)
		}
	}
	return out
}

// selects reports whether the -only list names the scenario id, or its
// group: "S3" selects S3 and S3-shared, "S3-shared" only the latter.
func selects(only, id string) bool {
	group, _, _ := strings.Cut(id, "-")
	for _, tok := range strings.Split(only, ",") {
		tok = strings.TrimSpace(tok)
		if strings.EqualFold(tok, id) || strings.EqualFold(tok, group) {
			return true
		}
	}
	return false
}

// runAll runs the selected scenarios in order, reporting every record to
// emit and every finished scenario to done.
func runAll(ctx context.Context, e *env, cfg config, only string, emit func(record), done func(scenario, *results)) (*results, error) {
	res := newResults()
	scs := selected(cfg, only)
	if len(scs) == 0 {
		return nil, fmt.Errorf("-only %q selects no scenario", only)
	}
	for _, sc := range scs {
		runScenario(ctx, e, cfg, sc, func(rec record) {
			res.add(rec)
			emit(rec)
		})
		if done != nil {
			done(sc, res)
		}
	}
	return res, ctx.Err()
}

// report writes the raw records as JSON lines and the tables as Markdown.
type report struct {
	jsonPath, mdPath string
	f                *os.File
	enc              *json.Encoder
}

func newReport(dir string) (*report, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	stamp := time.Now().UTC().Format("20060102-150405")
	r := &report{
		jsonPath: filepath.Join(dir, stamp+".jsonl"),
		mdPath:   filepath.Join(dir, stamp+".md"),
	}
	f, err := os.Create(r.jsonPath)
	if err != nil {
		return nil, err
	}
	r.f, r.enc = f, json.NewEncoder(f)
	return r, nil
}

func (r *report) emit(rec record) {
	for k, v := range rec.Metrics {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			delete(rec.Metrics, k) // JSON has no NaN
		}
	}
	if err := r.enc.Encode(rec); err != nil {
		fmt.Fprintln(os.Stderr, "bench: write record:", err)
	}
}

func (r *report) writeTables(doc string) error {
	return os.WriteFile(r.mdPath, []byte(doc), 0o644)
}

func (r *report) close() { _ = r.f.Close() }

// dumpStacks writes every goroutine's stack next to the results, as
// evidence of where a hung library waits.
func (r *report) dumpStacks(what string) {
	name := strings.TrimSuffix(r.jsonPath, ".jsonl") + "-hang-" + slug(what) + ".txt"
	f, err := os.Create(name)
	if err != nil {
		return
	}
	defer f.Close()
	_ = pprof.Lookup("goroutine").WriteTo(f, 2)
	fmt.Fprintln(os.Stderr, "stacks of the hung cell:", name)
}

// slug makes s safe as a file name.
func slug(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '_'
	}, s)
}

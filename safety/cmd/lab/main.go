// Command lab runs distlock's safety lab: real redis-server processes, a
// fault proxy on every link, clients as goroutines and processes, one fault
// class at a time, and a check of the recorded history.
//
//	go run ./cmd/lab -quick             # the CI suite (about a minute)
//	go run ./cmd/lab -full -seed 1      # every scenario, about 30 minutes
//	go run ./cmd/lab -run 8 -mode single -d 20s
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/distlock/distlock/safety/client"
	"github.com/distlock/distlock/safety/lab"
)

func main() {
	if os.Getenv(client.ConfigEnv) != "" {
		os.Exit(client.ProcessMain(os.Stdin, os.Stdout))
	}
	os.Exit(run())
}

func run() int {
	quick := flag.Bool("quick", false, "the CI suite")
	full := flag.Bool("full", false, "every scenario in every mode, and the negative controls")
	seed := flag.Uint64("seed", 1, "seed of the fault schedules")
	dur := flag.Duration("d", 30*time.Second, "duration of each run (full suite, or -run)")
	only := flag.String("run", "", "comma-separated scenario ids to run (with -full or alone)")
	mode := flag.String("mode", "", "single or redlock only")
	out := flag.String("out", "", "directory for histories (default: a new temp dir)")
	report := flag.String("report", "", "write the markdown report table to this file")
	flag.Parse()

	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir := *out
	if dir == "" {
		if dir, err = os.MkdirTemp("", "distlock-safety-"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	var suite lab.Suite
	switch {
	case *quick:
		suite = lab.QuickSuite(*seed)
	default:
		suite = lab.FullSuite(*seed, *dur)
		if !*full && *only == "" {
			fmt.Fprintln(os.Stderr, "lab: say -quick, -full or -run IDS")
			return 2
		}
	}
	if *only != "" {
		ids := map[int]bool{}
		for _, f := range strings.Split(*only, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				fmt.Fprintln(os.Stderr, "lab: -run:", err)
				return 2
			}
			ids[n] = true
		}
		suite = suite.Filter(func(r lab.RunSpec) bool { return ids[r.Scenario.ID] })
	}
	if *mode != "" {
		suite = suite.Filter(func(r lab.RunSpec) bool { return r.Mode.Name == *mode })
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
	}
	logf("lab: %s suite, %d runs, seed %d, histories in %s", suite.Name, len(suite.Runs), *seed, dir)
	began := time.Now()
	outs, err := suite.Execute(ctx, lab.Options{
		Exe: []string{exe}, Dir: dir, Logf: logf,
		SignalTolerance: 10 * time.Millisecond, Backoff: 500 * time.Millisecond,
	})
	table := lab.Markdown(outs)
	fmt.Print(table)
	if *report != "" {
		doc := fmt.Sprintf("Command: `%s`, seed %d, %d runs, took %v (%s).\n\n%s\n%s\n%s",
			strings.Join(os.Args, " "), *seed, len(outs), time.Since(began).Round(time.Second),
			time.Now().UTC().Format("2006-01-02 15:04 UTC"), lab.Versions(), table, lab.Legend())
		if err := os.WriteFile(*report, []byte(doc), 0o644); err != nil {
			logf("lab: %v", err)
		}
	}
	failed := 0
	for _, o := range outs {
		if len(o.Problems) > 0 {
			failed++
		}
	}
	logf("lab: %d runs, %d failed, took %v; histories in %s", len(outs), failed, time.Since(began).Round(time.Second), filepath.Clean(dir))
	if err != nil {
		logf("lab: %v", err)
		return 1
	}
	if failed > 0 {
		return 1
	}
	return 0
}

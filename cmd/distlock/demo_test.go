//go:build unix

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestDemoCommand: the demo tells its story and checks it, with no backend
// (how long it takes is its script's pauses, not something a test of it
// can hold a machine to).
func TestDemoCommand(t *testing.T) {
	t.Parallel()
	r := cli{}.run(t, "demo") // no backend configured: the demo needs none
	expect(t, r, 0, "REJECTED", "fence.ErrStale", "tally:", "1 stale write rejected", "check:", ": OK")
	if lines := strings.Count(r.stdout, "\n"); lines > 25 {
		t.Errorf("the demo printed %d lines; keep it short", lines)
	}
}

// TestDemoInProcess runs the demo under the race detector of this test.
func TestDemoInProcess(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := runDemo(ctx, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	// The stale write comes after a newer write, and before the tally.
	s := out.String()
	rejected, tally := strings.Index(s, "REJECTED"), strings.Index(s, "tally:")
	if rejected < 0 || tally < rejected || strings.Count(s, "wrote entry") != demoWorkers*demoWrites+1 {
		t.Fatalf("unexpected story:\n%s", s)
	}
}

func TestDemoTallyCatchesErrors(t *testing.T) {
	t.Parallel()
	a := ledgerEntry{"w1", 1, 10}
	b := ledgerEntry{"w2", 1, 20}
	stale := ledgerEntry{"w0", 2, 5}
	var out bytes.Buffer
	for name, tc := range map[string]struct{ entries, accepted []ledgerEntry }{
		"duplicate":      {[]ledgerEntry{a, a, b}, []ledgerEntry{a, b}},
		"missing":        {[]ledgerEntry{a}, []ledgerEntry{a, b}},
		"extra":          {[]ledgerEntry{a, b}, []ledgerEntry{a}},
		"not increasing": {[]ledgerEntry{b, a}, []ledgerEntry{a, b}},
		"stale accepted": {[]ledgerEntry{stale, a, b}, []ledgerEntry{stale, a, b}},
	} {
		if err := demoTally(&out, tc.entries, tc.accepted, stale); err == nil {
			t.Errorf("%s: the tally did not catch it", name)
		}
	}
	if err := demoTally(&out, []ledgerEntry{a, b}, []ledgerEntry{b, a}, stale); err != nil {
		t.Errorf("a good ledger fails the tally: %v", err)
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	c := cli{}
	for _, cmd := range (*app)(nil).commands() {
		name, h := cmd.name, cmd.help
		if !strings.Contains(h, "Usage: distlock "+name) || !strings.Contains(h, "Example") {
			t.Errorf("help of %s lacks a usage line or an example:\n%s", name, h)
		}
		if name != "help" && !strings.Contains(h, "Exit codes") {
			t.Errorf("help of %s lacks its exit codes", name)
		}
		for _, args := range [][]string{{"help", name}, {name, "-h"}, {name, "--help"}} {
			r := c.run(t, args...)
			if r.code != 0 || r.stdout != h {
				t.Errorf("distlock %q: want exit 0 and the help text, got %v", args, r)
			}
		}
	}
	r := c.run(t, "help")
	expect(t, r, 0, "force-release", "DISTLOCK_REDIS", "75", "76", "distlock demo")
	r = c.run(t)
	expect(t, r, exitUsage, "Commands:")
	expect(t, c.run(t, "help", "nosuch"), exitUsage, `no command "nosuch"`)
	for _, s := range []string{"SIGTERM", "SIGKILL", "--grace", "never restarted", "DISTLOCK_FENCE", "75", "76", "69", "64", "--limit"} {
		if !strings.Contains(runHelp, s) {
			t.Errorf("run's help does not mention %q", s)
		}
	}
}

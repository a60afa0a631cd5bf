package lab

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/distlock/distlock/safety/client"
)

// TestMain lets the test binary double as the process client: the lab
// starts it again with client.ConfigEnv set.
func TestMain(m *testing.M) {
	if os.Getenv(client.ConfigEnv) != "" {
		os.Exit(client.ProcessMain(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// TestQuick runs the CI suite (QuickSuite): the headline claim (no stale
// write accepted and no acknowledged update lost on the fenced resource),
// the controls that must have teeth, and the three negative controls. Set
// DISTLOCK_LAB_SEED to change the fault schedule.
func TestQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("the safety lab runs real redis-server processes for about a minute")
	}
	seed := uint64(1)
	if s := os.Getenv("DISTLOCK_LAB_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		seed = n
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "distlock-safety-quick-")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 7*time.Minute)
	defer cancel()
	outs, err := QuickSuite(seed).Execute(ctx, Options{
		Exe: []string{exe}, Dir: dir, Logf: t.Logf,
		// Loss signals are timer-driven; under -race on a loaded machine a
		// timer can fire tens of milliseconds late.
		SignalTolerance: 40 * time.Millisecond,
		Backoff:         500 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	failed := false
	for _, o := range outs {
		if len(o.Problems) > 0 {
			failed = true
			t.Errorf("%s: %s", o.Spec.Key(), Summary(o))
		}
	}
	t.Logf("seed %d\n%s", seed, Markdown(outs))
	if failed {
		t.Logf("histories kept in %s", dir)
		return
	}
	_ = os.RemoveAll(dir)
}

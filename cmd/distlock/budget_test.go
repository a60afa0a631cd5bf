//go:build unix && full

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/enginetest"
)

// TestWaitBudgetCoversConnecting: with an etcd endpoint nobody answers on,
// run --wait 1s gives up when its budget ends, reporting the backend
// unreachable (exit 69), not after the connection check's own pingTimeout
// (5 s). In the test process, so that the time measured is the command's,
// not a process start's.
func TestWaitBudgetCoversConnecting(t *testing.T) {
	stderr := &lockedBuffer{}
	env := map[string]string{envEtcd: "http://" + closedPort(t)}
	a := &app{stdin: strings.NewReader(""), stdout: &lockedBuffer{}, stderr: stderr,
		getenv: func(k string) string { return env[k] }}
	const wait = time.Second
	probe := enginetest.StartProbe(t)
	start := time.Now()
	b, lease, code := a.acquireWith("run", "budget", "", wait, nil, func(ctx context.Context, c *distlock.Client) (*distlock.Lease, error) {
		return acquireLease(ctx, c, "budget", wait)
	})
	took := time.Since(start)
	if lease != nil || b != nil {
		t.Fatalf("acquired %q on an endpoint nobody answers on", "budget")
	}
	if code != exitBackend || !strings.Contains(stderr.String(), "cannot reach etcd") {
		t.Fatalf("exit %d, stderr %q; want %d and \"cannot reach etcd\"", code, stderr.String(), exitBackend)
	}
	t.Logf("gave up after %v: %s", took, strings.TrimSpace(stderr.String()))
	// The connection check ends with the budget; closing the etcd client
	// and reporting take moments.
	const overrun = 500 * time.Millisecond
	enginetest.Bounded(t, "run --wait 1s against an unreachable etcd", took, wait+overrun+probe.Slack(), probe.Delay(), pingTimeout-wait-overrun)
}

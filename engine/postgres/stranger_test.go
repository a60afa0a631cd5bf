package postgres_test

// Acceptance tests written by a stranger to the engine, against the test
// binary's real server (srv), stopped and restarted: the cases are
// enginetest's (TokensAcrossRestarts, ServerStopped); the stranger's
// engine-agnostic ones run in the conformance suite.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/enginetest"
)

const strangerSchema = "stranger"

// strangerClient is a Client on an engine of its own pool (one process).
func strangerClient(t *testing.T, app string) *distlock.Client {
	t.Helper()
	e := newEngine(t, newPool(t, "application_name="+app), strangerSchema)
	c := distlock.New(e)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestStrangerTokensAcrossKindsAndRestart: tokens across kinds, expiries,
// force-releases and restarts (enginetest.TokensAcrossRestarts), the
// server killed and started again on its data directory.
func TestStrangerTokensAcrossKindsAndRestart(t *testing.T) {
	migrated(t, strangerSchema)
	enginetest.TokensAcrossRestarts(t, strangerClient(t, "stranger-tokens"), time.Second, func() {
		if err := srv.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
	})
}

// pgProcs returns the server's processes: the postmaster and its children.
func pgProcs(t *testing.T) []int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(srv.Dir, "data", "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pm, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("pgrep", "-P", strconv.Itoa(pm)).Output()
	if err != nil {
		t.Fatalf("pgrep: %v", err)
	}
	pids := []int{pm}
	for _, f := range strings.Fields(string(out)) {
		p, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, p)
	}
	return pids
}

// stopServer stops every process of the server (SIGSTOP) and returns the
// function that continues them.
func stopServer(t *testing.T) (cont func()) {
	t.Helper()
	pids := pgProcs(t)
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGSTOP)
	}
	done := false
	cont = func() {
		if done {
			return
		}
		done = true
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGCONT)
		}
	}
	t.Cleanup(cont)
	return cont
}

// TestStrangerServerStopped: every process of the server stopped
// (SIGSTOP) past the holders' ttls with waiters queued
// (enginetest.ServerStopped).
func TestStrangerServerStopped(t *testing.T) {
	migrated(t, strangerSchema)
	holder := strangerClient(t, "stranger-stop-holder")
	waiter := strangerClient(t, "stranger-stop-waiter")
	enginetest.ServerStopped(t, holder, waiter, func() func() { return stopServer(t) })
}

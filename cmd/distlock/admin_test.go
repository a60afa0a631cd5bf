//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/redistest"
)

// parseAssignments parses acquire's KEY=VALUE lines (values unquoted).
func parseAssignments(t *testing.T, out string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("bad line %q in\n%s", line, out)
		}
		m[k] = strings.Trim(v, "'")
	}
	return m
}

func TestAcquireExtendRelease(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	lib := library(t, srv)
	c := cli{redis: srv.URL()}

	r := c.run(t, "acquire", "--ttl", "1m", "--metadata", "nightly on host-a", "script-lock")
	expect(t, r, 0, "DISTLOCK_OWNER=", "DISTLOCK_FENCE=")
	vars := parseAssignments(t, r.stdout)
	owner := vars["DISTLOCK_OWNER"]
	if vars["DISTLOCK_NAME"] != "script-lock" || owner == "" || vars["DISTLOCK_TTL"] != "1m0s" {
		t.Fatalf("acquire printed %q", r.stdout)
	}
	// The lock outlives the acquire process, with its metadata.
	info, err := lib.Inspect(testCtx(t), "script-lock")
	if err != nil || !info.Held || info.Owner != owner || info.Metadata != "nightly on host-a" || vars["DISTLOCK_FENCE"] != fmtFence(info.Token) {
		t.Fatalf("after acquire: %+v, %v; printed %v", info, err, vars)
	}

	expect(t, c.run(t, "acquire", "--wait", "0", "script-lock"), exitBusy, "held by another owner")
	expect(t, c.run(t, "extend", "script-lock", "not-the-owner"), exitLost, "not held by that owner")

	r = c.run(t, "extend", "--ttl", "10m", "script-lock", owner)
	expect(t, r, 0, "extended")
	if info, _ := lib.Inspect(testCtx(t), "script-lock"); info.TTL < 9*time.Minute {
		t.Errorf("ttl after extend --ttl 10m: %v", info.TTL)
	}
	r = c.run(t, "extend", "script-lock", owner, "--json", "--ttl", "2m")
	var g grantJSON
	if err := json.Unmarshal([]byte(r.stdout), &g); err != nil || g.Owner != owner || g.TTLMs != 120000 || g.Fence != info.Token {
		t.Errorf("extend --json: %+v, %v\n%v", g, err, r)
	}

	expect(t, c.run(t, "release", "script-lock", owner), 0, "released")
	if info, _ := lib.Inspect(testCtx(t), "script-lock"); info.Held {
		t.Errorf("held after release: %+v", info)
	}
	expect(t, c.run(t, "release", "script-lock", owner), exitLost, "not held")

	// Owner tokens may begin with "-": they are not taken for flags.
	if _, err := lib.Acquire(testCtx(t), "dash-lock", distlock.WithOwner("-dash-owner"), distlock.WithTTL(time.Minute)); err != nil {
		t.Fatal(err)
	}
	expect(t, c.run(t, "extend", "dash-lock", "-dash-owner", "--ttl", "2m"), 0, "extended")
	expect(t, c.run(t, "extend", "--ttl=3m", "dash-lock", "-dash-owner", "--json"), 0, `"ttl_ms": 180000`)
	expect(t, c.run(t, "extend", "dash-lock", "-dash-owner", "--ttl"), exitUsage, "flag needs an argument: --ttl")
	expect(t, c.run(t, "release", "dash-lock", "--", "-dash-owner"), 0, "released")

	// JSON, and no auto-renewal: the lock runs out after its ttl.
	r = c.run(t, "acquire", "--json", "--ttl", "300ms", "short-lock")
	expect(t, r, 0)
	if err := json.Unmarshal([]byte(r.stdout), &g); err != nil || g.Name != "short-lock" || g.Owner == "" || g.Fence == 0 || g.TTLMs != 300 {
		t.Fatalf("acquire --json: %+v, %v\n%v", g, err, r)
	}
	// The lock keeps the ttl asked for (a ttl only counts down), and runs
	// out: nobody renews it.
	if info, _ := lib.Inspect(testCtx(t), "short-lock"); info.Held && info.TTL > 300*time.Millisecond {
		t.Errorf("acquire's lease has ttl %v, want at most 300ms: %+v", info.TTL, info)
	}
	for info, _ := lib.Inspect(testCtx(t), "short-lock"); info.Held; info, _ = lib.Inspect(testCtx(t), "short-lock") {
		if info.TTL > 300*time.Millisecond {
			t.Fatalf("acquire's lease was renewed: %+v", info)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStatusListLeaks(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	lib := library(t, srv)
	ctx := testCtx(t)
	c := cli{redis: srv.URL()}

	var leases []*distlock.Lease
	for _, name := range []string{"jobs/a", "jobs/b", "other"} {
		l, err := lib.Acquire(ctx, name, distlock.WithTTL(time.Minute), distlock.WithMetadata("holder of "+name))
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, l)
	}
	// What SETNX-then-EXPIRE code leaves behind: a lock key with no ttl.
	raw := srv.Client()
	if err := raw.Set(ctx, "distlock:{stuck}", "1 dead-process", 0).Err(); err != nil { // token 1, owner dead-process
		t.Fatal(err)
	}

	// status
	r := c.run(t, "status", "jobs/a")
	expect(t, r, 0, "state:", "held", leases[0].Owner(), "holder of jobs/a", fmtFence(leases[0].Token()), "waiters:")
	r = c.run(t, "status", "--json", "jobs/a")
	var st infoJSON
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || !st.Held || st.Owner != leases[0].Owner() ||
		st.Fence != leases[0].Token() || st.HighWater != leases[0].Token() || st.TTLMs == nil || *st.TTLMs <= 0 {
		t.Errorf("status --json: %+v, %v\n%v", st, err, r)
	}
	r = c.run(t, "status", "free-lock", "--json")
	st = infoJSON{}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.Held || st.Name != "free-lock" {
		t.Errorf("status --json of a free lock: %+v, %v", st, err)
	}
	expect(t, c.run(t, "status", "free-lock"), 0, "free")
	expect(t, c.run(t, "status", "stuck"), 0, "never", "leaked lock", "distlock force-release stuck")

	// list
	r = c.run(t, "list")
	expect(t, r, 0, "NAME", "HOLDER", "jobs/a", "jobs/b", "other", "holder of jobs/b", "stuck")
	if strings.Contains(r.stdout, ":fence") {
		t.Errorf("list shows fence keys:\n%s", r.stdout)
	}
	r = c.run(t, "list", "jobs/")
	expect(t, r, 0, "jobs/a", "jobs/b")
	if strings.Contains(r.stdout, "other") || strings.Contains(r.stdout, "stuck") {
		t.Errorf("list jobs/ shows other locks:\n%s", r.stdout)
	}
	r = c.run(t, "list", "--json", "jobs/")
	var infos []infoJSON
	if err := json.Unmarshal([]byte(r.stdout), &infos); err != nil || len(infos) != 2 || infos[0].Name != "jobs/a" || infos[1].Owner != leases[1].Owner() {
		t.Errorf("list --json: %+v, %v", infos, err)
	}
	expect(t, c.run(t, "list", "nothing-here"), 0, "no lock is held")
	r = c.run(t, "list", "--json", "nothing-here")
	if strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("empty list --json = %q", r.stdout)
	}

	// leaks: only the ttl-less key; fence keys (7-day ttl) are fine.
	r = c.run(t, "leaks")
	expect(t, r, exitFailed, "distlock:{stuck}", "string", "never", "distlock force-release stuck")
	if strings.Contains(r.stdout, "jobs/") || strings.Contains(r.stdout, "other") {
		t.Errorf("leaks reports healthy locks:\n%s", r.stdout)
	}
	r = c.run(t, "leaks", "--json")
	var leaks []leakJSON
	if err := json.Unmarshal([]byte(r.stdout), &leaks); err != nil || len(leaks) != 1 ||
		leaks[0] != (leakJSON{Key: "distlock:{stuck}", Name: "stuck", Kind: "lock", Type: "string", TTLMs: -1}) {
		t.Errorf("leaks --json: %+v, %v", leaks, err)
	}
	// A lock whose ttl is beyond --max-ttl is a leak too.
	r = c.run(t, "leaks", "--max-ttl", "30s", "jobs/")
	expect(t, r, exitFailed, "distlock:{jobs/a}", "distlock:{jobs/b}")

	// force-release repairs it.
	expect(t, c.run(t, "force-release", "--yes", "stuck"), 0, "released")
	expect(t, c.run(t, "leaks"), 0, "no leaks")
}

func TestForceRelease(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	lib := library(t, srv)
	ctx := testCtx(t)
	lease, err := lib.Acquire(ctx, "repair", distlock.WithTTL(time.Minute), distlock.WithMetadata("crashed worker"))
	if err != nil {
		t.Fatal(err)
	}
	c := cli{redis: srv.URL()}

	expect(t, (cli{redis: srv.URL(), stdin: "n\n"}).run(t, "force-release", "repair"), exitFailed, "crashed worker", "[y/N]", "not confirmed", "--yes")
	expect(t, c.run(t, "force-release", "repair"), exitFailed, "no answer on standard input")
	if info, _ := lib.Inspect(ctx, "repair"); !info.Held {
		t.Fatal("released without confirmation")
	}

	// A waiting distlock run is woken by the force-release.
	waiter := c.command("run", "--wait", "20s", "repair", "--", "true")
	var out, errb bytes.Buffer
	waiter.Stdout, waiter.Stderr = &out, &errb
	start := time.Now()
	if err := waiter.Start(); err != nil {
		t.Fatal(err)
	}
	for {
		info, err := lib.Inspect(ctx, "repair")
		if err != nil {
			t.Fatal(err)
		}
		if info.Waiters > 0 {
			break
		}
		if time.Since(start) > patience {
			t.Fatal("the waiting run never subscribed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The holder's lease (a minute, renewed) outlasts the waiter's 20s: its
	// success shows that the force-release woke it.
	expect(t, (cli{redis: srv.URL(), stdin: "y\n"}).run(t, "force-release", "repair"), 0, "released \"repair\"")
	r := wait(t, waiter, start, &out, &errb, patience)
	expect(t, r, 0)
	if err := lease.Extend(ctx, time.Minute); err == nil {
		t.Error("the old holder could still extend")
	}
	expect(t, c.run(t, "force-release", "--yes", "repair"), 0, "not held")
}

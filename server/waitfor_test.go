//go:build unix

package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/remote"
	"github.com/distlock/distlock/server/api"
)

// getWaitFor reads GET /v1/waitfor.
func getWaitFor(t *testing.T, url string) api.WaitFor {
	t.Helper()
	resp, err := http.Get(url + "/v1/waitfor")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/waitfor: %s", resp.Status)
	}
	var g api.WaitFor
	if err := json.NewDecoder(resp.Body).Decode(&g); err != nil {
		t.Fatal(err)
	}
	return g
}

// TestWaitForDeadlock: two Clients (each its own engine to the server, as
// two processes) deadlock across two names: owner-a holds deadlock/x and
// waits for deadlock/y, which owner-b holds while it waits for
// deadlock/x. GET /v1/waitfor reports both edges and the cycle, with the
// owners and how long each waited; a third waiter without an explicit
// owner is counted, not drawn. The dashboard, in headless Chromium, flags
// the cycle; its screenshot is saved under the test's temp dir (and copied
// to $DISTLOCK_WAITFOR_SCREENSHOT when set).
func TestWaitForDeadlock(t *testing.T) {
	bin := findChromium(t)
	s := start(t, nil)
	client := func() *distlock.Client {
		eng, err := remote.New(s.url)
		if err != nil {
			t.Fatal(err)
		}
		c := distlock.New(eng)
		t.Cleanup(func() { c.Close(); eng.Close() })
		return c
	}
	ca, cb, cc := client(), client(), client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := ca.Acquire(ctx, "deadlock/x", distlock.WithOwner("owner-a"), distlock.WithTTL(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := cb.Acquire(ctx, "deadlock/y", distlock.WithOwner("owner-b"), distlock.WithTTL(time.Minute)); err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{}, 3)
	wait := func(c *distlock.Client, name string, opts ...distlock.Option) {
		go func() {
			defer func() { done <- struct{}{} }()
			if l, err := c.Acquire(wctx, name, opts...); err == nil {
				_ = l.Release(context.Background())
			}
		}()
	}
	defer func() {
		stop()
		for range 3 {
			<-done
		}
	}()
	wait(ca, "deadlock/y", distlock.WithOwner("owner-a"))
	wait(cb, "deadlock/x", distlock.WithOwner("owner-b"))
	wait(cc, "deadlock/x") // a random owner: no edge

	var g api.WaitFor
	unnamed := func() int { // deadlock/x's waiters without an owner
		for _, l := range g.Locks {
			if l.Name == "deadlock/x" {
				return l.Unnamed
			}
		}
		return 0
	}
	waitFor(t, patience, "the cycle and the unnamed waiter in GET /v1/waitfor", func() bool {
		g = getWaitFor(t, s.url)
		return len(g.Cycles) > 0 && len(g.Edges) == 2 && unnamed() == 1
	})
	checkTwoOwnerCycle(t, g)
	checkDashboardFlagsCycle(t, bin, s.url)
}

// checkTwoOwnerCycle checks that g's one cycle is owner-a waiting for
// deadlock/y held by owner-b, and owner-b for deadlock/x held by owner-a,
// and that deadlock/x names owner-b alone among its waiters.
func checkTwoOwnerCycle(t *testing.T, g api.WaitFor) {
	t.Helper()
	if len(g.Cycles) != 1 || len(g.Cycles[0].Edges) != 2 {
		t.Fatalf("cycles %+v, want one of two edges", g.Cycles)
	}
	got := map[string]string{}
	for _, e := range g.Cycles[0].Edges {
		got[e.From.Owner] = e.Lock + " held by " + e.To.Owner
		if e.From.ID != api.HolderID(e.From.Owner) || e.To.ID != api.HolderID(e.To.Owner) || e.WaitedMs < 0 || e.HolderTTL <= 0 {
			t.Errorf("edge %+v", e)
		}
	}
	if got["owner-a"] != "deadlock/y held by owner-b" || got["owner-b"] != "deadlock/x held by owner-a" {
		t.Fatalf("cycle %v", got)
	}
	for _, l := range g.Locks {
		if l.Name == "deadlock/x" && len(l.Waiters) != 1 {
			t.Errorf("deadlock/x's named waiters %+v; want owner-b alone", l.Waiters)
		}
	}
}

// checkDashboardFlagsCycle opens the dashboard at url in headless
// Chromium (bin) and checks that it flags that cycle and marks its two
// rows; the screenshot is saved under the test's temp dir (and copied to
// $DISTLOCK_WAITFOR_SCREENSHOT when set).
func checkDashboardFlagsCycle(t *testing.T, bin, url string) {
	t.Helper()
	dir := t.TempDir()
	b := startBrowser(t, bin, dir)
	page := b.open(t, url+"/")
	var text string
	waitFor(t, patience, "the dashboard to flag the deadlock", func() bool {
		b.eval(t, page, `(() => { const c = document.getElementById("cycles"); return c ? c.innerText : ""; })()`, &text)
		return strings.Contains(text, "Deadlock") && strings.Contains(text, "deadlock/x") && strings.Contains(text, "deadlock/y") &&
			strings.Contains(text, api.HolderID("owner-a")) && strings.Contains(text, api.HolderID("owner-b"))
	})
	var rows int
	b.eval(t, page, `document.querySelectorAll("#waitfor-body tr.in-cycle").length`, &rows)
	if rows != 2 {
		t.Errorf("%d wait-for rows marked in a cycle, want 2", rows)
	}
	shot := filepath.Join(dir, "waitfor.png")
	b.screenshot(t, page, shot)
	t.Logf("screenshot: %s", shot)
	if dst := os.Getenv("DISTLOCK_WAITFOR_SCREENSHOT"); dst != "" {
		data, _ := os.ReadFile(shot)
		_ = os.WriteFile(dst, data, 0o644)
	}
}

// TestWaitForMethod: anything but GET is refused (405) and changes
// nothing.
func TestWaitForMethod(t *testing.T) {
	s := start(t, nil)
	resp, err := http.Post(s.url+"/v1/waitfor", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET" {
		t.Fatalf("POST /v1/waitfor: %s, Allow %q", resp.Status, resp.Header.Get("Allow"))
	}
	if g := getWaitFor(t, s.url); len(g.Locks) != 0 || len(g.Cycles) != 0 {
		t.Fatalf("graph of an idle server: %+v", g)
	}
}

// TestWaitForHeldOpen: a held-open HTTP acquire with an owner (no Go
// client) is drawn too: the server's own queue entry names the request's
// owner.
func TestWaitForHeldOpen(t *testing.T) {
	s := start(t, nil)
	eng, err := remote.New(s.url)
	if err != nil {
		t.Fatal(err)
	}
	c := distlock.New(eng)
	defer func() { c.Close(); eng.Close() }()
	ctx := context.Background()
	l, err := c.Acquire(ctx, "held-open", distlock.WithOwner("go-holder"), distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := http.Post(s.url+"/v1/locks/held-open/acquire", "application/json",
			strings.NewReader(`{"owner":"curl-user","ttl_ms":10000,"wait_ms":60000}`))
		if err == nil {
			resp.Body.Close()
		}
	}()
	waitFor(t, patience, "the held-open acquire's edge", func() bool {
		g := getWaitFor(t, s.url)
		return len(g.Edges) == 1 && g.Edges[0].From.Owner == "curl-user" && g.Edges[0].To.Owner == "go-holder"
	})
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	<-done
}

//go:build unix

package server_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/remote"
)

// TestDashboardInBrowser loads the dashboard in headless Chromium while a
// lock is held, and checks that the rendered page shows the lock's name,
// metadata and fencing token, and follows a new grant live (no reload).
// A screenshot and the rendered DOM are saved under the test's temp dir.
func TestDashboardInBrowser(t *testing.T) {
	bin := findChromium(t)
	s := start(t, nil)
	eng, err := remote.New(s.url)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	c := distlock.New(eng)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const name = "orders/nightly-export"
	l, err := c.Acquire(ctx, name, distlock.WithTTL(20*time.Second), distlock.WithMetadata("dashboard test on host-a"))
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	b := startBrowser(t, bin, dir)
	page := b.open(t, s.url+"/")
	token := strconv.FormatUint(l.Token(), 10)
	waitRowShows(t, b, page, dir, "first grant", name, token, "dashboard test on host-a")
	checkLiveCountdown(t, b, page)
	b.screenshot(t, page, filepath.Join(dir, "dashboard.png"))
	var html string
	b.eval(t, page, "document.documentElement.outerHTML", &html)
	if err := os.WriteFile(filepath.Join(dir, "dashboard.html"), []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}

	// A new grant shows up live, with its higher token.
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l2, err := c.Acquire(ctx, name, distlock.WithMetadata("second holder"))
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Release(ctx)
	waitRowShows(t, b, page, dir, "second grant", name, strconv.FormatUint(l2.Token(), 10), "second holder")
	// The counter follows the Observer, which hears of a grant after the
	// engine made it (the lock row may show it first): wait for it.
	waitFor(t, patience, "the chart's counter to show at least 2 acquisitions", func() bool {
		var acquisitions string
		b.eval(t, page, `document.getElementById("stat-acq").textContent`, &acquisitions)
		n, _ := strconv.Atoi(acquisitions)
		return n >= 2
	})
	t.Logf("screenshot: %s", filepath.Join(dir, "dashboard.png"))
	if dst := os.Getenv("DISTLOCK_DASHBOARD_SCREENSHOT"); dst != "" {
		data, _ := os.ReadFile(filepath.Join(dir, "dashboard.png"))
		_ = os.WriteFile(dst, data, 0o644)
	}
}

// waitRowShows waits until the dashboard's first lock row shows every one
// of parts; it fails the test with the page's text and a screenshot in dir
// when it never does.
func waitRowShows(t *testing.T, b *browser, page, dir, what string, parts ...string) {
	t.Helper()
	var text string
	deadline := time.Now().Add(patience)
	for {
		b.eval(t, page, `(() => { const r = document.querySelector('#locks-body tr[data-name]'); return r ? r.innerText : ""; })()`, &text)
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(text, p)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			var body string
			b.eval(t, page, "document.body.innerText", &body)
			b.screenshot(t, page, filepath.Join(dir, "failed.png"))
			t.Fatalf("%s: the page never showed %q; lock row %q; page:\n%s\n(screenshot in %s)", what, parts, text, body, dir)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkLiveCountdown checks that the dashboard's connection indicator says
// live, and that the ttl it shows counts down between snapshots.
func checkLiveCountdown(t *testing.T, b *browser, page string) {
	t.Helper()
	var status string
	b.eval(t, page, `document.getElementById("conn").title`, &status)
	if status != "live" {
		t.Fatalf("connection indicator says %q, want live", status)
	}
	ttl := func() string {
		var text string
		b.eval(t, page, `document.querySelector('#locks-body td.ttl span').textContent`, &text)
		return text
	}
	ttl1 := ttl()
	if ttl1 == "" {
		t.Fatal("no ttl shown")
	}
	waitFor(t, patience, "the ttl shown to count down", func() bool { return ttl() != ttl1 })
}

// TestDashboardSharedInBrowser: the dashboard shows a semaphore's and a
// reader-writer lock's kind (permits held out of the limit; the mode) and
// every holder with its weight or mode.
func TestDashboardSharedInBrowser(t *testing.T) {
	bin := findChromium(t)
	s := start(t, nil)
	eng, err := remote.New(s.url)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	c := distlock.New(eng)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	big, err := c.Semaphore("pool", 3).Acquire(ctx, distlock.WithWeight(2), distlock.WithMetadata("big job"))
	if err != nil {
		t.Fatal(err)
	}
	defer big.Release(ctx)
	small, err := c.Semaphore("pool", 3).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer small.Release(ctx)
	w, err := c.RWMutex("rw").Lock(ctx, distlock.WithMetadata("writer"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Release(ctx)

	dir := t.TempDir()
	b := startBrowser(t, bin, dir)
	page := b.open(t, s.url+"/")
	row := func(name string) string {
		var text string
		b.eval(t, page, `(() => { const r = document.querySelector('#locks-body tr[data-name="`+name+`"]'); return r ? r.innerText : ""; })()`, &text)
		return text
	}
	for _, want := range []struct {
		name  string
		parts []string
	}{
		{"pool", []string{"semaphore 3/3", "×2", "×1", "big job", strconv.FormatUint(small.Token(), 10)}},
		{"rw", []string{"rwlock (write)", "(write)", "writer"}},
	} {
		deadline := time.Now().Add(patience)
		for {
			text := row(want.name)
			ok := true
			for _, p := range want.parts {
				ok = ok && strings.Contains(text, p)
			}
			if ok {
				break
			}
			if time.Now().After(deadline) {
				b.screenshot(t, page, filepath.Join(dir, "failed.png"))
				t.Fatalf("the %s row never showed %q: %q (screenshot in %s)", want.name, want.parts, text, dir)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

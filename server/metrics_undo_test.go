package server_test

import (
	"context"
	"regexp"
	"testing"
	"time"
)

// metricOr0 is metric for a series that is absent until its first event
// (a histogram's label value): 0 when absent.
func metricOr0(t *testing.T, text, series string) float64 {
	t.Helper()
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` `).MatchString(text) {
		return 0
	}
	return metric(t, text, series)
}

// lostTotal is distlock_leases_lost_total summed over its causes.
func lostTotal(t *testing.T, text string) float64 {
	t.Helper()
	n := 0.0
	for _, c := range []string{"expired", "taken_over", "unreachable", "max_hold"} {
		n += metric(t, text, `distlock_leases_lost_total{cause="`+c+`"}`)
	}
	return n
}

// TestUndoNotHeldIsNoLoss: a release with "undo" (a client taking back a
// grant whose answer it never got) that finds the owner not holding the
// lock counts no lost lease: nobody held one. Before the fix each counted
// in distlock_leases_lost_total (taken_over, or expired), as a client's
// clean-ups after a server restart did by the dozen. A hold the server
// tracked for that owner (its grant's answer lost on the way) ends as
// expired, and the holders gauge drops. A plain release answered not held
// still counts its loss.
func TestUndoNotHeldIsNoLoss(t *testing.T) {
	s := start(t, nil)
	mustAcquire(t, s, "x", map[string]any{"owner": "other", "ttl_ms": 60000})
	undo := func(owner string, status string) {
		t.Helper()
		r := call(t, "POST", lockURL(s, "x", "release"), "", map[string]any{"owner": owner, "undo": true})
		want(t, "undo of "+owner, r, 409, "not_held")
		if got := r.errField(t, "status"); got != status {
			t.Fatalf("undo of %s: status %v, want %s", owner, got, status)
		}
	}
	undo("ghost", "held_by_other")
	want(t, "release other", call(t, "POST", lockURL(s, "x", "release"), "", map[string]any{"owner": "other"}), 200, "")
	undo("ghost", "missing")
	text := scrape(t, s)
	if n := lostTotal(t, text); n != 0 {
		t.Fatalf("undos answered not held counted %v lost leases, want 0", n)
	}

	// A tracked hold whose owner's undo finds it gone (a 50 ms ttl run out).
	mustAcquire(t, s, "y", map[string]any{"owner": "late", "ttl_ms": 50})
	waitFor(t, patience, "the 50 ms lease to run out", func() bool {
		info, err := s.eng.Inspect(context.Background(), "y")
		return err == nil && !info.Held
	})
	r := call(t, "POST", lockURL(s, "y", "release"), "", map[string]any{"owner": "late", "undo": true})
	want(t, "undo of an expired grant", r, 409, "not_held")
	text = scrape(t, s)
	if n := lostTotal(t, text); n != 0 {
		t.Fatalf("an undo of a tracked hold counted %v lost leases, want 0", n)
	}
	if h := metric(t, text, "distlock_holders"); h != 0 {
		t.Fatalf("distlock_holders %v after the undone hold ended, want 0", h)
	}
	if e := metric(t, text, `distlock_hold_seconds_count{end="expired"}`); e != 1 {
		t.Fatalf(`hold_seconds_count{end="expired"} %v, want 1 (the undone hold)`, e)
	}

	// Not an undo: the loss counts.
	want(t, "release ghost", call(t, "POST", lockURL(s, "x", "release"), "", map[string]any{"owner": "ghost"}), 409, "not_held")
	if n := lostTotal(t, scrape(t, s)); n != 1 {
		t.Fatalf("a release answered not held counted %v lost leases, want 1", n)
	}
}

// TestResentAcquireCountsOnce: an acquire re-sent with the same owner and
// attempt (a client that did not get the first answer) is answered with
// the same grant (same token, count 1) and counts once: one acquisition,
// one holder, and one hold that ends released, timed from the first
// grant. Before the fix the replay counted a second acquisition and an
// "expired" end of the first hold, and the hold's time began at the
// replay.
func TestResentAcquireCountsOnce(t *testing.T) {
	s := start(t, nil)
	body := map[string]any{"owner": "o1", "attempt": "a1", "ttl_ms": 60000}
	first := call(t, "POST", lockURL(s, "att", "acquire"), "", body)
	want(t, "acquire", first, 200, "")
	granted := time.Now() // the first grant was made before this
	again := call(t, "POST", lockURL(s, "att", "acquire"), "", body)
	want(t, "re-sent acquire", again, 200, "")
	if num(t, again, "token") != num(t, first, "token") || num(t, again, "count") != 1 {
		t.Fatalf("the replay was answered %s, want the first grant %s again", again.body, first.body)
	}
	text := scrape(t, s)
	if a := metric(t, text, "distlock_acquisitions_total"); a != 1 {
		t.Errorf("distlock_acquisitions_total %v after a grant and its replay, want 1", a)
	}
	if h := metric(t, text, "distlock_holders"); h != 1 {
		t.Errorf("distlock_holders %v, want 1", h)
	}
	if e := metricOr0(t, text, `distlock_hold_seconds_count{end="expired"}`); e != 0 {
		t.Errorf(`hold_seconds_count{end="expired"} %v after a replay, want 0`, e)
	}
	sent := time.Now()
	want(t, "release", call(t, "POST", lockURL(s, "att", "release"), "", map[string]any{"owner": "o1"}), 200, "")
	text = scrape(t, s)
	if held := metric(t, text, `distlock_hold_seconds_sum{end="released"}`); held < sent.Sub(granted).Seconds() {
		t.Errorf("hold time %vs, want at least the %v from the first grant's answer to the release", held, sent.Sub(granted))
	}
	if r := metric(t, text, `distlock_hold_seconds_count{end="released"}`); r != 1 {
		t.Errorf(`hold_seconds_count{end="released"} %v, want 1`, r)
	}
	if h := metric(t, text, "distlock_holders"); h != 0 {
		t.Errorf("distlock_holders %v after the release, want 0", h)
	}
}

// TestMetricsHelpSaysWhatTheyCount: the HELP texts of /metrics say what
// docs/API.md's table says the series count: every end label of
// distlock_hold_seconds (forced and expired too, not only released or
// lost), the server's holds granted through it for distlock_holders, and
// the release-event streams that distlock_waiters counts besides held-open
// acquires.
func TestMetricsHelpSaysWhatTheyCount(t *testing.T) {
	s := start(t, nil)
	// A hold that ends, so that the histogram has a series to describe.
	mustAcquire(t, s, "h", map[string]any{"owner": "o", "ttl_ms": 60000})
	want(t, "release", call(t, "POST", lockURL(s, "h", "release"), "", map[string]any{"owner": "o"}), 200, "")
	text := scrape(t, s)
	help := func(series string) string {
		t.Helper()
		m := regexp.MustCompile(`(?m)^# HELP ` + series + ` (.*)$`).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("no HELP for %s", series)
		}
		return m[1]
	}
	for _, c := range []struct{ series, want string }{
		{"distlock_hold_seconds", "released"},
		{"distlock_hold_seconds", "lost"},
		{"distlock_hold_seconds", "forced"},
		{"distlock_hold_seconds", "expired"},
		{"distlock_holders", "granted through"},
		{"distlock_waiters", "held-open acquires"},
		{"distlock_waiters", "release-event streams"},
	} {
		if h := help(c.series); !regexp.MustCompile(regexp.QuoteMeta(c.want)).MatchString(h) {
			t.Errorf("HELP of %s is %q: it does not say %q", c.series, h, c.want)
		}
	}
}

//go:build unix && !lite

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/redistest"
)

// TestLimitNegative: a negative LIMIT, which package flag would take for a
// flag, is refused as a bad LIMIT (exit 64, saying the limit must be a
// positive whole number), and changes nothing: no key is made.
func TestLimitNegative(t *testing.T) {
	srv := redistest.Start(t)
	c := cli{redis: srv.URL()}
	for _, args := range [][]string{{"limit", "sem", "-1"}, {"limit", "--json", "sem", "-5"}, {"limit", "sem", "0"}} {
		r := c.run(t, args...)
		expect(t, r, exitUsage, "a semaphore's limit is a positive whole number")
		if keys, err := srv.Client().Keys(testCtx(t), "*").Result(); err != nil || len(keys) > 0 {
			t.Errorf("%q made keys %q (%v)", args, keys, err)
		}
	}
}

// TestLimitOnePermitHeld: distlock limit reports one permit held as "1
// permit held".
func TestLimitOnePermitHeld(t *testing.T) {
	srv := redistest.Start(t)
	lease, err := library(t, srv).Semaphore("exports", 3).TryAcquire(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release(testCtx(t))
	r := cli{redis: srv.URL()}.run(t, "limit", "exports", "2")
	expect(t, r, exitOK, "(1 permit held, 0 waiting)")
}

// TestNeverExpiringAdvice: a lock held with no expiry (a leak: a lock
// value with no ttl) is not advised waited for: a wait cannot end it.
// distlock run, with --wait 0 and with a wait that expires, exits 75
// pointing at force-release.
func TestNeverExpiringAdvice(t *testing.T) {
	srv := redistest.Start(t)
	if err := srv.Client().Set(testCtx(t), "distlock:{stuck}", "5 deadowner", 0).Err(); err != nil {
		t.Fatal(err)
	}
	c := cli{redis: srv.URL()}
	for _, wait := range []time.Duration{0, 2 * time.Second} {
		r := c.run(t, "run", "--wait", wait.String(), "stuck", "--", "true")
		expect(t, r, exitBusy, "never expires", "distlock force-release stuck")
		for _, wrong := range []string{"--wait 30s", "Wait longer"} {
			if strings.Contains(r.stderr, wrong) {
				t.Errorf("--wait %v: advises %q for a lock that never expires:\n%v", wait, wrong, r)
			}
		}
	}
}

//go:build unix

package main

import (
	"strings"
	"testing"

	"github.com/distlock/distlock/internal/redistest"
)

// TestRunSet: distlock run NAME --also NAME2 ... takes every name at once,
// exports each name's token, and when one name is held takes none of them.
func TestRunSet(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := cli{redis: srv.URL()}
	script := `echo "$DISTLOCK_NAMES $DISTLOCK_NAME $DISTLOCK_FENCE|$DISTLOCK_NAME_1 $DISTLOCK_FENCE_1|$DISTLOCK_NAME_2 $DISTLOCK_FENCE_2|$DISTLOCK_NAME_3 $DISTLOCK_FENCE_3|${#DISTLOCK_OWNER_3}"`
	r := c.run(t, "run", "--also", "b", "--also", "a", "c", "--", "sh", "-c", script)
	expect(t, r, 0)
	parts := strings.Split(strings.TrimSpace(r.stdout), "|")
	if len(parts) != 5 || !strings.HasPrefix(parts[0], "3 c ") || !strings.HasPrefix(parts[1], "c ") ||
		!strings.HasPrefix(parts[2], "b ") || !strings.HasPrefix(parts[3], "a ") || parts[4] == "0" {
		t.Fatalf("environment %q; want 3 names, c first, then b and a, each with a fence, and owners", r.stdout)
	}
	if strings.Fields(parts[0])[2] != strings.Fields(parts[1])[1] || strings.Contains(r.stdout, " |") {
		t.Fatalf("fences missing or DISTLOCK_FENCE is not the first name's: %q", r.stdout)
	}

	// b is held: the set c, b is refused whole, and c stays free.
	lib := library(t, srv)
	lease, err := lib.Acquire(testCtx(t), "b")
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release(testCtx(t))
	expect(t, c.run(t, "run", "--wait", "0", "c", "--also", "b", "--", "true"), exitBusy, `"b"`)
	expect(t, c.run(t, "run", "--wait", "0", "c", "--", "true"), 0)

	expect(t, c.run(t, "run", "a", "--also", "a", "--", "true"), exitUsage, "more than once")
	expect(t, c.run(t, "run", "--shared", "a", "--also", "b", "--", "true"), exitUsage, "--also takes mutexes only")
}

// Package fipstest runs part of a test under GODEBUG=fips140=only, where
// non-approved cryptography (SHA-1, MD5) panics, in a copy of the test
// binary: the setting is read once, at start, so the whole process runs
// under it, package initialisation included.
package fipstest

import (
	"context"
	"crypto/fips140"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// childEnv marks the copy of the test binary that Run starts.
const childEnv = "DISTLOCK_TEST_FIPS_CHILD"

// Run runs child(t) under GODEBUG=fips140=only. Called from a top-level
// test, it runs the test binary again with that setting and that test
// alone, and fails t with the copy's output unless the copy passed without
// skipping anything; in the copy, it fails t unless the mode is enforced,
// then calls child.
func Run(t *testing.T, child func(t *testing.T)) {
	t.Helper()
	if os.Getenv(childEnv) != "" {
		if !fips140.Enforced() {
			t.Fatal("FIPS 140-only mode is not enforced: GODEBUG did not take")
		}
		child(t)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.count=1", "-test.v")
	godebug := "fips140=only"
	if v := os.Getenv("GODEBUG"); v != "" {
		godebug = v + "," + godebug
	}
	cmd.Env = append(os.Environ(), "GODEBUG="+godebug, childEnv+"=1") // the last of a key wins
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("under GODEBUG=fips140=only: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()+" ") || strings.Contains(string(out), "--- SKIP") {
		t.Fatalf("under GODEBUG=fips140=only: %s did not pass, or skipped a part:\n%s", t.Name(), out)
	}
}

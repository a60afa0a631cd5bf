//go:build unix

package main

import (
	"strings"
	"testing"
)

// TestMemURLSaysItIsNotShared: DISTLOCK_URL=mem:// (which the help lists
// among the backends of every command) opens an engine of the one distlock
// process: two 'distlock run --wait 0 job' on one host then both run the
// job. A command on it must say that its locks exclude no other process,
// and what to use instead.
func TestMemURLSaysItIsNotShared(t *testing.T) {
	t.Parallel()
	c := cli{env: map[string]string{"DISTLOCK_URL": "mem://"}}
	r := c.run(t, "run", "--wait", "0", "job", "--", "true")
	expect(t, r, 0, "no other process shares", "distlock serve")
	if strings.Contains(r.stdout, "no other process") {
		t.Errorf("the note went to standard output:\n%v", r)
	}
}

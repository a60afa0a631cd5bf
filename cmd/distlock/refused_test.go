//go:build unix

package main

import (
	"strings"
	"testing"
)

// TestRefusedTokenEndsWait: a token the server knows but whose role may not
// take locks (read) ends run and acquire at once with exit 64 and a word
// about the token, however long --wait is: no retry mends a refused token.
// (Before issue 24 the wait ran out its whole --wait, then exited 69,
// "Check that Redis is up".) The hour's --wait is far beyond the test
// binary's 30s guard (cli.run kills it), so a wait that retries fails the
// test. force-release with a write token is refused with 64 too, before it
// reads the lock or asks for confirmation.
func TestRefusedTokenEndsWait(t *testing.T) {
	t.Parallel()
	const read, write = "r-0123456789abcdef", "w-0123456789abcdef"
	s := serveIn(t, map[string]string{"DISTLOCK_TOKENS": "read:" + read + ",write:" + write})
	env := func(tok string) cli {
		return cli{env: map[string]string{"DISTLOCK_SERVER": s.url, "DISTLOCK_TOKEN": tok}}
	}
	for _, args := range [][]string{
		{"run", "--wait", "1h", "job", "--", "true"},
		{"acquire", "--wait", "1h", "job"},
	} {
		r := env(read).run(t, args...)
		expect(t, r, exitUsage, "refused the token", "forbidden", "DISTLOCK_TOKEN")
		if strings.Contains(r.stderr, "Redis") {
			t.Errorf("%s: the message blames Redis:\n%v", args[0], r)
		}
	}
	expect(t, env(write).run(t, "acquire", "x"), 0, "DISTLOCK_FENCE=")
	// force-release with a write token: 64 at once, on a held lock (no
	// question asked first) and on a free one alike ("not held" is no
	// answer to a token that may not force-release).
	for _, args := range [][]string{
		{"force-release", "--yes", "x"},
		{"force-release", "x"},
		{"force-release", "--yes", "free"},
		{"force-release", "--owner", "someone", "x"},
	} {
		r := env(write).run(t, args...)
		expect(t, r, exitUsage, "refused the token", "admin", "DISTLOCK_TOKEN")
		if strings.Contains(r.stderr+r.stdout, "Free it?") || strings.Contains(r.stdout, "not held") {
			t.Errorf("%v: answered before refusing the token:\n%v", args, r)
		}
	}
	expect(t, env(write).run(t, "status", "x"), 0, "state:", "held")
}

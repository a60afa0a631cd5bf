//go:build unix

package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestVerboseFlag: -v and --verbose (a switchFlag) turn the notes on,
// --verbose=false and no flag leave them silent, and a value that is not a
// boolean is a flag error.
func TestVerboseFlag(t *testing.T) {
	cases := []struct {
		args []string
		on   bool
	}{
		{nil, false},
		{[]string{"-v"}, true},
		{[]string{"--verbose"}, true},
		{[]string{"--verbose=false"}, false},
		{[]string{"-v", "--verbose=false"}, false},
		{[]string{"-v=true"}, true},
	}
	for _, tc := range cases {
		var out bytes.Buffer
		fs := flagSet("test")
		n := switchFlag(fs, notes{&out}, "v", "verbose")
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		n.say("note %d\n", 1)
		if got := out.String() == "note 1\n"; got != tc.on {
			t.Errorf("%q: printed %q, want notes %v", tc.args, out.String(), tc.on)
		}
	}
	fs := flagSet("test")
	switchFlag(fs, notes{&bytes.Buffer{}}, "v", "verbose")
	if err := fs.Parse([]string{"-v=maybe"}); err == nil {
		t.Error("-v=maybe parsed")
	}
}

// TestRunVerbose: distlock run -v reports the grant and the release on
// standard error, and says nothing of them without -v.
func TestRunVerbose(t *testing.T) {
	t.Parallel()
	c := cli{env: map[string]string{"DISTLOCK_URL": "mem://"}}
	expect(t, c.run(t, "run", "-v", "--wait", "0", "job", "--", "true"), 0,
		`distlock run: acquired "job"`, `distlock run: released "job"; the command exited with 0`)
	expect(t, c.run(t, "run", "--verbose", "--wait", "0", "--also", "other", "job", "--", "true"), 0,
		`distlock run: acquired job, other`, `distlock run: released job, other`)
	quiet := c.run(t, "run", "--wait", "0", "job", "--", "true")
	expect(t, quiet, 0)
	if strings.Contains(quiet.stderr, "acquired") || strings.Contains(quiet.stderr, "released") {
		t.Errorf("run without -v reported progress:\n%v", quiet)
	}
}

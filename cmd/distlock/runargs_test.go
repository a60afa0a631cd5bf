//go:build unix

package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestParseRunArgs: the command line of distlock run and distlock elect,
// argv → NAME and COMMAND, or a usage error. "-- NAME -- COMMAND" takes
// the second "--" as the separator (it used to become COMMAND's first
// word), so a NAME that begins with "-" can be given; a COMMAND whose first
// word begins with "-" (a stray "--", a flag after the separator) is a
// usage error rather than a program that exec cannot find once the lock is
// taken.
func TestParseRunArgs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args    []string
		name    string
		argv    []string
		ttl     time.Duration // --ttl after parsing (0: the default)
		wantErr string        // a usage error that contains this
	}{
		// NAME -- COMMAND, and NAME COMMAND.
		{args: []string{"job", "--", "echo", "hi"}, name: "job", argv: []string{"echo", "hi"}},
		{args: []string{"job", "echo", "hi"}, name: "job", argv: []string{"echo", "hi"}},
		{args: []string{"job", "./job.sh", "--verbose"}, name: "job", argv: []string{"./job.sh", "--verbose"}},
		{args: []string{"job", "echo", "--ttl"}, name: "job", argv: []string{"echo", "--ttl"}},
		{args: []string{"job", "--", "echo", "--", "x"}, name: "job", argv: []string{"echo", "--", "x"}},
		// Flags before NAME, and between NAME and COMMAND.
		{args: []string{"--ttl", "5s", "job", "--", "true"}, name: "job", argv: []string{"true"}, ttl: 5 * time.Second},
		{args: []string{"job", "--ttl", "5s", "--", "true"}, name: "job", argv: []string{"true"}, ttl: 5 * time.Second},
		{args: []string{"job", "--ttl", "5s", "echo", "hi"}, name: "job", argv: []string{"echo", "hi"}, ttl: 5 * time.Second},
		// -- NAME -- COMMAND, and -- NAME COMMAND.
		{args: []string{"--", "job", "--", "echo", "hi"}, name: "job", argv: []string{"echo", "hi"}},
		{args: []string{"-v", "--ttl", "5s", "--", "job", "--", "echo", "hi"}, name: "job", argv: []string{"echo", "hi"}, ttl: 5 * time.Second},
		{args: []string{"--", "-dash", "--", "echo", "hi"}, name: "-dash", argv: []string{"echo", "hi"}},
		{args: []string{"--", "--ttl", "--", "true"}, name: "--ttl", argv: []string{"true"}},
		{args: []string{"--", "job", "echo", "hi"}, name: "job", argv: []string{"echo", "hi"}},
		{args: []string{"--", "job", "--", "echo", "--"}, name: "job", argv: []string{"echo", "--"}},
		// No NAME.
		{args: nil, wantErr: "missing the lock NAME"},
		{args: []string{"--"}, wantErr: "missing the lock NAME"},
		{args: []string{"--ttl", "5s"}, wantErr: "missing the lock NAME"},
		{args: []string{"--", "--", "echo", "hi"}, wantErr: "missing the lock NAME"},
		{args: []string{"--", "--", "--", "echo", "hi"}, wantErr: "missing the lock NAME"},
		// No COMMAND.
		{args: []string{"job"}, wantErr: "missing the COMMAND"},
		{args: []string{"job", "--"}, wantErr: "missing the COMMAND"},
		{args: []string{"job", "--ttl", "5s"}, wantErr: "missing the COMMAND"},
		{args: []string{"--", "job"}, wantErr: "missing the COMMAND"},
		{args: []string{"--", "job", "--"}, wantErr: "missing the COMMAND"},
		// A COMMAND that begins with "-": one "--" too many, or a flag
		// after the separator.
		{args: []string{"job", "--", "--", "echo", "hi"}, wantErr: `one "--" too many`},
		{args: []string{"--", "job", "--", "--", "echo", "hi"}, wantErr: `one "--" too many`},
		{args: []string{"--", "job", "--ttl", "5s", "--", "echo", "hi"}, wantErr: `COMMAND cannot begin with "-" (got "--ttl")`},
		{args: []string{"job", "--", "-v", "echo"}, wantErr: `COMMAND cannot begin with "-" (got "-v")`},
		{args: []string{"job", "-", "echo"}, wantErr: `COMMAND cannot begin with "-" (got "-")`},
		// Flag errors, after NAME too.
		{args: []string{"job", "--ttl", "abc", "--", "true"}, wantErr: "not a duration"},
		{args: []string{"job", "--bogus", "true"}, wantErr: "flag provided but not defined"},
	} {
		fs := flagSet("run")
		ttl := durationFlag(fs, "ttl", 0)
		switchFlag(fs, notes{}, "v", "verbose")
		name, argv, err := parseRunArgs(fs, tc.args, runLine)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: got name %q, command %q, error %v; want an error with %q", tc.args, name, argv, err, tc.wantErr)
			}
			continue
		}
		if err != nil || name != tc.name || !slices.Equal(argv, tc.argv) || *ttl != tc.ttl {
			t.Errorf("%q: got name %q, command %q, --ttl %v, error %v; want %q, %q, %v", tc.args, name, argv, *ttl, err, tc.name, tc.argv, tc.ttl)
		}
	}
	// elect names its parts its own way.
	if _, _, err := parseRunArgs(flagSet("elect"), []string{"--", "--", "true"}, electLine); err == nil ||
		!strings.Contains(err.Error(), "missing the election NAME") || !strings.Contains(err.Error(), electSynopsis) {
		t.Errorf("elect without NAME: %v", err)
	}
}

// TestRunDashDashEndToEnd: the binary on a server on the embedded engine.
// "-- NAME -- COMMAND" runs COMMAND under NAME (run and elect); a
// malformed line exits 64 before any lock is taken: the lock is free and
// its fencing high-water was never raised.
func TestRunDashDashEndToEnd(t *testing.T) {
	t.Parallel()
	s := serveIn(t, nil)
	c := cli{env: map[string]string{"DISTLOCK_SERVER": s.url}}
	show := []string{"sh", "-c", `echo "name=$DISTLOCK_NAME"`}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{append([]string{"run", "-v", "--ttl", "5s", "--", "job", "--"}, show...), "name=job\n"},
		{append([]string{"run", "--", "-dash", "--"}, show...), "name=-dash\n"},
		{append([]string{"elect", "--", "ejob", "--"}, show...), "name=ejob\n"},
	} {
		r := c.run(t, tc.args...)
		expect(t, r, 0)
		if r.stdout != tc.want {
			t.Errorf("%q: stdout %q, want %q", tc.args, r.stdout, tc.want)
		}
	}

	for _, tc := range []struct {
		args  []string
		locks []string // names a wrong parse could have taken
		want  string
	}{
		{[]string{"run", "-v", "--", "bad1", "--", "--", "echo", "hi"}, []string{"bad1"}, `one "--" too many`},
		{[]string{"run", "bad2", "--", "--", "echo", "hi"}, []string{"bad2"}, `one "--" too many`},
		{[]string{"run", "--", "bad3", "--ttl", "5s", "--", "echo", "hi"}, []string{"bad3"}, `COMMAND cannot begin with "-"`},
		{[]string{"run", "--", "--", "echo", "hi"}, []string{"--", "echo"}, "missing the lock NAME"},
		{[]string{"elect", "--", "bad4", "--", "--", "echo", "hi"}, []string{"bad4"}, `one "--" too many`},
		{[]string{"elect", "--", "bad5", "--"}, []string{"bad5"}, "missing the COMMAND"},
	} {
		r := c.run(t, tc.args...)
		expect(t, r, exitUsage, tc.want, "Run 'distlock help "+tc.args[0]+"' for usage.")
		if strings.Contains(r.stderr, "cannot run") {
			t.Errorf("%q tried to run a command:\n%v", tc.args, r)
		}
		for _, name := range tc.locks {
			r := c.run(t, "status", "--json", "--", name)
			var st infoJSON
			if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.Held || st.HighWater != 0 {
				t.Errorf("after %q, lock %q: %+v (%v), want free with no token minted\n%v", tc.args, name, st, err, r)
			}
		}
	}
}

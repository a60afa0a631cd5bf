//go:build unix

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/engine/etcd/etcdtest"
	"github.com/distlock/distlock/engine/postgres/pgtest"
	"github.com/distlock/distlock/internal/redistest"
)

// TestRunKindRefused (issue 23): while distlock run holds a name as one
// kind, distlock run of another kind on that name exits 64 (usage) with a
// message naming both kinds, whether it waits or not, and never runs its
// command; the holder keeps running and then exits 0. On Redis directly
// and behind distlock serve --redis, on PostgreSQL and behind distlock
// serve --postgres, on etcd and behind distlock serve --etcd.
func TestRunKindRefused(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	pg, err := pgtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pg.Stop)
	pgEnv := map[string]string{"DISTLOCK_POSTGRES": pg.URL(), "DISTLOCK_POSTGRES_SCHEMA": "kinds"}
	expect(t, cli{env: pgEnv}.run(t, "postgres", "init"), 0)
	eps := strings.Join(etcdtest.Start(t, 1).Endpoints(), ",")
	backends := map[string]func(t *testing.T) cli{
		"redis": func(t *testing.T) cli { return cli{redis: rs.URL()} },
		"serve --redis": func(t *testing.T) cli {
			return cli{env: map[string]string{"DISTLOCK_SERVER": serveIn(t, nil, "--redis", rs.URL()).url}}
		},
		"postgres": func(t *testing.T) cli { return cli{env: pgEnv} },
		"serve --postgres": func(t *testing.T) cli {
			s := serveIn(t, map[string]string{"DISTLOCK_POSTGRES_SCHEMA": "kinds"}, "--postgres", pg.URL())
			return cli{env: map[string]string{"DISTLOCK_SERVER": s.url}}
		},
		"etcd": func(t *testing.T) cli { return cli{env: map[string]string{"DISTLOCK_ETCD": eps}} },
		"serve --etcd": func(t *testing.T) cli {
			return cli{env: map[string]string{"DISTLOCK_SERVER": serveIn(t, nil, "--etcd", eps).url}}
		},
	}
	kinds := []struct {
		name  string
		flags []string
		is    string // as the refusal names it
	}{
		{"mutex", nil, "mutex"},
		{"shared", []string{"--shared"}, "rwlock"},
		{"semaphore", []string{"--limit", "2"}, "semaphore"},
	}
	for backend, newCLI := range backends {
		t.Run(backend, func(t *testing.T) {
			c := newCLI(t)
			for _, held := range kinds {
				for _, asked := range kinds {
					if held.name == asked.name {
						continue
					}
					name := strings.ReplaceAll(backend, " ", "") + "-" + held.name + "-" + asked.name
					stop := holdWith(t, c, name, held.flags)
					ran := filepath.Join(t.TempDir(), "ran")
					for _, wait := range []string{"0", "5s"} {
						args := append(append([]string{"run", "--wait", wait}, asked.flags...), name, "--",
							"sh", "-c", `echo MUTEX RAN; echo ran > "$RAN"`)
						cc := c
						cc.env = map[string]string{"RAN": ran}
						for k, v := range c.env {
							cc.env[k] = v
						}
						r := cc.run(t, args...)
						expect(t, r, exitUsage, `"`+name+`" is a `+held.is+", not a ")
						if strings.Contains(r.stdout, "MUTEX RAN") {
							t.Fatalf("%s run --wait %s of a name held as %s ran its command: %v", asked.name, wait, held.name, r)
						}
						if _, err := os.Stat(ran); err == nil {
							t.Fatalf("%s run --wait %s of a name held as %s ran its command", asked.name, wait, held.name)
						}
					}
					if r := stop(); r.code != 0 {
						t.Fatalf("the %s holder after the refusals: %v", held.name, r)
					}
				}
			}
		})
	}
}

// holdWith starts distlock run with flags on name, whose command runs until
// the returned function is called; it returns once the command runs (the
// lock is held). The function ends the command and returns the run's
// result.
func holdWith(t *testing.T, c cli, name string, flags []string) func() result {
	t.Helper()
	dir := t.TempDir()
	up, done := filepath.Join(dir, "up"), filepath.Join(dir, "done")
	cc := c
	cc.env = map[string]string{"UP": up, "DONE": done}
	for k, v := range c.env {
		cc.env[k] = v
	}
	args := append(append([]string{"run", "--wait", "20s"}, flags...), name, "--",
		"sh", "-c", `echo up > "$UP"; while [ ! -e "$DONE" ]; do sleep 0.05; done`)
	cmd := cc.command(args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var res *result
	stop := func() result {
		if res == nil {
			if err := os.WriteFile(done, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			r := wait(t, cmd, start, &out, &errb, 20*time.Second)
			res = &r
		}
		return *res
	}
	t.Cleanup(func() { stop() })
	for {
		if _, err := os.Stat(up); err == nil {
			return stop
		}
		if cmd.ProcessState != nil || time.Since(start) > 20*time.Second {
			t.Fatalf("the %v holder of %q never ran its command: %v", flags, name, stop())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

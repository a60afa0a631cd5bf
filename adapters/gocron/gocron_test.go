package gocronlock_test

// Two schedulers as two processes: this test binary runs itself twice as
// a child (envChild), each child a gocron scheduler on a Redis engine of
// its own that runs a job every 2 seconds and records each run (its tick and
// the child's pid) in a Redis list; the parent reads the list.

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/distlock/distlock"
	gocronlock "github.com/distlock/distlock/adapters/gocron"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
	"github.com/go-co-op/gocron/v2"
	goredis "github.com/redis/go-redis/v9"
)

const (
	envChild = "GOCRONLOCK_CHILD" // "locker" or "elector": run as a scheduler
	envRedis = "GOCRONLOCK_REDIS" // the child's Redis address
	runsKey  = "runs"             // the list of "TICK PID" records
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(envChild); mode != "" {
		if err := child(mode, os.Getenv(envRedis)); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child runs a scheduler with the job, distributed by mode, until its
// stdin closes (the parent is done with it, or gone).
func child(mode, addr string) error {
	rdb := goredis.NewClient(&goredis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer rdb.Close()
	eng, err := redisengine.New(rdb)
	if err != nil {
		return err
	}
	defer eng.Close()
	c := distlock.New(eng)
	defer c.Close()
	var opt gocron.SchedulerOption
	switch mode {
	case "locker":
		opt = gocron.WithDistributedLocker(gocronlock.NewLocker(c, gocronlock.WithMinHold(1500*time.Millisecond)))
	case "elector":
		el := gocronlock.NewElector(c, "reports", strconv.Itoa(os.Getpid()),
			gocronlock.WithLockOptions(distlock.WithTTL(3*time.Second)))
		defer el.Close()
		opt = gocron.WithDistributedElector(el)
	default:
		return fmt.Errorf("mode %q", mode)
	}
	s, err := gocron.NewScheduler(opt)
	if err != nil {
		return err
	}
	record := func() {
		tick := time.Now().Truncate(2 * time.Second).Unix()
		rdb.RPush(context.Background(), runsKey, fmt.Sprintf("%d %d", tick, os.Getpid()))
	}
	if _, err := s.NewJob(gocron.CronJob("*/2 * * * * *", true), gocron.NewTask(record), gocron.WithName("report")); err != nil {
		return err
	}
	s.Start()
	_, _ = io.Copy(io.Discard, os.Stdin)
	return s.Shutdown()
}

// startChildren runs two schedulers of mode on srv.
func startChildren(t *testing.T, srv *redistest.Server, mode string) map[int]*exec.Cmd {
	t.Helper()
	procs := map[int]*exec.Cmd{}
	for range 2 {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), envChild+"="+mode, envRedis+"="+srv.Addr())
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = stdin.Close()
			stopped := make(chan struct{})
			go func() { _ = cmd.Wait(); close(stopped) }()
			select {
			case <-stopped:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-stopped
			}
		})
		procs[cmd.Process.Pid] = cmd
	}
	return procs
}

// run is one recorded run of the job.
type run struct {
	tick int64
	pid  int
}

// runsUntil waits until the runs recorded satisfy done (polled every
// 100 ms: the records are written by other processes), or a minute has
// passed, and returns them.
func runsUntil(t *testing.T, rdb *goredis.Client, done func([]run) bool) []run {
	t.Helper()
	give := time.Now().Add(time.Minute)
	for {
		recs, err := rdb.LRange(context.Background(), runsKey, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		runs := make([]run, len(recs))
		for i, r := range recs {
			if _, err := fmt.Sscan(r, &runs[i].tick, &runs[i].pid); err != nil {
				t.Fatalf("record %q: %v", r, err)
			}
		}
		if done(runs) {
			return runs
		}
		if time.Now().After(give) {
			t.Fatalf("the runs after a minute: %v", runs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// onceEach fails the test when a tick was run twice.
func onceEach(t *testing.T, runs []run) {
	t.Helper()
	seen := map[int64]int{}
	for _, r := range runs {
		if prev, ok := seen[r.tick]; ok {
			t.Fatalf("tick %d run twice, by %d and %d: %v", r.tick, prev, r.pid, runs)
		}
		seen[r.tick] = r.pid
	}
}

// TestLockerOncePerTick: two schedulers with the Locker run the job once
// per tick between them. (The minimum hold time, 1.5 s of the 2 s
// interval, covers a scheduler whose tick fires up to 1.5 s late on a
// loaded machine.) (With a Lock that always succeeds, both ran
// every tick: seen to fail.)
func TestLockerOncePerTick(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	startChildren(t, srv, "locker")
	runs := runsUntil(t, srv.Client(), func(r []run) bool { return len(r) >= 3 })
	onceEach(t, runs)
}

// TestElectorOneLeader: of two schedulers with an Elector each, only the
// leader runs the job, once per tick; when the leader's process is
// killed, the other is elected and runs it (the leaders' ttl is 3 s, so
// that a leader starved on a loaded machine keeps its term). (With IsLeader always nil,
// both ran every tick: seen to fail.)
func TestElectorOneLeader(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	procs := startChildren(t, srv, "elector")
	rdb := srv.Client()
	runs := runsUntil(t, rdb, func(r []run) bool { return len(r) >= 2 })
	onceEach(t, runs)
	leader := runs[0].pid
	for _, r := range runs {
		if r.pid != leader {
			t.Fatalf("runs by %d and %d while both lived: %v", leader, r.pid, runs)
		}
	}
	if err := procs[leader].Process.Kill(); err != nil {
		t.Fatal(err)
	}
	runs = runsUntil(t, rdb, func(r []run) bool { return r[len(r)-1].pid != leader })
	onceEach(t, runs)
	t.Logf("runs: %v", runs)
}

package etcd_test

// A holder process SIGSTOPped past its ttl (the test binary run again as
// a child): its mutex, permit, write lock and leadership go to waiters in
// this process, and once continued its first checks say lost, with
// deadlines before the waiters were served and tokens below theirs.

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/enginetest"
	etcdengine "github.com/distlock/distlock/engine/etcd"
	"github.com/distlock/distlock/engine/etcd/etcdtest"
	"github.com/distlock/distlock/internal/srvproc"
)

// childKinds are the locks the child holds: each name's take and a
// waiter's.
var childKinds = []struct {
	kind string
	take func(ctx context.Context, c *distlock.Client, ttl time.Duration) (*distlock.Lease, error)
}{
	{"mutex", func(ctx context.Context, c *distlock.Client, ttl time.Duration) (*distlock.Lease, error) {
		return c.Acquire(ctx, "child-mutex", distlock.WithTTL(ttl))
	}},
	{"permit", func(ctx context.Context, c *distlock.Client, ttl time.Duration) (*distlock.Lease, error) {
		return c.Semaphore("child-sem", 1).Acquire(ctx, distlock.WithTTL(ttl))
	}},
	{"writer", func(ctx context.Context, c *distlock.Client, ttl time.Duration) (*distlock.Lease, error) {
		return c.RWMutex("child-rw").Lock(ctx, distlock.WithTTL(ttl))
	}},
	{"leader", func(ctx context.Context, c *distlock.Client, ttl time.Duration) (*distlock.Lease, error) {
		l, err := c.Campaign(ctx, "child-elect", "v", distlock.WithTTL(ttl))
		if err != nil {
			return nil, err
		}
		return l.Lease(), nil
	}},
}

// TestStrangerKindsStoppedChild: see the file's comment; three members,
// the child connected to every one.
func TestStrangerKindsStoppedChild(t *testing.T) {
	if args := flag.Args(); len(args) == 4 && args[0] == "stranger-child" {
		strangerChild(t, args[1], args[2], args[3])
		return
	}
	cl := etcdtest.Start(t, 3)
	const ttl = 2 * time.Second
	dir := t.TempDir()
	logPath, check := filepath.Join(dir, "child.log"), filepath.Join(dir, "check")
	child, err := srvproc.Start(os.Args[0], []string{"-test.run=^TestStrangerKindsStoppedChild$", "-test.count=1", "--",
		"stranger-child", strings.Join(cl.Endpoints(), ","), ttl.String(), check}, logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Kill() })
	held := childLines(t, logPath, "HELD", len(childKinds))
	c := memberClient(t, cl, 1, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	got := make(chan served, len(childKinds))
	for _, k := range childKinds {
		goWait(ctx, got, k.kind, func(ctx context.Context) (*distlock.Lease, error) { return k.take(ctx, c, 10*time.Second) })
	}
	if err := child.Pause(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	waiters := map[string]served{}
	for range childKinds {
		r := <-got
		if r.err != nil {
			t.Fatalf("%s: %v", r.what, r.err)
		}
		waiters[r.what] = r
		defer r.lease.Release(context.Background())
	}
	if err := child.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(check, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	judgeChild(t, held, childLines(t, logPath, "REPORT", len(childKinds)), waiters, stopped)
}

// judgeChild checks the child's reports against the waiters' grants.
func judgeChild(t *testing.T, held, reports map[string][]string, waiters map[string]served, stopped time.Time) {
	t.Helper()
	for kind, r := range waiters {
		h, rep := held[kind], reports[kind]
		var token uint64
		var deadline int64
		fmt.Sscan(h[0], &token)
		fmt.Sscan(rep[1], &deadline)
		dl := time.Unix(0, deadline)
		if rep[0] != "lost" {
			t.Errorf("%s: the continued holder's first check: %v", kind, rep)
		}
		if !dl.Before(r.at) {
			t.Errorf("%s: the stopped holder's deadline %v is not before the waiter held at %v", kind, dl.Format(time.StampMilli), r.at.Format(time.StampMilli))
		}
		if r.token <= token {
			t.Errorf("%s: the waiter's token %d not above the stopped holder's %d", kind, r.token, token)
		}
		t.Logf("%s: deadline %v after the stop, waiter served %v after it; tokens %d, %d; report %v",
			kind, dl.Sub(stopped).Round(time.Millisecond), r.at.Sub(stopped).Round(time.Millisecond), token, r.token, rep)
	}
}

// childLines waits for n lines starting with prefix in the child's log
// and returns their fields after the prefix and the kind, by kind.
func childLines(t *testing.T, logPath, prefix string, n int) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	enginetest.WaitFor(t, time.Minute, fmt.Sprintf("%d %s lines from the child", n, prefix), func() bool {
		f, err := os.Open(logPath)
		if err != nil {
			return false
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if fs := strings.Fields(sc.Text()); len(fs) >= 2 && fs[0] == prefix {
				out[fs[1]] = fs[2:]
			}
		}
		return len(out) >= n
	})
	return out
}

// strangerChild is the child: it takes every kind on endpoints with ttl,
// says HELD KIND TOKEN, waits for the file check to appear, and then says
// REPORT KIND lost|held DEADLINE for each, from its first look at each
// lease after it was continued.
func strangerChild(t *testing.T, endpoints, ttlArg, check string) {
	ttl, err := time.ParseDuration(ttlArg)
	if err != nil {
		t.Fatal(err)
	}
	cl := &etcdtest.Cluster{}
	c := distlock.New(etcdengine.New(cl.ClientOf(t, strings.Split(endpoints, ",")...)))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	childHold(ctx, t, c, ttl, check)
}

// childHold is the child's work, on c.
func childHold(ctx context.Context, t *testing.T, c *distlock.Client, ttl time.Duration, check string) {
	leases := map[string]*distlock.Lease{}
	for _, k := range childKinds {
		l, err := k.take(ctx, c, ttl)
		if err != nil {
			t.Fatal(err)
		}
		leases[k.kind] = l
		fmt.Printf("HELD %s %d\n", k.kind, l.Token())
	}
	for {
		if _, err := os.Stat(check); err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("no check file")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for kind, l := range leases {
		state := "held"
		if l.Err() != nil {
			state = "lost"
		}
		fmt.Printf("REPORT %s %s %d %v\n", kind, state, l.Deadline().UnixNano(), l.Err())
	}
}

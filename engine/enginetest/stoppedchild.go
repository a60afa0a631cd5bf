package enginetest

// A holder process SIGSTOPped past its ttl (a test binary run again as a
// child, HoldEveryKind): its mutex, permit, write lock and leadership go
// to waiters in the test's process (StoppedHolder), and once continued its
// first checks say lost, with deadlines before the waiters were served and
// tokens below theirs. Written by a stranger for etcd and ZooKeeper.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/distlock/distlock"
)

// childKinds are the locks the child holds: each name's take, the
// child's and a waiter's.
var childKinds = []struct {
	kind string
	take func(ctx context.Context, c *distlock.Client, p string, ttl time.Duration) (*distlock.Lease, error)
}{
	{"mutex", func(ctx context.Context, c *distlock.Client, p string, ttl time.Duration) (*distlock.Lease, error) {
		return c.Acquire(ctx, p+"child-mutex", distlock.WithTTL(ttl))
	}},
	{"permit", func(ctx context.Context, c *distlock.Client, p string, ttl time.Duration) (*distlock.Lease, error) {
		return c.Semaphore(p+"child-sem", 1).Acquire(ctx, distlock.WithTTL(ttl))
	}},
	{"writer", func(ctx context.Context, c *distlock.Client, p string, ttl time.Duration) (*distlock.Lease, error) {
		return c.RWMutex(p+"child-rw").Lock(ctx, distlock.WithTTL(ttl))
	}},
	{"leader", func(ctx context.Context, c *distlock.Client, p string, ttl time.Duration) (*distlock.Lease, error) {
		l, err := c.Campaign(ctx, p+"child-elect", "v", distlock.WithTTL(ttl))
		if err != nil {
			return nil, err
		}
		return l.Lease(), nil
	}},
}

// Child is the holder process StoppedHolder stops and continues
// (internal/srvproc's Proc).
type Child interface {
	Pause(atMost time.Duration) error
	Signal(sig syscall.Signal) error
}

// StoppedHolder is the test's side: child runs HoldEveryKind with prefix
// and check, its output in logPath. Once it holds every kind, waiters on c
// ask for them, the child is stopped, and every waiter must be served; the
// child, continued, must report each lease lost, with a deadline before
// its waiter was served and a token below the waiter's.
func StoppedHolder(t *testing.T, child Child, logPath, check string, c *distlock.Client, prefix string) {
	t.Helper()
	held := childLines(t, logPath, "HELD", len(childKinds))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	got := make(chan kindsServed, len(childKinds))
	for _, k := range childKinds {
		kindsGoWait(ctx, got, k.kind, func(ctx context.Context) (*distlock.Lease, error) { return k.take(ctx, c, prefix, 10*time.Second) })
	}
	if err := child.Pause(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	waiters := map[string]kindsServed{}
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
func judgeChild(t *testing.T, held, reports map[string][]string, waiters map[string]kindsServed, stopped time.Time) {
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
	WaitFor(t, time.Minute, fmt.Sprintf("%d %s lines from the child", n, prefix), func() bool {
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

// HoldEveryKind is the child's side, on c: it takes every kind (names from
// prefix) with ttl, says HELD KIND TOKEN on its standard output, waits for
// the file check to appear, and then says REPORT KIND lost|held DEADLINE
// for each, from its first look at each lease after it was continued.
func HoldEveryKind(ctx context.Context, t *testing.T, c *distlock.Client, prefix string, ttl time.Duration, check string) {
	leases := map[string]*distlock.Lease{}
	for _, k := range childKinds {
		l, err := k.take(ctx, c, prefix, ttl)
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
		time.Sleep(5 * time.Millisecond) // polling for the file, within ctx
	}
	for kind, l := range leases {
		state := "held"
		if l.Err() != nil {
			state = "lost"
		}
		fmt.Printf("REPORT %s %s %d %v\n", kind, state, l.Deadline().UnixNano(), l.Err())
	}
}

package zookeeper_test

// A holder process SIGSTOPped past its ttl (the test binary run again as
// a child): its mutex, permit, write lock and leadership go to waiters in
// this process, and once continued its first checks say lost, with
// deadlines before the waiters were served and tokens below theirs
// (enginetest.StoppedHolder, enginetest.HoldEveryKind).

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/enginetest"
	zkengine "github.com/distlock/distlock/engine/zookeeper"
	"github.com/distlock/distlock/engine/zookeeper/zktest"
	"github.com/distlock/distlock/internal/srvproc"
)

// TestStrangerKindsStoppedChild: see the file's comment; three members,
// the child given every one; its session of 2 minutes (the locks go by
// their ttl, 1 s) and of 2 s (the ttl as long: the locks may go with the
// session's expiry).
func TestStrangerKindsStoppedChild(t *testing.T) {
	if args := flag.Args(); len(args) == 6 && args[0] == "stranger-child" {
		strangerChild(t, args[1], args[2], args[3], args[4], args[5])
		return
	}
	ens := shared(t, 3)
	waitServing(t, ens, 2*time.Minute)
	for _, v := range []struct{ ttl, session time.Duration }{{time.Second, testSession}, {shortSession, shortSession}} {
		t.Run("session"+v.session.String(), func(t *testing.T) {
			stoppedChild(t, ens, "child"+v.session.String()+"-", v.ttl, v.session)
		})
	}
}

func stoppedChild(t *testing.T, ens *zktest.Ensemble, prefix string, ttl, session time.Duration) {
	dir := t.TempDir()
	logPath, check := filepath.Join(dir, "child.log"), filepath.Join(dir, "check")
	child, err := srvproc.Start(os.Args[0], []string{"-test.run=^TestStrangerKindsStoppedChild$", "-test.count=1", "--",
		"stranger-child", strings.Join(ens.Servers(), ","), prefix, ttl.String(), session.String(), check}, logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Kill() })
	c := distlock.New(dial(t, ens.Servers()))
	t.Cleanup(func() { _ = c.Close() })
	enginetest.StoppedHolder(t, child, logPath, check, c, prefix)
}

// strangerChild is the child: enginetest.HoldEveryKind on servers, on a
// session of session.
func strangerChild(t *testing.T, servers, prefix, ttlArg, sessionArg, check string) {
	ttl, err := time.ParseDuration(ttlArg)
	if err != nil {
		t.Fatal(err)
	}
	session, err := time.ParseDuration(sessionArg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e, err := zkengine.Dial(ctx, strings.Split(servers, ","), session)
	if err != nil {
		t.Fatal(err)
	}
	c := distlock.New(e)
	defer c.Close()
	defer e.Close()
	enginetest.HoldEveryKind(ctx, t, c, prefix, ttl, check)
}

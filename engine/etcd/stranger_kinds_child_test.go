package etcd_test

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
	etcdengine "github.com/distlock/distlock/engine/etcd"
	"github.com/distlock/distlock/engine/etcd/etcdtest"
	"github.com/distlock/distlock/internal/srvproc"
)

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
	enginetest.StoppedHolder(t, child, logPath, check, memberClient(t, cl, 1, 2), "")
}

// strangerChild is the child: enginetest.HoldEveryKind on endpoints.
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
	enginetest.HoldEveryKind(ctx, t, c, "", ttl, check)
}
